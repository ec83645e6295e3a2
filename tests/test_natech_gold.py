"""The held-out Natech gold set (guidance2.gold.json) is well formed against the guidance it asks about."""

from __future__ import annotations

from pathlib import Path

from ragloupe.evaluate.goldset import DocumentInfo, load_goldset, validate_goldset
from ragloupe.ingest import load_source

NATECH = Path(__file__).resolve().parents[1] / "data/benchmarks/natech"


def test_held_out_natech_set_validates_against_the_guidance_records(settings):
    guidance = load_source(NATECH / "guidance.csv", settings)
    documents = {"guidance": DocumentInfo("guidance", n_pages=len(guidance.pages),
                                          record_ids=frozenset(p.record_id for p in guidance.pages))}
    gold = load_goldset(NATECH / "guidance2.gold.json")

    assert gold.format == "records" and not gold.findings
    assert len(gold.queries) >= 30
    assert validate_goldset(gold, documents) == []
    assert len({r for q in gold.queries for r in q.expected_records}) >= 25  # spread over the guidance


def test_held_out_answers_are_phrases_of_their_expected_chapters(settings):
    text = {p.record_id: p.text for p in load_source(NATECH / "guidance.csv", settings).pages}
    gold = load_goldset(NATECH / "guidance2.gold.json")

    for query in gold.queries:
        for phrase in query.expected_answer.split(";"):
            piece = phrase.split("...")[0].strip()
            assert any(piece in text[r] for r in query.expected_records), (query.query_id, piece)


def test_held_out_questions_are_not_the_tuning_questions():
    tuning = {q.question for q in load_goldset(NATECH / "guidance.gold.json").queries}
    held_out = load_goldset(NATECH / "guidance2.gold.json")

    assert not tuning & {q.question for q in held_out.queries}
    assert all(q.query_id.startswith("N2_") for q in held_out.queries)
