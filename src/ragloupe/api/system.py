"""Health and metrics: GET /health (Halloumi's), GET /api/v1/health and /api/v1/metrics (EvidenceRAG's
JSON), GET /metrics (Prometheus text).

Health answers without the API key and never fails: what it cannot read
(an index that is missing or stale, an LLM that is down) is reported in its
fields, with the reason. The LLM probe uses llm_probe_timeout_s, so a dead
endpoint costs at most that.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

import ragloupe
from ragloupe.errors import RagloupeError

router = APIRouter(tags=["system"])

PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


@router.get("/health")
def health(request: Request) -> dict[str, Any]:
    """Answers at once, also while the model loads (``model.state`` says so)."""
    resources = request.app.state.resources
    return {"status": "ok", "version": ragloupe.__version__, "model": resources.model_status(),
            "index": index_status(resources), "llm": llm_status(resources)}


@router.get("/api/v1/health")
def health_v1(request: Request) -> dict[str, Any]:
    """EvidenceRAG's health (ok, ollama_reachable, ollama_detail, generation_enabled), with ragloupe's."""
    data = health(request)
    llm = data["llm"]
    return {"ok": True, "ollama_reachable": llm["reachable"], "ollama_detail": llm["message"],
            "generation_enabled": request.app.state.resources.settings.llm_backend != "none", **data}


@router.get("/api/v1/metrics")
def metrics_v1(request: Request) -> dict[str, Any]:
    """EvidenceRAG's JSON counters: generation outcomes, citations, derived rates (Prometheus text: /metrics)."""
    return request.app.state.resources.generation.snapshot()


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request) -> PlainTextResponse:
    """Counters and latency histograms per endpoint and per pipeline stage (Prometheus text format)."""
    resources = request.app.state.resources
    text = resources.metrics.render() + "".join(
        f"# TYPE {name} {kind}\n{name} {value}\n" for name, kind, value in resources.batching_stats())
    return PlainTextResponse(text, media_type=PROMETHEUS_TEXT)


def index_status(resources: Any) -> dict[str, Any]:
    try:
        manifest = resources.manifest()
        store = resources.store()
        return {"ready": store.count() > 0, "documents": len(manifest.complete()), "chunks": store.count(),
                "stale": manifest.stale_reason(resources.settings),
                "index_dir": str(resources.settings.path("index_dir"))}
    except RagloupeError as exc:
        return {"ready": False, "reason": str(exc)}


def llm_status(resources: Any) -> dict[str, Any]:
    from ragloupe.diagnostics.system import llm_status as probe

    settings = resources.settings
    reachable, message = probe(settings)
    return {"backend": settings.llm_backend, "reachable": reachable, "message": message}
