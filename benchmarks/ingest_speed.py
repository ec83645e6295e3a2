"""How fast ingestion reads the shipped corpus, and what the extraction child costs.

    .venv/bin/python benchmarks/ingest_speed.py [--repeat 3]

For each shipped Grampian PDF (and natech/guidance.csv) it times
``load_source`` end to end (child process, pypdf, boilerplate, quality), and,
for the PDFs, the same extraction run in this process without a child
(``extract_raw`` + ``build_pages``): the difference is what the time and
memory limits cost. It also times ``load_source`` on a one-page PDF, with the
extraction child already running and as the first file of a batch (child
start-up included), and the extraction child's peak memory (RSS). Each
time is the median of ``--repeat`` runs. The
machine's load average is recorded: on a shared machine the figures move.
Writes benchmarks/results/ingest_speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ragloupe.config import PROJECT_ROOT, Settings
from ragloupe.ingest import load_source, worker
from ragloupe.ingest.pdf import build_pages, extract_raw

sys.path.insert(0, str(PROJECT_ROOT / "tests"))
import pdf_factory  # noqa: E402  (writes the one-page PDF)

CORPUS = PROJECT_ROOT / "data" / "benchmarks"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "ingest_speed.json"


def median_seconds(run, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = Settings.from_env()

    files = []
    for path in sorted((CORPUS / "grampian" / "pdf").glob("*.pdf")):
        doc = load_source(path, settings)
        in_child = median_seconds(lambda: load_source(path, settings), args.repeat)
        in_process = median_seconds(
            lambda: build_pages(path.stem, extract_raw(path), settings), args.repeat)
        files.append({"file": path.name, "pages": len(doc.pages),
                      "indexable_pages": sum(p.indexable for p in doc.pages),
                      "seconds": round(in_child, 3), "seconds_in_process": round(in_process, 3),
                      "child_overhead_seconds": round(in_child - in_process, 3)})

    # CPU time of one pass, which a busy shared machine disturbs far less than
    # wall time: this process (boilerplate, quality) plus the extraction child
    # (start-up and pypdf; counted once the child has ended).
    worker.shutdown()
    child_before = _children_cpu()
    parent_before = time.process_time()
    for path in sorted((CORPUS / "grampian" / "pdf").glob("*.pdf")):
        load_source(path, settings)
    parent_cpu = time.process_time() - parent_before
    worker.shutdown()
    child_cpu = _children_cpu() - child_before

    guidance = CORPUS / "natech" / "guidance.csv"
    records_seconds = median_seconds(lambda: load_source(guidance, settings), args.repeat)

    with tempfile.TemporaryDirectory() as tmp:
        tiny = pdf_factory.write_text_pdf(Path(tmp) / "tiny.pdf", [["One short page of text."]])
        tiny_seconds = median_seconds(lambda: load_source(tiny, settings), max(args.repeat, 5))

        def cold() -> None:  # the first PDF of a batch also starts the child
            worker.shutdown()
            load_source(tiny, settings)

        tiny_cold_seconds = median_seconds(cold, max(args.repeat, 5))

    worker.shutdown()  # a finished child's peak memory is only known once it has ended
    child_peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024

    pages = sum(f["pages"] for f in files)
    seconds = sum(f["seconds"] for f in files)
    result = {
        "command": "python benchmarks/ingest_speed.py --repeat %d" % args.repeat,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "grampian": {"files": files, "pages": pages, "seconds": round(seconds, 3),
                     "pages_per_second": round(pages / seconds, 1),
                     "seconds_in_process": round(sum(f["seconds_in_process"] for f in files), 3),
                     "one_pass_cpu_seconds": {"parent": round(parent_cpu, 3),
                                              "extraction_child": round(child_cpu, 3)},
                     "pages_per_cpu_second": round(pages / (parent_cpu + child_cpu), 1)},
        "extraction_child_peak_rss_mb": round(child_peak_mb, 1),
        "one_page_pdf_seconds": round(tiny_seconds, 3),
        "one_page_pdf_first_in_batch_seconds": round(tiny_cold_seconds, 3),
        "load_average_1min_at_end": round(os.getloadavg()[0], 2),
        "guidance_csv": {"records": len(load_source(guidance, settings).pages),
                         "seconds": round(records_seconds, 3)},
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
