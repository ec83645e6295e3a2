"""search() == replay(fetch()): the seam tuning, evaluation and the API rely on, on every mode."""

from __future__ import annotations

import dataclasses

import pytest

from ragloupe.index import lexical
from ragloupe.models import Chunk
from ragloupe.retrieve import features, query_analysis
from ragloupe.retrieve.search import MODES, ReplayConfig, fetch, replay, search

QUESTION = "How much did NHS Grampian spend on capital in 2021/22?"
SCOPE = {"doc_ids": ["Grampian-2021-2022"]}


def _same(a, b) -> None:
    """Two rankings equal in everything but how long their stages took."""
    left, right = dataclasses.replace(a, timings={}), dataclasses.replace(b, timings={})
    assert left == right


@pytest.mark.parametrize("mode", MODES)
def test_search_is_replay_of_fetch_on_every_mode(demo_index, workspace_of, mode):
    workspace = workspace_of(demo_index)
    settings = demo_index.replace(ollama_base_url="http://127.0.0.1:9", rewrite_timeout_s=1.0)
    ranking = search(QUESTION, mode, 5, SCOPE, workspace=workspace.with_settings(settings))
    candidates = fetch(QUESTION, mode, 5, SCOPE, workspace=workspace.with_settings(settings))
    _same(ranking, replay(candidates, ReplayConfig.of(settings, mode, 5)))
    assert ranking.pages and ranking.hits


def test_one_fetch_replays_other_settings_as_search_would(demo_index, workspace_of):
    workspace = workspace_of(demo_index)
    candidates = fetch(QUESTION, "hybrid", 10, SCOPE,
                       workspace=workspace.with_settings(demo_index), unit_views=("all",))
    for mode, changes in (("bm25", {}), ("dense", {}), ("hybrid", {"fusion": "rrf", "candidate_window": 50}),
                          ("hybrid", {"fusion": "minmax", "unit_view": "all", "page_aggregation": "sum"})):
        configured = demo_index.replace(**changes)
        expected = search(QUESTION, mode, 10, SCOPE, explain=True, workspace=workspace.with_settings(configured))
        _same(expected, replay(candidates, ReplayConfig.of(configured, mode, 10)))


def test_period_in_chunk_reads_the_chunk_with_the_configured_fiscal_year():
    """RAGLOUPE_FISCAL_YEAR_START_MONTH=1: a chunk naming March 2021 names the question's year 2021."""
    chunk = Chunk(chunk_id="acc-p1-0", doc_id="acc", page=1, position=0, n_tokens=12, quality="clean",
                  text="Spending in March 2021 was 3.2 million.")
    index = lexical.build_index([chunk])
    analysis = query_analysis.analyze("What was spent in the year ended 31 December 2021?", fy_start_month=1)
    assert analysis.target_period == query_analysis.Period(2021, 2021)
    rows = features.candidate_features(analysis.query, [chunk], [{}], features.build_views(index), analysis, {})
    assert rows[0][features.FEATURES.index("period_in_chunk")] == 1.0
