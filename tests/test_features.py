"""Learned fusion's features: what they read in a chunk and its page, and what they never read."""

from __future__ import annotations

import numpy as np

from ragloupe.index import lexical
from ragloupe.models import Chunk, EngineScore
from ragloupe.retrieve import features as F
from ragloupe.retrieve import learned, query_analysis


def _chunk(page: int, text: str, position: int = 0) -> Chunk:
    return Chunk(chunk_id=f"acc-p{page}-{position}", doc_id="acc", page=page, position=position,
                 text=text, n_tokens=40, quality="clean")


def _rows(question: str, chunks: list[Chunk], corpus: list[Chunk], per_engine=None) -> np.ndarray:
    views = F.build_views(lexical.build_index(corpus))
    per_engine = per_engine or [{"dense": EngineScore(1, 0.5), "bm25": EngineScore(1, 3.0)} for _ in chunks]
    return F.candidate_features(question, chunks, per_engine, views, query_analysis.analyze(question), {})


def test_the_same_text_on_an_early_and_a_late_page_gets_the_same_features():
    """Where a page sits in its report is not relevance: gold sets cluster where their authors read."""
    text = "Provisions at 31 March 2022 were 4,512 after utilisation of 1,200 in the year."
    early, late = _chunk(3, text), _chunk(140, text)
    filler = [_chunk(p, f"Page {p} of the report on governance and staff.") for p in range(1, 151)
              if p not in (3, 140)]
    rows = _rows("What were provisions at 31 March 2022?", [early, late], [early, late, *filler])
    assert np.array_equal(rows[0], rows[1])


def test_label_match_finds_the_question_words_right_before_a_figure():
    row_label = _chunk(1, "Other operating income 1,234 Provisions for legal claims 4,512 Total 9,999")
    words_apart = _chunk(2, "Legal matters are described in the strategy. Claims are few. 4,512 staff in total")
    rows = _rows("What were the provisions for legal claims?", [row_label, words_apart], [row_label, words_apart])
    column = F.FEATURES.index("label_match")
    assert rows[0, column] == 1.0 and rows[1, column] < 0.5


def test_caps_heading_match_reads_the_upper_case_note_heading_of_the_page():
    heading = _chunk(9, "12. PROVISIONS FOR LIABILITIES At 1 April 2021 3,000 Arising during the year 1,512")
    prose = _chunk(10, "The board discussed provisions for liabilities at length during the year.")
    rows = _rows("What provisions for liabilities arose during the year?", [heading, prose], [heading, prose])
    column = F.FEATURES.index("caps_heading_match")
    assert rows[0, column] == 0.5 and rows[1, column] == 0.0  # "provisions", "liabilities" of four words


def test_engine_agreement_scales_each_engines_reciprocal_rank():
    chunks = [_chunk(p, f"Capital spend on page {p} was 1,{p:03d}.") for p in range(1, 5)]
    agree = [{"dense": EngineScore(p, 0.9 - p / 10), "bm25": EngineScore(p, 5.0 - p)} for p in range(1, 5)]
    rows = _rows("What was the capital spend?", chunks, chunks, agree)
    first = dict(zip(F.FEATURES, rows[0]))
    assert first["dense_rr_x_agree"] == first["dense_rr"] == 1.0  # all four in both top tens


def test_no_feature_of_the_shipped_model_is_unknown_or_reads_position():
    model = learned.from_json(learned.SHIPPED.read_text(encoding="utf-8"))
    assert set(model.features) <= set(F.FEATURES)
    assert "page_position" not in model.features
    assert model.fingerprint["feature_version"] == F.FEATURE_VERSION


def test_the_compact_views_hold_what_reading_each_text_gives_and_pickle_to_the_same_rows():
    import pickle

    corpus = [_chunk(p, f"12. PROVISIONS Page {p}: provisions of £1,{p:03d} and COVID-19 costs {p * 7}.", pos)
              for p in range(1, 6) for pos in range(2)]
    views = F.build_views(lexical.build_index(corpus))
    for chunk in corpus:
        found, read = views.terms(chunk), F.read_terms(chunk, views.word_ids, {})
        assert (found.tokens, found.heading) == (read.tokens, read.heading)
        assert found.words.tolist() == read.words.tolist() and found.figures.tolist() == read.figures.tolist()
        page = "\n".join(c.text for c in corpus if c.unit == chunk.unit)
        assert views.unit_tokens[chunk.unit] == frozenset(lexical.tokenize(page))
    assert views.chunk_ids() == sorted(c.chunk_id for c in corpus)

    question = "What were provisions of £1,003 in the COVID-19 year?"
    per_engine = [{"dense": EngineScore(i + 1, 0.9 - i / 20), "bm25": EngineScore(i + 1, 6.0 - i)}
                  for i in range(len(corpus))]
    rows = F.candidate_features(question, corpus, per_engine, views, query_analysis.analyze(question), {})
    again = pickle.loads(pickle.dumps(views, protocol=5))
    assert np.array_equal(rows, F.candidate_features(question, corpus, per_engine, again,
                                                     query_analysis.analyze(question), {}))
    assert rows[:, F.FEATURES.index("page_term_share")].max() > 0
