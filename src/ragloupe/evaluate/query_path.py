"""The path one evaluation question took to its ranking, kept in the run report.

A report that keeps only ranked units cannot tell a retrieval miss from a
rewrite that drifted: each query therefore records what the engines were
actually asked (the question, the LLM rewrite when one was asked for and
whether it was used, the BM25 expansion, the final search text) and the ids
of the chunks they retrieved.
"""

from __future__ import annotations

from ragloupe.models import Ranking


def query_path(ranking: Ranking | None) -> dict:
    """The question, its rewrite, the BM25 expansion and the final search text of ``ranking``.

    A question whose document is not in the index has no ranking: every field is empty.
    """
    if ranking is None:
        return {"question": None, "rewritten": None, "rewrite_used": False, "rewrite_note": "",
                "bm25_expansion": [], "final": None}
    # A rewrite that is used is appended to the question, never substituted (retrieve.rewrite).
    final = f"{ranking.query}\n{ranking.rewrite}" if ranking.rewrite_used and ranking.rewrite else ranking.query
    return {"question": ranking.query, "rewritten": ranking.rewrite, "rewrite_used": ranking.rewrite_used,
            "rewrite_note": ranking.rewrite_note,
            "bm25_expansion": list(ranking.query_analysis.get("bm25_expansion", [])), "final": final}


def retrieved_chunk_ids(ranking: Ranking | None, depth: int) -> list[str]:
    """The ids of the first ``depth`` chunks retrieved, best first."""
    return [hit.chunk.chunk_id for hit in ranking.hits[:depth]] if ranking else []
