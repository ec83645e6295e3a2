"""Embedding models side by side: the same corpus indexed with each, every tuning family per mode.

    .venv/bin/python benchmarks/embedders.py --index bundled=DIR --index mpnet=DIR:MODEL [--out PATH]

Each ``--index LABEL=DIR[:MODEL]`` is an index of the same documents (the three Grampian
reports, data/benchmarks/natech/guidance.csv and data/benchmarks/manuals/pdf) built with
``RAGLOUPE_EMBEDDING_MODEL=MODEL`` (the bundled model when MODEL is left out), e.g.

    RAGLOUPE_INDEX_DIR=/tmp/mp/index RAGLOUPE_EMBEDDING_MODEL=<all-mpnet-base-v2 dir> \\
        ragloupe index data/benchmarks/grampian/pdf data/benchmarks/natech/guidance.csv data/benchmarks/manuals/pdf

Every family of benchmarks/adapt.py (the tuning families and the held-out ones) is searched
in dense, BM25 and the default mode (hybrid, min-max 1.5:1 as shipped), each question in its
own document. The first index is the reference: every other one gets, per family and mode,
the paired difference in Hit@1 against it, with its permutation p-value and bootstrap CI.
The indexes are only read. Written to benchmarks/results/embedders.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from adapt import MODES, families, measure  # noqa: E402  (bootstraps the environment)

from ragloupe.adapt import compare  # noqa: E402
from ragloupe.config import PROJECT_ROOT, get_settings  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks/results/embedders.json"


def parse_index(spec: str) -> tuple[str, Path, str | None]:
    label, _, rest = spec.partition("=")
    directory, _, model = rest.partition(":")
    if not label or not directory:
        raise SystemExit(f"--index wants LABEL=DIR[:MODEL], got {spec!r}")
    return label, Path(directory), model or None


def pooled(scores: dict, family: str, mode: str) -> dict:
    """One index's questions of a family in one mode, its gold sets pooled."""
    return {"all": [q for s in scores[family][mode].values() for q in s]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", action="append", required=True, help="LABEL=DIR[:MODEL], the first is the reference")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    specs = [parse_index(s) for s in args.index]
    fams = families()
    scores, seconds = {}, {}
    for label, directory, model in specs:
        overrides = {"index_dir": directory, "runs_dir": directory.parent / "runs"}
        if model:
            overrides["embedding_model"] = model
        started = time.perf_counter()
        print(f"measuring {label}", file=sys.stderr, flush=True)
        scores[label] = measure(get_settings(**overrides), fams)
        seconds[label] = round(time.perf_counter() - started, 1)
    reference = specs[0][0]
    table = {}
    for label, _, _ in specs:
        table[label] = {}
        for family in fams:
            table[label][family] = {}
            for mode in MODES:
                row = compare.compare(pooled(scores[reference], family, mode),
                                      pooled(scores[label], family, mode))["all"]
                table[label][family][mode] = row
    result = {
        "command": "benchmarks/embedders.py " + " ".join(f"--index {s}" for s in args.index),
        "reference": reference,
        "indexes": {label: {"dir": str(d), "embedding_model": m or "bundled"} for label, d, m in specs},
        "families": {name: {"tuning": spec["tuning"],
                            "goldsets": [str(p.relative_to(PROJECT_ROOT)) for p in spec["paths"]]}
                     for name, spec in fams.items()},
        "measure_seconds": seconds,
        "cpu": {"cores": os.cpu_count(), "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "against_reference": table,
    }
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
