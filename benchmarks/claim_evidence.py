"""Per-claim evidence (generate.claim_evidence): does each claim's few excerpts hold its evidence,
and how much of the sources does the verifier no longer have to read?

    .venv/bin/python benchmarks/claim_evidence.py

For every Grampian gold question whose expected answer states a figure, the claim is the
gold answer and the sources are its gold page and four other pages of the same report
(the nearest ones with text: finance tables sit together, so they look alike). A claim's
evidence is found when one of its excerpts writes the gold answer's first figure as the
gold page does (the groundedness screen's own matching, on the excerpt alone). Reported
with the embedder re-ranking (the shipped pipeline) and with BM25 alone, beside the tokens
of the excerpts against the tokens of the whole sources (the embedding tokenizer). No LLM
is involved. Writes benchmarks/results/claim_evidence.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, get_settings
from ragloupe.generate.claim_evidence import evidence_for_claims
from ragloupe.generate.groundedness import extract_checkables, screen

sys.path.insert(0, str(Path(__file__).resolve().parent))
import screen_gold  # noqa: E402  (its corpus, pages and neighbouring pages)

RESULT = PROJECT_ROOT / "benchmarks" / "results" / "claim_evidence.json"
OTHER_PAGES = 4


def cases() -> list[tuple[str, list[str]]]:
    found = []
    for eval_path in sorted((screen_gold.CORPUS / "eval").glob("*.eval.json")):
        goldset = json.loads(eval_path.read_text(encoding="utf-8"))
        pages = screen_gold.load_pages(goldset["_meta"]["doc_id"])
        for query in goldset["queries"]:
            gold = [p for p in query["expected_pages"] if p in pages][:1]
            answer = query["expected_answer"]
            if not gold or not any(c.kind == "quantity" for c in extract_checkables(answer)):
                continue
            if not first_figure_found(answer, [pages[gold[0]]]):
                continue  # the gold page must write the figure, or there is no evidence to find
            others = screen_gold.distractors(pages, gold, OTHER_PAGES)
            found.append((answer, [pages[p] for p in gold + others]))
    return found


def first_figure_found(answer: str, passages: list[str]) -> bool:
    """The screen finds the answer's first figure in one of ``passages`` (as written there)."""
    token = next(t for t in screen(answer, [], passages).tokens if t.kind == "quantity")
    return bool(token.found_in)


def holds_evidence(answer: str, excerpts) -> bool:
    return bool(excerpts) and first_figure_found(answer, [e.text for e in excerpts])


def run(all_cases, embed, count) -> dict:
    found, shown, whole = 0, [], []
    for answer, sources in all_cases:
        excerpts = evidence_for_claims([answer], sources, embed)[0]
        found += holds_evidence(answer, excerpts)
        shown.append(sum(count(e.text) for e in excerpts))
        whole.append(sum(count(s) for s in sources))
    return {"claims": len(all_cases), "evidence_found": found, "share": round(found / len(all_cases), 4),
            "median_excerpt_tokens": statistics.median(shown), "median_source_tokens": statistics.median(whole),
            "median_share_of_sources_read": round(statistics.median(s / w for s, w in zip(shown, whole)), 4)}


def main() -> None:
    from ragloupe.index.embedder import get_embedder

    embedder = get_embedder(get_settings())
    tokenizer = embedder.tokenizer

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    all_cases = cases()
    vectors: dict[str, np.ndarray] = {}

    def embed(texts: list[str]) -> np.ndarray:
        """embedder.encode, each distinct sentence once (the cases share their pages)."""
        new = [t for t in dict.fromkeys(texts) if t not in vectors]
        if new:
            vectors.update(zip(new, embedder.encode(new)))
        return np.stack([vectors[t] for t in texts])

    started = time.perf_counter()
    report = {"command": ".venv/bin/python benchmarks/claim_evidence.py", "other_pages": OTHER_PAGES,
              "with_embedder": run(all_cases, embed, count),
              "bm25_only": run(all_cases, None, count), "seconds": None}
    report["seconds"] = round(time.perf_counter() - started, 1)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
