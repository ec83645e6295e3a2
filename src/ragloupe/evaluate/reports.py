"""Reports on disk: deterministic JSON with the timings kept apart, written atomically.

Evaluation runs (runs.py) and tuning runs (tuning.py) are both written and read
through here, so a rerun of either is byte-identical but for ``timings``:
keys sorted, floats rounded to FLOAT_DIGITS, tuples as lists.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, TypeVar

from ragloupe.config import Settings
from ragloupe.errors import RunNotFound

FLOAT_DIGITS = 4
ReportT = TypeVar("ReportT", bound="Report")


@dataclass(frozen=True)
class Report:
    """A report under runs_dir: ``data`` is deterministic, ``timings`` kept apart.

    Evaluation runs and tuning runs are both written through ``to_json``, so a
    rerun of either is byte-identical but for ``timings``.
    """

    run_id: str
    data: dict
    timings: dict = field(default_factory=dict)
    path: Path | None = None

    def to_json(self) -> str:
        return canonical_json({**self.data, "run_id": self.run_id, "timings": self.timings})


def save_report(report: ReportT, settings: Settings) -> ReportT:
    """Write a report as runs_dir/<run_id>.json; the same report, with its path.

    Written to a temporary file and renamed, so a reader (the runs list, the
    app) never sees half a report.
    """
    runs_dir = settings.path("runs_dir")
    runs_dir.mkdir(parents=True, exist_ok=True)
    path = runs_dir / f"{report.run_id}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(report.to_json(), encoding="utf-8")
    tmp.replace(path)
    return dataclasses.replace(report, path=path)


def read_report(path: Path, schema: str, kind: str) -> tuple[str, dict, dict]:
    """(run_id, data, timings) of the report at ``path``; RunNotFound unless it is a ``schema`` report.

    ``kind`` names the report in the message ("run", "tuning").
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunNotFound(f"{path}: not a readable {kind} report ({type(exc).__name__})") from None
    if not isinstance(raw, dict) or raw.get("schema") != schema:
        raise RunNotFound(f"{path}: not a ragloupe {kind} report")
    timings = raw.pop("timings", {})
    run_id = raw.pop("run_id", path.stem)
    return run_id, raw, timings


def canonical_json(data: Any) -> str:
    return json.dumps(rounded(data), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def content_hash(data: Any) -> str:
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def rounded(value: Any) -> Any:
    """Floats rounded to FLOAT_DIGITS everywhere, tuples as lists: one spelling per value."""
    if isinstance(value, float):
        return round(value, FLOAT_DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0
    if isinstance(value, Mapping):
        return {str(k): rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [rounded(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value
