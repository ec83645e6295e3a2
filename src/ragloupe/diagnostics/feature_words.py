"""Learned fusion's features in plain words, for "Why this rank".

retrieve/features.py names the features; this says what each one measures
to someone who has not read it, and turns a logit contribution into a
sentence. One table, so a test can check that every feature a model uses
has its words.
"""

from __future__ import annotations

FEATURE_WORDS = {
    "dense_rr": "how high the dense engine ranked the chunk (1 / its rank)",
    "dense_gap": "how far the chunk's cosine similarity is below the best chunk's",
    "dense_missing": "the dense engine did not list the chunk",
    "bm25_rr": "how high the BM25 engine ranked the chunk (1 / its rank)",
    "bm25_rel": "the chunk's BM25 score as a share of the best chunk's",
    "bm25_missing": "the BM25 engine did not list the chunk",
    "page_bm25_rel": "how well the whole page (or record) matches the question's words, against the best page",
    "section_bm25_rel": "how well the chunk's whole section matches the question's words, against the best section",
    "heading_match": "share of the question's words in the chunk's section heading and title",
    "term_share": "share of the question's words in the chunk's own text",
    "page_term_share": "share of the question's words anywhere on the chunk's page (or record)",
    "number_match": "share of the question's numbers found in the chunk",
    "page_number_match": "share of the question's numbers found anywhere on its page",
    "label_match": "the question's words just before a figure in the chunk (a table row's label)",
    "caps_heading_match": "share of the question's words in the page's upper-case headings",
    "period_in_chunk": "the chunk names the year or period the question asks about",
    "doc_period_match": "the chunk's document reports on the period the question asks about",
    "amount_match": "share of the question's amounts found in the chunk",
    "code_match": "share of the question's codes (e.g. standard numbers) found in the chunk",
    "is_table": "the chunk is a table",
    "first_on_page": "the chunk is the first on its page",
    "length": "the chunk's length (tokens / 256)",
    "dense_rr_x_agree": "the dense engine's rank, weighted by how much the two engines' top 10s agree",
    "bm25_rr_x_agree": "the BM25 engine's rank, weighted by how much the two engines' top 10s agree",
    "dense_rr_x_peak": "the dense engine's rank, weighted by how clearly its best hit stands out",
    "bm25_rr_x_peak": "the BM25 engine's rank, weighted by how clearly its best hit stands out",
    "dense_rr_x_unseen": "the dense engine's rank, weighted by the share of question words no page holds",
    "bm25_rr_x_unseen": "the BM25 engine's rank, weighted by the share of question words no page holds",
}


def feature_words(name: str) -> str:
    """What a feature measures, in words (its own name when it has none yet)."""
    return FEATURE_WORDS.get(name, name)


def contribution_words(contribution: float) -> str:
    """'raised the score by 0.82' / 'lowered the score by 0.31' / 'no effect' (on the logit scale)."""
    if abs(contribution) < 0.0005:
        return "no effect"
    return f"{'raised' if contribution > 0 else 'lowered'} the score by {abs(contribution):.3f} (logit)"
