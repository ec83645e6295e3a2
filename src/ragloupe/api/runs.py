"""Evaluation runs over HTTP: list them, show one, compare two (the CLI's runs / compare)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Query, Request

router = APIRouter(prefix="/api/v1/runs", tags=["evaluation"])


@router.get("")
def list_runs(request: Request) -> dict[str, Any]:
    from ragloupe.evaluate.runs import list_runs as rows

    return {"runs": rows(request.app.state.resources.settings)}


@router.get("/compare")
def compare_runs(request: Request, a: str = Query(..., min_length=1, description="run id (or unique prefix)"),
                 b: str = Query(..., min_length=1, description="run id (or unique prefix)")) -> dict[str, Any]:
    """Per-question improved / regressed, paired tests and verdicts, as `ragloupe compare A B`."""
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.runs import load_run

    settings = request.app.state.resources.settings
    return compare(load_run(_plain(a), settings), load_run(_plain(b), settings)).as_dict()


@router.get("/{run_id}")
def show_run(run_id: str, request: Request) -> dict[str, Any]:
    from ragloupe.evaluate.runs import load_run

    run = load_run(_plain(run_id), request.app.state.resources.settings)
    return {"run_id": run.run_id, **run.data, "timings": run.timings}


def _plain(run_id: str) -> str:
    """A run id ('hybrid-doc-0123abcd') or a prefix of one; never a path to some other file."""
    from ragloupe.errors import RunNotFound

    if not re.fullmatch(r"[\w+-]+", run_id):
        raise RunNotFound(f"{run_id!r} is not a run id; GET /api/v1/runs lists them")
    return run_id
