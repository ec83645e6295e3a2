"""Table structure on real PDFs: the ICDAR 2013 table competition's metric, ragloupe against
pdfplumber and camelot in the same run.

    .venv/bin/python benchmarks/table_structure.py [--only ragloupe,camelot] [--docs eu-001,eu-002]

Writes benchmarks/results/table_structure.json.

The corpus is the EU half of the ICDAR 2013 table competition
(data/benchmarks/icdar2013-eu/, see its SOURCE.md): 27 PDFs, each table's cells
in the ground truth. The metric (src/ragloupe/evaluate/table_structure.py) is
the competition's: adjacency relations of each cell to its nearest non-blank
neighbour right and below, compared by content, tables paired one to one per
page first, precision / recall / F1 pooled over every relation of every
document, and per document. Where a document has two ground truths (eu-009a,
eu-009b: two equally valid readings) each extractor is scored against the one
it matches better.

- ragloupe: the real ingestion (``load_source``: extraction child, pypdf,
  table detection) with tables on; a table is its header rows as printed, then
  its body rows.
- pdfplumber: ``page.extract_tables()`` on every page, defaults.
- camelot: ``camelot.read_pdf(path, pages="all", flavor="auto")``.

Time per page is each extractor's wall time over the document divided by its
pages (ragloupe's includes reading every page's text, which the libraries'
does not).

"Tables found" is the share of ground-truth tables paired with an extracted
one; "tables not in the ground truth" the share of extracted tables paired with
none (a table made up from prose, or one table cut in two).

The development split: settings were chosen looking at the documents listed in
DEVELOPMENT; the JSON reports the held-out rest separately.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))

from ragloupe.config import Settings  # noqa: E402
from ragloupe.evaluate.table_structure import (GridTable, Pooled, Score, grid_from_rows,  # noqa: E402
                                               read_ground_truth, score_document)

CORPUS = PROJECT_ROOT / "data" / "benchmarks" / "icdar2013-eu"
RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "table_structure.json"
EXTRACTORS = ("ragloupe", "pdfplumber", "camelot")
# Documents looked at while the extractor was developed; the others were held out.
DEVELOPMENT = tuple(f"eu-{n:03d}" for n in range(1, 28, 2))  # the odd-numbered ones


def documents(only: set[str] | None = None) -> list[tuple[str, Path, list[list[GridTable]]]]:
    """(doc_id, pdf, ground truths): one ground truth, or two readings for eu-009."""
    out = []
    for pdf in sorted((CORPUS / "pdf").glob("*.pdf")):
        doc_id = pdf.stem.rstrip("ab")
        if only and doc_id not in only:
            continue
        truths = sorted((CORPUS / "gt").glob(f"{doc_id}*-str.xml"))
        out.append((doc_id, pdf, [read_ground_truth(t) for t in truths]))
    return out


def ragloupe_tables(pdf: Path) -> tuple[list[GridTable], int]:
    from ragloupe.ingest import load_source

    settings = Settings.from_env(table_strategy="whole", pdf_timeout_s=600)
    doc = load_source(pdf, settings)
    if doc.error:
        return [], 1
    return [grid_from_rows(printed_rows(t), page.page) for page in doc.pages for t in page.tables], \
        len(doc.pages)


def printed_rows(table) -> list:
    """A ragloupe Table as printed: its stacked header rows, then its body (a table continued
    from the previous page prints no header: the one it carries is the previous page's)."""
    header_rows = list(table.header_rows)
    if not header_rows and table.header and not table.continued:
        header_rows = [table.header]
    return header_rows + list(table.rows)


def pdfplumber_tables(pdf: Path) -> tuple[list[GridTable], int]:
    import pdfplumber

    tables = []
    with pdfplumber.open(str(pdf)) as document:
        for number, page in enumerate(document.pages, start=1):
            for rows in page.extract_tables():
                tables.append(grid_from_rows([[c or "" for c in row] for row in rows], number))
        return tables, len(document.pages)


def camelot_tables(pdf: Path) -> tuple[list[GridTable], int]:
    import camelot
    import pypdfium2

    found = camelot.read_pdf(str(pdf), pages="all", flavor="auto")
    tables = [grid_from_rows(t.df.astype(str).values.tolist(), int(t.page)) for t in found]
    document = pypdfium2.PdfDocument(str(pdf))
    try:
        return tables, len(document)
    finally:
        document.close()


def run_extractor(name: str, docs) -> dict:
    read = {"ragloupe": ragloupe_tables, "pdfplumber": pdfplumber_tables, "camelot": camelot_tables}[name]
    pooled, held_out, per_doc = Pooled(), Pooled(), {}
    seconds = pages = 0.0
    for doc_id, pdf, truths in docs:
        started = time.perf_counter()
        try:
            extracted, n_pages = read(pdf)
            failure = None
        except Exception as exc:  # a library failing on one file scores that file as nothing found
            extracted, n_pages, failure = [], 1, f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - started
        seconds, pages = seconds + elapsed, pages + n_pages
        score = max((score_document(truth, extracted) for truth in truths),
                    key=lambda s: (s.correct, -s.extracted))
        pooled.add(doc_id, score)
        if doc_id not in DEVELOPMENT:
            held_out.add(doc_id, score)
        per_doc[doc_id] = {**score.as_dict(), "pages": n_pages,
                           "s_per_page": round(elapsed / max(n_pages, 1), 3),
                           **({"failure": failure} if failure else {})}
    return {"pooled": summary(pooled.total), "held_out": summary(held_out.total),
            "held_out_documents": sorted(held_out.documents),
            "s_per_page": round(seconds / max(pages, 1), 3), "pages": int(pages),
            "documents": per_doc}


def summary(score: Score) -> dict:
    out = score.as_dict()
    out["tables_found"] = round(score.tables_paired / score.tables_expected, 4) if score.tables_expected else 0
    out["tables_not_in_ground_truth"] = round(
        1 - score.tables_paired / score.tables_extracted, 4) if score.tables_extracted else 0
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default=",".join(EXTRACTORS), help="extractors, comma-separated")
    parser.add_argument("--docs", default="", help="doc ids (eu-001,...), all when empty")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    docs = documents(set(filter(None, args.docs.split(","))) or None)
    report = {"corpus": "ICDAR 2013 table competition, EU part", "documents": len(docs),
              "development_documents": list(DEVELOPMENT), "extractors": {}}
    for name in filter(None, args.only.split(",")):
        report["extractors"][name] = run_extractor(name, docs)
        line = report["extractors"][name]["pooled"]
        print(f"{name:10s} F1 {line['f1']:.3f} P {line['precision']:.3f} R {line['recall']:.3f} "
              f"tables found {line['tables_paired']}/{line['tables_expected']} "
              f"unpaired {line['tables_extracted'] - line['tables_paired']}/{line['tables_extracted']} "
              f"held-out F1 {report['extractors'][name]['held_out']['f1']:.3f} "
              f"{report['extractors'][name]['s_per_page']} s/page", flush=True)
    report["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "load_avg": list(os.getloadavg())}
    report["command"] = "python benchmarks/" + Path(__file__).name + "".join(
        f" {a}" for a in sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
