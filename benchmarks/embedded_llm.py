"""What the embedded Gemma 3 270M costs on this machine: conversion, load, generation.

    .venv/bin/python benchmarks/embedded_llm.py [--convert] [--tokens 32]

- import_s: importing torch and transformers (paid by any model, not ours);
- load_s: loading the cached, converted weights (safetensors + config +
  tokenizer) from settings.models_dir, converting first if they are missing;
- convert_s (with --convert): the one-time GGUF -> safetensors conversion,
  into a fresh temporary directory (about 1 GB of disk while it runs);
- answer: one answer() over Grampian 2020/21 page 28 with --tokens new
  tokens at most: seconds, tokens generated, tokens per second, and the text.

Each figure is one run: the machine's load average is recorded beside it,
because on a shared machine the figures move with it.
Writes benchmarks/results/embedded_llm.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.generate import embedded  # noqa: E402
from ragloupe.generate.answer import answer  # noqa: E402
from ragloupe.generate.groundedness import screen_answer  # noqa: E402
from ragloupe.models import Chunk, Hit, Ranking  # noqa: E402

RESULT = PROJECT_ROOT / "benchmarks" / "results" / "embedded_llm.json"
PAGES = PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "pages" / "Grampian-2020-2021.jsonl"
QUESTION = "What was the Core Revenue Resource Limit for 2020/21?"


def page_text(page: int) -> str:
    with open(PAGES, encoding="utf-8") as lines:
        return next(r["text"] for r in map(json.loads, lines) if r["page"] == page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--convert", action="store_true", help="also time a fresh conversion")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    settings = Settings.from_env(llm_backend="embedded", llm_max_tokens=args.tokens, llm_timeout_s=600)
    report: dict = {"command": ".venv/bin/python " + " ".join(["benchmarks/embedded_llm.py"] + sys.argv[1:]),
                    "cpu_count": os.cpu_count(), "load_average_before": os.getloadavg()}

    started = time.perf_counter()
    import torch  # noqa: F401  (imported here so load_s below is the weights alone)
    import transformers  # noqa: F401
    report["import_s"] = round(time.perf_counter() - started, 2)

    if args.convert:
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            embedded.load(settings.replace(models_dir=tmp))
            report["convert_s"] = round(time.perf_counter() - started, 2)
        embedded._loaded.clear()  # measure the cached load below, not the conversion's model

    was_converted = embedded._is_converted(embedded.converted_dir(settings))
    started = time.perf_counter()
    model, tokenizer = embedded.load(settings)
    report["load_s"] = round(time.perf_counter() - started, 2)
    report["load_included_conversion"] = not was_converted

    chunk = Chunk("bench-28", "Grampian-2020-2021", 28, 0, page_text(28)[:1500], 0, "clean")
    ranking = Ranking(QUESTION, "hybrid", (Hit(chunk, 1, 1.0),))
    count = lambda text: len(tokenizer(text)["input_ids"])  # noqa: E731 - the LLM's own tokenizer
    started = time.perf_counter()
    result = answer(QUESTION, ranking, settings, count_tokens=count)
    seconds = time.perf_counter() - started
    generated = len(tokenizer(result.text, add_special_tokens=False)["input_ids"])
    report["answer"] = {
        "seconds": round(seconds, 2), "prompt_context_tokens": result.context_tokens,
        "new_tokens": generated, "tokens_per_s": round(generated / seconds, 2) if seconds else None,
        "text": result.text, "cited_units": list(result.cited_units),
        "screen": screen_answer(result).verdict,
    }
    report["load_average_after"] = os.getloadavg()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
