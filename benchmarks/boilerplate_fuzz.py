"""How close the extracted, header-stripped page text of the shipped Grampian PDFs is to their source text.

    .venv/bin/python benchmarks/boilerplate_fuzz.py

The shipped PDFs are re-rendered from the reports' page text
(data/benchmarks/grampian/SOURCE.md), with a running header and a "Page N"
footer added. Each PDF is ingested as `ragloupe index` would (extraction,
quality, boilerplate stripping, default settings) and every page's text is
compared with its source text in pages/<doc_id>.jsonl by rapidfuzz's ratio
(0-100) over whitespace-normalised words. Reported per report: the mean,
the lowest page, and the share of pages at 99 or more.
Writes benchmarks/results/boilerplate_fuzz.json.
"""

from __future__ import annotations

import json
import statistics
import time

from rapidfuzz import fuzz

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

from ragloupe.ingest.sources import load_source  # noqa: E402

GRAMPIAN = PROJECT_ROOT / "data" / "benchmarks" / "grampian"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "boilerplate_fuzz.json"


def words(text: str) -> str:
    return " ".join(text.split())


def main() -> None:
    settings = Settings.from_env()
    started = time.perf_counter()
    reports = {}
    for pdf in sorted((GRAMPIAN / "pdf").glob("*.pdf")):
        with open(GRAMPIAN / "pages" / f"{pdf.stem}.jsonl", encoding="utf-8") as lines:
            source = {row["page"]: row["text"] for row in map(json.loads, lines)}
        doc = load_source(pdf, settings)
        ratios = {p.page: fuzz.ratio(words(p.text), words(source.get(p.page, ""))) for p in doc.pages}
        worst = min(ratios, key=ratios.get)
        reports[pdf.stem] = {
            "pages": len(ratios), "source_pages": len(source),
            "mean_ratio": round(statistics.fmean(ratios.values()), 2),
            "lowest": {"page": worst, "ratio": round(ratios[worst], 2)},
            "share_at_least_99": round(sum(r >= 99 for r in ratios.values()) / len(ratios), 4),
            "stripped_patterns": sorted(doc.boilerplate),
        }
    report = {"command": ".venv/bin/python benchmarks/boilerplate_fuzz.py", "reports": reports,
              "seconds": round(time.perf_counter() - started, 1)}
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
