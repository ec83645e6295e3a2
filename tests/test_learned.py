"""Fusion diagnostics on every hit: the RRF score beside whatever fusion ranked it."""

from __future__ import annotations

import pytest

from ragloupe.retrieve.search import search


def test_every_hit_carries_its_rrf_score_whatever_fusion_ranked_it(demo_index):
    s = demo_index.replace(fusion="minmax", weight_dense=1.5, weight_bm25=1.0, rrf_k=60)
    ranking = search("What was the Core Revenue Resource Limit for 2020/21?", mode="hybrid", k=20,
                     filters={"doc_ids": ["Grampian-2020-2021"]}, settings=s)
    assert ranking.fusion == "minmax"
    for hit in ranking.hits:
        expected = sum(weight / (60 + hit.per_engine[engine].rank)
                       for engine, weight in (("dense", 1.5), ("bm25", 1.0))
                       if hit.per_engine[engine].rank is not None)
        assert hit.rrf_score == pytest.approx(expected)
        assert hit.fused_score == hit.score  # min-max ranked it, RRF is shown beside
