"""BM25 expansion: index tokens for the other written forms of what a question names.

A question's periods ("2020/21"), codes ("ISO 31000") and amounts ("£0.4m"), read by
query_analysis.analyze, are added to the BM25 query in the forms the documents may write
them ("2020-21", "iso31000", "£400,000"), so BM25 finds the same thing spelled otherwise.
"""

from __future__ import annotations

from ragloupe.index.lexical import normalise, tokenize
from ragloupe.numbers import Quantity
from ragloupe.retrieve.query_analysis import QueryAnalysis


def bm25_expansion(analysis: QueryAnalysis) -> list[str]:
    """Index tokens for the written variants of what the question names, minus those it already has.

    Only whole-term tokens are added ("2020-21", not its parts "2020" and "21";
    "iso31000" beside "iso 31000"; "£0.4m" beside "£400,000"), so the
    expansion asks BM25 for the same thing spelled the other ways, and
    nothing broader.
    """
    own = set(tokenize(analysis.query))
    wanted: list[str] = []
    for period in sorted(analysis.named_periods):
        wanted += [_whole_token(v) for v in period.variants()]
    for code in analysis.codes:
        wanted += [_whole_token(v) for v in code.variants()]
    for quantity in analysis.amounts:
        wanted += [_whole_token(v) for v in amount_variants(quantity)]
    return [t for t in dict.fromkeys(wanted) if t and t not in own]


def _whole_token(variant: str) -> str:
    """The one token the index tokenizer makes of ``variant`` as a whole, or '' when it splits it."""
    tokens = tokenize(variant)
    whole = normalise(variant).strip()
    if whole in tokens:
        return whole
    return tokens[0] if len(tokens) == 1 else ""


def amount_variants(quantity: Quantity) -> tuple[str, ...]:
    """Notations of the same amount: '£1.2m', '£1,200,000', '1,200,000', and '1,200' as a £000 table writes it."""
    if quantity.percent:
        return (f"{_plain(quantity.value)}%",)
    value = quantity.scaled
    sign = quantity.currency
    forms = [f"{sign}{value:,.0f}" if value == int(value) else f"{sign}{value:,}"]
    if value >= 1e5 and round(value / 1e6, 3) == value / 1e6:
        forms.append(f"{sign}{_plain(value / 1e6)}m")
    if value >= 1e6 and value % 1e3 == 0:
        forms.append(f"{value / 1e3:,.0f}")  # a "£000" table column; "400" alone would match anything
    if value >= 1e3 and value == int(value):
        forms.append(f"{value:,.0f}")
    return tuple(dict.fromkeys(forms))


def _plain(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")
