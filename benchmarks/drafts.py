"""How fast the embedded Gemma drafts adaptation questions, and how many of its drafts are usable.

    .venv/bin/python benchmarks/drafts.py [--pages 64] [--out PATH]

On the index RAGLOUPE_INDEX_DIR points at (e.g. the benchmark corpus of benchmarks/adapt.py):
the longest text chunk of every ``--pages``-th page (an even spread over the corpus, the
passages adapt/drafts.py drafts for), drafted eight at a time as `ragloupe adapt` does. The
model is loaded and warmed on one passage before the clock starts. Written: seconds a page,
pages with a usable question, and the questions themselves, to benchmarks/results/drafts.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.adapt import drafts  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/drafts.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=64, help="how many pages, spread evenly over the corpus")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    settings = get_settings()
    units = drafts.one_per_unit(list(Workspace.open(settings).chunks()))
    step = max(1, len(units) // args.pages)
    chosen = units[::step][:args.pages]
    list(drafts.draft(settings, chosen[:1]))  # load and warm the model
    started = time.perf_counter()
    made = list(drafts.draft(settings, chosen))
    seconds = time.perf_counter() - started
    result = {
        "command": f"benchmarks/drafts.py --pages {args.pages}",
        "pages_in_corpus": len(units), "pages_drafted": len(chosen), "batch": drafts.BATCH,
        "seconds": round(seconds, 1), "seconds_a_page": round(seconds / len(chosen), 2),
        "usable_questions": len(made), "usable_share": round(len(made) / len(chosen), 3),
        "questions": [{"unit": c.unit, "question": q} for c, q in made],
        "cpu": {"cores": os.cpu_count(), "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
    }
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"{result['seconds_a_page']} s a page, {len(made)} of {len(chosen)} usable -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
