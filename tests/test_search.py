"""search(): every engine's view on every hit, filters on both engines, page view, cut, BM25 cache."""

from __future__ import annotations

import pytest

from retrieval_corpus import build_index, corpus_chunks
from ragloupe.errors import SettingsInvalid
from ragloupe.models import Chunk, Hit
from ragloupe.retrieve.aggregate import aggregate_pages
from ragloupe.retrieve.cut import cut_position
from ragloupe.retrieve.search import InvalidSearch, MODES, parse_mode, search
from ragloupe.workspace import Workspace


@pytest.fixture(scope="module")
def small_index(tmp_path_factory, embedder):
    return build_index(tmp_path_factory.mktemp("small"), embedder)


def test_hybrid_hit_carries_each_engine_rank_and_raw_score(small_index):
    ranking = search("revenue resource limit underspend", "hybrid", 5, workspace=Workspace.open(small_index))
    top = ranking.hits[0]
    assert top.chunk.chunk_id == "report-p2-0"
    assert set(top.per_engine) == {"dense", "bm25"}
    assert top.per_engine["dense"].rank == 1 and top.per_engine["bm25"].rank == 1
    assert top.per_engine["bm25"].score > 0
    assert top.fused_score == pytest.approx(2 / 61)  # rank 1 in both, rrf_k 60, weights 1
    assert top.score == top.fused_score


def test_chunk_bm25_did_not_list_shows_rank_none_not_zero(small_index):
    ranking = search("revenue resource limit underspend", "hybrid", 10, workspace=Workspace.open(small_index))
    absent = [h for h in ranking.hits if h.per_engine["bm25"].rank is None]
    assert absent, "the dense list reaches chunks sharing no word with the query"
    assert all(h.per_engine["bm25"].score is None for h in absent)
    assert all(h.per_engine["dense"].rank is not None for h in absent)


def test_dense_similarity_is_one_minus_distance_within_range(small_index):
    # At chunk grain alone; the default's blend with the best sentence: tests/test_sentence_grain.py.
    ranking = search("flood debris damaging pipes", "dense", 12, workspace=Workspace.open(small_index),
                     dense_sentence_weight=0)
    for hit in ranking.hits:
        view = hit.per_engine["dense"]
        assert -1.0 <= view.score <= 1.0
        assert view.score == pytest.approx(1.0 - view.distance)
        assert hit.score == view.score
    blended = search("flood debris damaging pipes", "dense", 12, workspace=Workspace.open(small_index))
    assert all(-1.0 <= h.per_engine["dense"].score <= 1.0 and h.score == h.per_engine["dense"].score
               for h in blended.hits)


def test_margin_is_the_drop_to_the_next_hit(small_index):
    ranking = search("hazardous sites directive", "hybrid", 12, workspace=Workspace.open(small_index))
    hits = ranking.hits
    for hit, following in zip(hits, hits[1:]):
        assert hit.margin == pytest.approx(hit.score - following.score)
        assert hit.margin >= 0


def test_single_engine_mode_reports_only_its_engine_unless_explained(small_index):
    plain = search("ISO 31000 risk management", "bm25", 3, workspace=Workspace.open(small_index))
    assert set(plain.hits[0].per_engine) == {"bm25"}
    assert plain.hits[0].fused_score is None
    explained = search("ISO 31000 risk management", "bm25", 3, explain=True, workspace=Workspace.open(small_index))
    assert set(explained.hits[0].per_engine) == {"dense", "bm25"}
    assert [h.chunk.chunk_id for h in explained.hits] == [h.chunk.chunk_id for h in plain.hits]


@pytest.mark.parametrize("mode", [m for m in MODES if "rewrite" not in m])
def test_every_mode_ranks_the_obvious_chunk_first(small_index, mode):
    ranking = search("Seveso III Directive 2012/18/EU major accidents", mode, 5, workspace=Workspace.open(small_index))
    assert ranking.mode == mode
    assert ranking.hits[0].chunk.chunk_id == "guidance-1"
    assert [h.rank for h in ranking.hits] == list(range(1, len(ranking.hits) + 1))


def test_timings_cover_each_stage_that_ran(small_index):
    ranking = search("capital expenditure hospital", "hybrid+rerank", 5, workspace=Workspace.open(small_index))
    assert {"query_embedding", "dense", "bm25", "fusion", "rerank", "total"} <= set(ranking.timings)
    stages = {name: s for name, s in ranking.timings.items() if name != "total"}
    assert ranking.timings["total"] >= max(stages.values()) > 0  # each stage is timed inside the total


def test_document_filter_scopes_both_engines(small_index):
    ranking = search("hazardous materials accidents", "hybrid", 10, {"doc_ids": ["guidance"]},
                     workspace=Workspace.open(small_index))
    assert ranking.hits and all(h.chunk.doc_id == "guidance" for h in ranking.hits)
    bm25_ranks = sorted(h.per_engine["bm25"].rank for h in ranking.hits if h.per_engine["bm25"].rank)
    assert bm25_ranks[0] == 1  # ranked within the scope, not the survivors of a global list
    assert ranking.filters == {"doc_ids": ["guidance"]}


def test_page_and_quality_filters_scope_both_engines(small_index):
    ranking = search("performance standard March", "hybrid", 10,
                     {"doc_ids": "report", "pages": (2, 4), "quality": ["clean"]}, workspace=Workspace.open(small_index))
    assert ranking.hits
    assert {(h.chunk.page, h.chunk.quality) for h in ranking.hits} <= {(2, "clean"), (3, "clean")}


def test_fusion_sees_the_whole_window_not_the_top_k(small_index):
    wide = search("NHS Grampian hospital", "hybrid", 10, workspace=Workspace.open(small_index))
    narrow = search("NHS Grampian hospital", "hybrid", 1, workspace=Workspace.open(small_index))
    assert len(narrow.hits) == 1
    assert narrow.hits[0].chunk.chunk_id == wide.hits[0].chunk.chunk_id
    assert narrow.hits[0].score == wide.hits[0].score
    assert narrow.candidates == wide.candidates > 1


def test_page_view_is_built_from_the_whole_candidate_window(small_index):
    ranking = search("vaccination and staff wellbeing in the pandemic", "hybrid", 1,
                     workspace=Workspace.open(small_index))
    units = [p.unit for p in ranking.pages]
    assert len(units) > 1 and len(units) == len(set(units))
    page3 = next(p for p in ranking.pages if p.unit == "report#p3")
    assert sorted(page3.chunk_ids) == ["report-p3-0", "report-p3-1"]
    assert "guidance#4.6.1" in units or any(p.record_id for p in ranking.pages)


def test_minmax_fusion_can_be_chosen_per_call(small_index):
    ranking = search("ISO 31000", "hybrid", 5, fusion="minmax", workspace=Workspace.open(small_index))
    assert ranking.fusion == "minmax"
    assert all(0.0 <= h.score <= 2.0 for h in ranking.hits)
    assert ranking.hits[0].score == pytest.approx(2.0)  # first in both engines


def test_bm25_weight_override_changes_the_fused_score(small_index):
    default = search("DN50 pipes", "hybrid", 3, workspace=Workspace.open(small_index))
    heavy = search("DN50 pipes", "hybrid", 3, weight_bm25=3.0, workspace=Workspace.open(small_index))
    top = heavy.hits[0]
    assert top.fused_score == pytest.approx(1 / (60 + top.per_engine["dense"].rank)
                                            + 3 / (60 + top.per_engine["bm25"].rank))
    assert top.fused_score > default.hits[0].fused_score


def test_threshold_cut_drops_weak_hits_from_hits_and_pages(small_index):
    full = search("eNATECH database of accident reports", "dense", 10, workspace=Workspace.open(small_index))
    cut = search("eNATECH database of accident reports", "dense", 10,
                 dynamic_cut="threshold", dynamic_cut_value=0.5, workspace=Workspace.open(small_index))
    top = full.hits[0].score
    assert cut.cut_at == sum(1 for h in full.hits if h.score >= 0.5 * top) < len(full.hits)
    assert len(cut.hits) == cut.cut_at
    kept_units = {h.chunk.unit for h in cut.hits}
    assert {p.unit for p in cut.pages} == kept_units


def test_unknown_mode_filter_and_setting_are_refused_with_a_reason(small_index):
    with pytest.raises(InvalidSearch, match="unknown search mode"):
        search("q", "sparse", workspace=Workspace.open(small_index))
    with pytest.raises(InvalidSearch, match="unknown filter"):
        search("q", "bm25", filters={"year": 2021}, workspace=Workspace.open(small_index))
    with pytest.raises(SettingsInvalid, match="page_aggregation='mean': wants one of max, sum, rrf"):
        search("q", "bm25", page_aggregation="mean", workspace=Workspace.open(small_index))
    with pytest.raises(InvalidSearch, match="empty"):
        search("  ", "bm25", workspace=Workspace.open(small_index))


def test_empty_index_says_to_index_first(settings):
    with pytest.raises(InvalidSearch, match="ragloupe index"):
        search("anything", "hybrid", workspace=Workspace.open(settings))


def test_mode_flags_parse_in_any_order():
    assert parse_mode("hybrid+rewrite+rerank") == parse_mode("hybrid+rerank+rewrite")
    assert parse_mode("bm25").engines == ("bm25",)
    with pytest.raises(InvalidSearch):
        parse_mode("hybrid+rerank+rerank")


def test_bm25_index_is_cached_and_rebuilt_when_the_store_changes(tmp_path, embedder):
    from ragloupe.index.store import open_store

    chunks = corpus_chunks()
    settings = build_index(tmp_path, embedder, chunks)
    workspace = Workspace.open(settings, store=open_store(settings))
    store = workspace.store
    first = workspace.lexical()
    assert workspace.lexical() is first
    assert search("lightning strike on tank roof", "bm25", 5,
                  workspace=workspace.with_settings(settings)).hits[0].chunk.chunk_id == "guidance-4.1"
    added = Chunk(chunk_id="report-p9-0", doc_id="report", page=9, position=0, quality="clean",
                  text="A lightning strike on a tank roof started a fire in 2021.", n_tokens=12)
    store.upsert([added], embedder.encode([added.text]))
    store.set_content_marker("test-added")
    assert workspace.lexical() is not first
    assert search("lightning strike on tank roof", "bm25", 5,
                  workspace=workspace.with_settings(settings)).hits[0].chunk.chunk_id == "report-p9-0"


def test_repeated_question_is_embedded_once_per_workspace(small_index, embedder):
    class Counting:
        def __init__(self):
            self.calls = 0

        def encode(self, texts):
            self.calls += 1
            return embedder.encode(texts)

    counting = Counting()
    workspace = Workspace.open(small_index, embedder=counting)
    first = search("storage tanks and floods", "dense", 3, workspace=workspace.with_settings(small_index))
    again = search("storage tanks and floods", "hybrid", 3, workspace=workspace.with_settings(small_index),
                   weight_bm25=2.0)
    assert counting.calls == 1
    assert again.hits[0].per_engine["dense"].score == first.hits[0].per_engine["dense"].score


def test_bm25_settings_change_builds_a_new_index(small_index):
    from ragloupe.index.store import open_store

    workspace = Workspace.open(small_index, store=open_store(small_index))
    default = workspace.lexical()
    assert workspace.lexical(k1=0.9) is not default
    fast = workspace.lexical(backend="bm25s")
    assert fast.backend == "bm25s"


# ----------------------------------------------------------------------------
# The pure stages: page aggregation and the dynamic cut


def _hit(rank: int, score: float, page: int, doc: str = "d", record_id: str = "") -> Hit:
    chunk = Chunk(chunk_id=f"{doc}-{page}-{rank}", doc_id=doc, page=page, position=rank, text="t",
                  n_tokens=1, quality="clean", record_id=record_id)
    return Hit(chunk=chunk, rank=rank, score=score)


def test_page_aggregation_max_takes_the_best_chunk_and_sum_rewards_many():
    hits = [_hit(1, 0.9, page=1), _hit(2, 0.6, page=2), _hit(3, 0.5, page=2)]
    by_max = aggregate_pages(hits, "max")
    assert [(p.page, p.score) for p in by_max] == [(1, 0.9), (2, 0.6)]
    by_sum = aggregate_pages(hits, "sum")
    assert by_sum[0].page == 2 and by_sum[0].score == pytest.approx(1.1)
    assert by_sum[0].best_chunk_rank == 2


def test_page_aggregation_rrf_works_on_ranks_not_scores():
    hits = [_hit(1, 100.0, page=1), _hit(2, 1.0, page=2), _hit(3, 0.5, page=2)]
    pages = aggregate_pages(hits, "rrf", rrf_k=1)
    assert pages[0].page == 2  # 1/3 + 1/4 beats 1/2
    assert pages[0].score == pytest.approx(1 / 3 + 1 / 4)


def test_page_view_uses_record_ids_as_units_for_records():
    pages = aggregate_pages([_hit(1, 0.5, page=3, doc="guidance", record_id="4.6.1")], "max")
    assert pages[0].unit == "guidance#4.6.1" and pages[0].record_id == "4.6.1"


def test_margin_cut_stops_after_a_cliff_and_not_on_a_gentle_slope():
    assert cut_position([10.0, 2.0, 1.9, 1.8], "margin", 0.5) == 1
    assert cut_position([10.0, 9.0, 8.0, 7.0], "margin", 0.5) is None


def test_threshold_cut_keeps_hits_above_a_share_of_the_top():
    assert cut_position([1.0, 0.8, 0.4, 0.1], "threshold", 0.5) == 2
    assert cut_position([1.0, 0.9], "threshold", 0.5) is None


def test_cut_never_applies_without_a_positive_top_score_or_with_rule_none():
    assert cut_position([0.0, 0.0], "threshold", 0.5) is None
    assert cut_position([5.0, 0.1], "none", 0.5) is None
