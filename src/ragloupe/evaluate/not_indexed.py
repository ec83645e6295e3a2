"""Gold questions about documents the index does not hold: left out of the figures, and said so.

No ranking of an index can find a page of a document that index does not hold. Scored, such a
question is a 0 in every Hit@k that reads "missed" where the truth is "not indexed" (a scratch
index of two documents evaluated with a Grampian gold set shows Hit@1 0.000). So a run scores
only the questions whose document the index holds, gives them no failure code, and carries one
sentence, ``text``, that every face shows beside its figures. When no question is left to score
there is no figure at all: NothingToScore says why.

A document is held when it has at least one chunk in the index, as tune decides
(tune_replay.indexed_only). A page of a held document that has no chunk is still scored: that
miss is FP1, ingestion lost the page. Pure: questions and the held documents in.
"""

from __future__ import annotations

import dataclasses
from typing import Collection, Iterable, Mapping, Sequence

from ragloupe.errors import NothingToScore
from ragloupe.evaluate.goldset import GoldQuery, GoldSet

NAMED_DOCUMENTS = 4  # documents named in the sentence; the rest are counted


def held_documents(indexed_units: Iterable[str]) -> frozenset[str]:
    """The documents with at least one unit in ``indexed_units`` ('doc#p28' -> 'doc')."""
    return frozenset(unit.rpartition("#")[0] for unit in indexed_units)


def split_by_index(queries: Sequence[GoldQuery], held: Collection[str]) -> tuple[list[GoldQuery], dict]:
    """The questions to score, and the report's ``not_indexed`` section for the others.

    NothingToScore when no question's document is held: a run of no question has no figure.
    """
    scored = [q for q in queries if q.doc_id in held]
    left_out = [q for q in queries if q.doc_id not in held]
    section = not_indexed_section(len(queries), left_out)
    if queries and not scored:
        which = (f"none of the {len(queries)} questions can be scored: they ask" if len(queries) > 1
                 else "the one question cannot be scored: it asks")
        raise NothingToScore(
            f"{which} about {_documents(section['documents'])}; index "
            f"{'it' if len(section['documents']) == 1 else 'them'}, then evaluate again")
    return scored, section


def not_indexed_section(n_asked: int, left_out: Sequence[GoldQuery]) -> dict:
    """How many of ``n_asked`` questions were not scored, about which documents, and the sentence."""
    documents = sorted({q.doc_id for q in left_out})
    text = ""
    if left_out:
        verb = "asks" if len(left_out) == 1 else "ask"
        text = (f"{len(left_out)} of {n_asked} questions {verb} about {_documents(documents)}: not scored; "
                f"the figures are over the other {n_asked - len(left_out)}")
    return {"n_asked": n_asked, "n_not_scored": len(left_out), "documents": documents,
            "queries": [{"goldset": q.goldset, "query_id": q.query_id, "doc_id": q.doc_id} for q in left_out],
            "text": text}


def scored_goldsets(goldsets: Sequence[GoldSet], section: Mapping | None) -> list[GoldSet]:
    """The gold sets without the questions ``section`` (a run's ``not_indexed``) left out, and
    without a set left empty: what the run's coverage audit and in-sample note are about."""
    left_out = {(q["goldset"], q["query_id"]) for q in (section or {}).get("queries", [])}
    kept = [dataclasses.replace(g, queries=tuple(q for q in g.queries if (q.goldset, q.query_id) not in left_out))
            for g in goldsets]
    return [g for g in kept if g.queries]


def run_sentence(data: Mapping) -> str:
    """The sentence of a run report's ``not_indexed`` section; "" when every question was scored
    (or the report was written before questions were left out)."""
    return (data.get("not_indexed") or {}).get("text", "")


def tune_left_out_lines(counts: Mapping[str, int]) -> list[str]:
    """What a tuning report's ``not_indexed`` counts (family -> questions) say, a line a family."""
    return [f"left out: {n} {family} questions about documents the index does not hold "
            "(index them to tune on them too)" for family, n in counts.items()]


def _documents(documents: Sequence[str]) -> str:
    """'documents not in this index (Grampian-2020-2021, eu-001)', the first NAMED_DOCUMENTS named,
    the rest counted."""
    named = ", ".join(documents[:NAMED_DOCUMENTS])
    more = len(documents) - NAMED_DOCUMENTS
    if more > 0:
        named += f" and {more} more"
    return f"{'a document' if len(documents) == 1 else 'documents'} not in this index ({named})"
