"""OCR accuracy and speed on scans made from real report pages.

    .venv/bin/python benchmarks/ocr_accuracy.py [--pages 12] [--scan-dpi 200]

Writes benchmarks/results/ocr_accuracy.json.

Every 36th page of the three shipped Grampian PDFs is rendered to a grey
image at ``--scan-dpi`` (as a scanner would) and written as an image-only
PDF page, with no text layer. That PDF goes through the real ingestion
(extraction child, pypdf finds no text, PDFium renders the page at
RAGLOUPE_OCR_DPI, Tesseract reads it). Character accuracy is the rapidfuzz
ratio (0-100) between the OCR text and pypdf's text of the original page,
whitespace normalised. pages/s is pages over the ingestion's wall time,
OCR included, on this machine (its load average is recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "tests"))
sys.path.insert(0, str(PROJECT_ROOT / "src"))

import pdf_factory as pf  # noqa: E402
from pypdf import PdfReader, PdfWriter  # noqa: E402
from rapidfuzz import fuzz  # noqa: E402

from ragloupe.config import Settings  # noqa: E402
from ragloupe.ingest import load_source  # noqa: E402
from ragloupe.ingest.ocr import engine_path  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "ocr_accuracy.json"
GRAMPIAN = PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "pdf"


def sample_pages(n: int) -> list[tuple[Path, int]]:
    """(pdf, 0-based page) pairs: every 36th page across the three reports, n at most."""
    pairs = []
    for pdf in sorted(GRAMPIAN.glob("*.pdf")):
        count = len(PdfReader(str(pdf)).pages)
        pairs += [(pdf, i) for i in range(5, count, 36)]
    return pairs[:n]


def normalise(text: str) -> str:
    return " ".join(text.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--scan-dpi", type=int, default=200)
    args = parser.parse_args()
    if engine_path() is None:
        sys.exit("tesseract is not installed (make install, or apt-get install tesseract-ocr)")
    settings = Settings.from_env()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for pdf, index in sample_pages(args.pages):
            original = PdfReader(str(pdf)).pages[index].extract_text() or ""
            single = Path(tmp) / "page.pdf"
            writer = PdfWriter()
            writer.add_page(PdfReader(str(pdf)).pages[index])
            with open(single, "wb") as handle:
                writer.write(handle)
            width, height, grey = pf.render_grey(single.read_bytes(), args.scan_dpi)
            scan = Path(tmp) / f"{pdf.stem}-p{index + 1}-scan.pdf"
            scan.write_bytes(pf.build_pdf([{"content": b"q 595 0 0 842 0 0 cm /Im1 Do Q",
                                            "image": (width, height, grey)}]))
            started = time.perf_counter()
            doc = load_source(scan, settings)
            seconds = time.perf_counter() - started
            page = doc.pages[0]
            # The running header and "Page N" footer are stripped by neither (one page only).
            accuracy = fuzz.ratio(normalise(original), normalise(page.text))
            rows.append({"doc_id": pdf.stem, "page": index + 1, "method": page.method,
                         "confidence": page.confidence, "chars": len(normalise(original)),
                         "accuracy": round(accuracy, 2), "seconds": round(seconds, 2)})
            print(f"{pdf.stem} p{index + 1}: accuracy {accuracy:.1f}, confidence "
                  f"{page.confidence}, {seconds:.1f} s")
    total_s = sum(r["seconds"] for r in rows)
    summary = {
        "pages": len(rows),
        "mean_accuracy": round(sum(r["accuracy"] for r in rows) / len(rows), 2),
        "min_accuracy": min(r["accuracy"] for r in rows),
        "mean_confidence": round(sum(r["confidence"] or 0 for r in rows) / len(rows), 1),
        "pages_per_s": round(len(rows) / total_s, 3),
        "all_read_by_ocr": all(r["method"] == "ocr" for r in rows),
    }
    print(json.dumps(summary))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "command": f"python benchmarks/ocr_accuracy.py --pages {args.pages} --scan-dpi {args.scan_dpi}",
        "ocr_dpi": settings.ocr_dpi, "scan_dpi": args.scan_dpi, "summary": summary, "pages": rows,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_before": [round(x, 2) for x in load_before],
                    "load_after": [round(x, 2) for x in os.getloadavg()]},
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
