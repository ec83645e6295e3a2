"""One entry point for retrieval: search(query, mode, k, filters, workspace=...) -> Ranking.

``search() == replay(fetch())``: fetch (retrieve/fetch.py) analyses the
question once, rewrites it when the mode says so, and runs the engines over
their full candidate windows (and the whole-unit signals when the unit view is
on); replay (retrieve/replay.py) is the pure rest: fusion -> (rerank) ->
period and table preference -> dynamic cut -> page view -> unit view -> top k.
Every hit keeps what each stage said about it (each engine's rank and raw
score, the fused score, the reranker's score and the places it moved), so a
person can see why the right chunk lost. Timings are kept per stage, in
seconds: setup (opening the store, loading the embedding model on first use),
rewrite, query_embedding (near 0 when this process embedded the same text
recently: query vectors are cached), query_analysis (fiscal periods, amounts
and codes the question names; their BM25 variants when
Settings.query_expansion is on), dense, bm25_index (the cached BM25 index,
rebuilt when the store changed), bm25, fusion, rerank, period (each
document's period, Settings.period_filter's choice of the documents of the
question's period and Settings.period_boost's preference for them), units
(the whole-unit signals and the unit view), aggregate (cut and page view) and
total.

Modes name the engines and the optional stages: ``dense``, ``bm25``,
``hybrid`` (dense + bm25, fused), ``+rerank`` (cross-encoder when
Settings.cross_encoder_model is set, else the lexical reranker) and
``+rewrite`` (LLM query rewrite appended to the question).
Settings.lexical_rerank=true runs the lexical reranker in the modes without
``+rerank`` too, so the evaluation can switch it on everywhere at once.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ragloupe.models import Ranking
from ragloupe.retrieve.fetch import Candidates, fetch
from ragloupe.retrieve.modes import (BASES, FILTER_KEYS, MODES, InvalidSearch, ModePlan, normalise_filters,
                                     parse_mode)
from ragloupe.retrieve.replay import ReplayConfig, replay
from ragloupe.workspace import Workspace

__all__ = ["BASES", "FILTER_KEYS", "MODES", "Candidates", "InvalidSearch", "ModePlan", "ReplayConfig",
           "fetch", "normalise_filters", "parse_mode", "ranking_to_dict", "replay", "search"]


def search(query: str, mode: str | None = None, k: int | None = None, filters: dict | None = None, *,
           workspace: Workspace, explain: bool = False, **overrides: Any) -> Ranking:
    """Rank chunks for ``query``: replay(fetch(...)); see the module docstring for the flow.

    ``workspace`` (ragloupe.workspace.Workspace) is what a face opened: the store, the model,
    the caches built over the index and the settings in force. ``overrides`` replace settings
    for this call only (e.g. ``fusion="minmax"``, ``weight_bm25=2``, ``page_aggregation="sum"``),
    checked once, so a sweep needs no re-indexing; a caller holding whole other settings of
    the same index passes ``workspace.with_settings(them)``. ``explain`` also runs the engines
    the mode does not use, so every hit shows where the other engine would have put it (the
    CLI table does this).
    """
    workspace = workspace.with_overrides(**overrides)
    mode = mode or workspace.settings.mode
    candidates = fetch(query, mode, k, filters, workspace=workspace, explain=explain)
    return replay(candidates, ReplayConfig.of(workspace.settings, mode, k))


def ranking_to_dict(ranking: Ranking) -> dict[str, Any]:
    """A JSON-ready dict of a Ranking (chunks in full, absent ranks as null), with the rewrite's
    one-line note beside its fields, as the JSON said it before they were split out."""
    return {**asdict(ranking), "rewrite_note": ranking.rewrite_note}
