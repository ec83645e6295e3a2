"""Table extraction accuracy: the share of known cells recovered in the right row and column.

    .venv/bin/python benchmarks/table_cells.py

Writes benchmarks/results/table_cells.json.

PDFs with known tables are written by tests/pdf_factory.py (the same
drawing code the tests use) and read by the real ingestion (extraction
child, pypdf, pdfplumber on pages that look tabular). Table kinds, each
ruled (every cell boxed) and aligned (columns made only by the words'
positions, as in most financial statements):

- ``merged_header``: three stacked header rows, "Group" and "Board" each
  spanning two year columns, a £'000 unit row;
- ``brackets``: negative figures in brackets "(1,234)" and nil as "-";
- ``thousands``: one header row naming £'000 columns, 12 rows;
- ``multi_page``: 30 rows over two pages, the header on the first only.

and a third layout, right-aligned: aligned, with every cell after the first
ending at its column's right edge, as printed figures do.

A cell counts as recovered when the extracted table has the expected text
at the same (row, column), the header being one row (stacked header rows
joined per column). Multi-page tables are scored as the rows of both pages
in order, the continued part carrying the first page's header.

The shipped Grampian PDFs are scanned too, for false tables: their tables
were flattened into running text when they were re-rendered (see
data/benchmarks/grampian/SOURCE.md), so every table found there is a false
one.
"""

from __future__ import annotations

import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "tests"))
sys.path.insert(0, str(PROJECT_ROOT / "src"))

import pdf_factory as pf  # noqa: E402

from ragloupe.config import Settings  # noqa: E402
from ragloupe.ingest import load_source  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "table_cells.json"
GRAMPIAN = PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "pdf"
SITES = ("Aberdeen Royal Infirmary", "Dr Gray's Hospital", "Woodend Hospital", "Royal Cornhill",
         "Community hospitals", "Primary care", "Mental health", "Dental services",
         "Ambulance transfers", "Estates and facilities", "Digital services", "Pharmacy",
         "Public health", "Maternity", "Children's services", "Corporate services")


def figure(rng: random.Random, negative_share: float = 0.0) -> str:
    value = f"{rng.randint(1, 999_999):,}"
    return f"({value})" if rng.random() < negative_share else value


def cases(seed: int = 7) -> list[dict]:
    """Each case: the pages to draw, and the header and rows the reader should recover."""
    rng = random.Random(seed)
    out = []
    for kind in ("ruled", "aligned", "right-aligned"):
        ruled, right = kind == "ruled", kind == "right-aligned"
        rows = tuple((SITES[i], *(figure(rng) for _ in range(4))) for i in range(6))
        out.append(dict(name=f"merged_header/{kind}", header=pf.STATEMENT_HEADER_JOINED, rows=rows,
                        pages=[pf.statement_page(ruled, right_aligned=right, rows=rows)]))
        rows = tuple((SITES[i], *(figure(rng, 0.4) for _ in range(3)), "-") for i in range(8))
        header = ("Statutory target", "Limit", "Outturn", "Saving/(excess)", "Prior year")
        out.append(dict(name=f"brackets/{kind}", header=header, rows=rows, pages=[
            pf.statement_page(ruled, right_aligned=right, rows=rows, header=(header,))]))
        rows = tuple((SITES[i], figure(rng), figure(rng), figure(rng, 0.2), figure(rng))
                     for i in range(12))
        header = ("Expenditure by site", "2023 £'000", "2022 £'000", "Change £'000", "Budget £'000")
        out.append(dict(name=f"thousands/{kind}", header=header, rows=rows, pages=[
            pf.statement_page(ruled, right_aligned=right, rows=rows, header=(header,), above=("Table 2: Expenditure",),
                              below=())]))
        rows = tuple((f"{SITES[i % len(SITES)]} {i // len(SITES) + 1}", *(figure(rng, 0.1) for _ in range(4)))
                     for i in range(30))
        header = ("Ward", "Beds", "Admissions", "Cost £'000", "Variance £'000")
        out.append(dict(name=f"multi_page/{kind}", header=header, rows=rows, pages=[
            pf.statement_page(ruled, right_aligned=right, rows=rows[:18], header=(header,), above=("Table 7: Wards",),
                              below=()),
            pf.statement_page(ruled, right_aligned=right, rows=rows[18:], header=(), above=("Table 7 (continued)",),
                              below=())]))
    return out


def score(expected_header, expected_rows, tables) -> dict:
    """Cells of the expected grid found at the same (row, column) of the extracted one."""
    grid = [tuple(expected_header)] + [tuple(r) for r in expected_rows]
    found = [tuple(tables[0].header)] + [tuple(r) for t in tables for r in t.rows] if tables else []
    total = sum(len(row) for row in grid)
    right = sum(1 for i, row in enumerate(grid) for j, cell in enumerate(row)
                if i < len(found) and j < len(found[i]) and found[i][j] == cell)
    return {"cells": total, "recovered": right, "share": round(right / total, 4)}


def main() -> None:
    settings = Settings.from_env()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases():
            path = pf.write_table_pdf(Path(tmp) / (case["name"].replace("/", "-") + ".pdf"), case["pages"])
            started = time.perf_counter()
            doc = load_source(path, settings)
            seconds = time.perf_counter() - started
            tables = [t for page in doc.pages for t in page.tables]
            results.append({"case": case["name"], "tables_found": len(tables),
                            "pages": len(doc.pages), "seconds": round(seconds, 3),
                            **score(case["header"], case["rows"], tables)})
            print(f"{case['name']:24s} {results[-1]['share']:.3f} ({results[-1]['recovered']}"
                  f"/{results[-1]['cells']} cells, {len(tables)} table(s))")

    # The cost of looking for tables: extraction CPU seconds in this process (no child, so
    # the time is measured as CPU, which the machine's other load does not inflate).
    from ragloupe.ingest.pdf import ExtractOptions, extract_raw
    from ragloupe.ingest.tables import looks_tabular

    cost = {"tables_off_cpu_s": 0.0, "tables_on_cpu_s": 0.0, "pages_looked_at": 0}
    for pdf in sorted(GRAMPIAN.glob("*.pdf")):
        for tables in (False, True):
            started = time.process_time()
            raw = extract_raw(pdf, ExtractOptions(tables=tables))
            cost[f"tables_{'on' if tables else 'off'}_cpu_s"] += time.process_time() - started
        cost["pages_looked_at"] += sum(looks_tabular(p.text) for p in raw.pages)
    cost = {k: round(v, 2) for k, v in cost.items()}
    print(f"extraction CPU seconds, 433 Grampian pages: {cost}")

    grampian = []
    for pdf in sorted(GRAMPIAN.glob("*.pdf")):
        started = time.perf_counter()
        doc = load_source(pdf, settings)
        grampian.append({"doc_id": doc.doc_id, "pages": len(doc.pages),
                         "tables_found": sum(len(p.tables) for p in doc.pages),
                         "seconds": round(time.perf_counter() - started, 2)})
        print(f"{doc.doc_id}: {grampian[-1]['tables_found']} table(s) on {len(doc.pages)} pages")

    cells = sum(r["cells"] for r in results)
    recovered = sum(r["recovered"] for r in results)
    summary = {
        "cells": cells, "recovered": recovered, "share": round(recovered / cells, 4),
        "by_layout": {layout: round(sum(r["recovered"] for r in results if r["case"].endswith(layout))
                                    / sum(r["cells"] for r in results if r["case"].endswith(layout)), 4)
                      for layout in ("/ruled", "/aligned", "right-aligned")},
        "grampian_false_tables": sum(g["tables_found"] for g in grampian),
        "grampian_extraction_cost": cost,
    }
    print(json.dumps(summary))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "command": "python benchmarks/table_cells.py", "summary": summary, "cases": results,
        "grampian": grampian, "machine": {"python": platform.python_version(),
                                          "cpus": __import__("os").cpu_count()},
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
