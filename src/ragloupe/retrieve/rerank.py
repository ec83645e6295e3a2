"""Rerankers: a lexical/structural one that needs no model, and a CrossEncoder when configured.

Both return one score per candidate; ``reorder`` turns those scores into the
new order and the rank change each candidate saw, the same way for both.

The lexical reranker rewards what technical questions hinge on and dense
embeddings blur: the query's numbers and codes appearing verbatim in the
chunk, its named entities, numeric density when the question asks for a
figure, and the chunk's section heading echoing the question. It blends that
with the fused score it is given, so it nudges an order rather than
replacing it. Off by default (Settings.lexical_rerank): on the 150 Grampian
gold questions, with RRF over 50 candidates, hybrid+rerank at weight 0.3
scored Hit@1 0.607 against hybrid's 0.687 (`ragloupe eval
data/benchmarks/grampian/eval/*.eval.json --mode hybrid+rerank --set
fusion=rrf --set candidate_window=50 --set weight_dense=1`); the
evaluation sweeps its weight (benchmarks/tune_defaults.py).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from ragloupe.errors import RerankerUnavailable
from ragloupe.index.lexical import STOPWORDS, tokenize
from ragloupe.models import Chunk

# How the four lexical signals are mixed into one score in [0, 1]. Codes and
# numbers weigh most: an exact "2012/18/EU" or "£769" is the strongest
# evidence a chunk is the one asked about.
SIGNAL_WEIGHTS = {"codes": 0.4, "entities": 0.3, "numeric": 0.2, "section": 0.1}

# A chunk in which a fifth of the tokens are figures reads as a table.
_TABLE_DENSITY = 0.2

_NUMERIC_QUESTION = re.compile(
    r"\b(how (much|many|long)|what (was|were|is|are) the (total|amount|number|value|"
    r"percentage|cost|figure|level)|amount|total|number of|percentage|proportion|"
    r"cost|spend|spent|budget|surplus|deficit|value|figure|rate)\b|[£$€%]",
    re.IGNORECASE)
_TABLE_HINT = re.compile(r"\b(table|tabulated|figures?|breakdown)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QuerySignals:
    """What the lexical reranker looks for, read once from the question."""

    codes: frozenset[str]  # tokens with a digit: numbers, amounts, standards, identifiers
    entities: frozenset[str]  # capitalised words and acronyms (as lower-cased tokens)
    words: frozenset[str]  # every content token
    numeric: bool  # the question asks for a figure
    wants_table: bool
    finders: tuple[tuple[str, str, re.Pattern], ...]  # (token, cheap substring, pattern) per term


def is_code(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


def query_signals(query: str) -> QuerySignals:
    tokens = tokenize(query)
    entities: set[str] = set()
    # Capitalised words after the first, and acronyms anywhere: "NHS", "Grampian", "Seveso".
    words = re.findall(r"[^\W\d_][\w'-]*", query)
    for position, word in enumerate(words):
        if (word.isupper() and len(word) > 1) or (position > 0 and word[0].isupper()):
            entities.update(t for t in tokenize(word) if t not in STOPWORDS)
    codes = frozenset(t for t in tokens if is_code(t))
    # "ISO" in "ISO 31000" is part of a code, not an entity of its own.
    entities = {e for e in entities if not any(e in code for code in codes)}
    finders = tuple((term, term.split(" ")[0].rstrip("%"),
                     re.compile(r"(?<![\w£$€])" + _term_pattern(term) + r"(?!\w)"))
                    for term in sorted(codes | entities))
    return QuerySignals(
        codes=codes, entities=frozenset(entities), words=frozenset(tokens),
        numeric=bool(_NUMERIC_QUESTION.search(query)),
        wants_table=bool(_TABLE_HINT.search(query)), finders=finders)


def _term_pattern(token: str) -> str:
    """A token as it may be spelled in running text: 'iso 31000' also matches 'ISO-31000',
    '10 mm' also '10mm', '90%' also '90 %'."""
    if token.endswith("%"):
        return re.escape(token[:-1]) + r"\s?%"
    return r"[\s-]?".join(re.escape(part) for part in token.split(" "))


# Figures in running text, counted without tokenizing (the reranker runs per query).
_FIGURE = re.compile(r"(?<![\w.])[£$€]?\d[\d,.]*%?")


def lexical_signals(signals: QuerySignals, chunk: Chunk) -> dict[str, float]:
    """Each signal in [0, 1] for one chunk (the explanation behind its lexical score).

    The chunk is searched for the query's terms rather than tokenized: this
    runs on every candidate of every query, and tokenizing costs ~1 ms a chunk.
    """
    text = chunk.text.lower()
    # A plain substring test first (fast, in C); the boundary-aware pattern only when it passes.
    found = {term for term, cheap, pattern in signals.finders if cheap in text and pattern.search(text)}
    n_words = len(text.split())
    figures = len(_FIGURE.findall(text))
    heading = set(tokenize(f"{chunk.section} {chunk.title}"))
    return {
        "codes": _share(signals.codes, found),
        "entities": _share(signals.entities, found),
        "numeric": min(1.0, figures / n_words / _TABLE_DENSITY)
        if (n_words and (signals.numeric or signals.wants_table)) else 0.0,
        "section": _share(signals.words, heading) if heading else 0.0,
    }


def _share(wanted: frozenset[str], present: set[str]) -> float:
    return len(wanted & present) / len(wanted) if wanted else 0.0


def lexical_scores(query: str, chunks: Sequence[Chunk], prior: Sequence[float],
                   weight: float = 0.3) -> list[float]:
    """(1 - weight) * min-max normalised prior + weight * lexical score, per chunk.

    ``prior`` is the score the candidates arrived with (fused, or one
    engine's); it is normalised over the candidates so the blend means the
    same for RRF, cosine or BM25 scores.
    """
    signals = query_signals(query)
    low, high = (min(prior), max(prior)) if prior else (0.0, 0.0)
    span = high - low
    scores = []
    for chunk, before in zip(chunks, prior):
        normalised = (before - low) / span if span > 0 else 1.0
        parts = lexical_signals(signals, chunk)
        lexical = sum(SIGNAL_WEIGHTS[name] * value for name, value in parts.items())
        scores.append((1.0 - weight) * normalised + weight * lexical)
    return scores


# ----------------------------------------------------------------------------
# Cross-encoder

_CROSS_ENCODERS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def get_cross_encoder(model_name: str, device: str = "auto") -> Any:
    """A sentence-transformers CrossEncoder, loaded once per process per name (or path) and
    device; ``device`` is a RAGLOUPE_DEVICE value (auto: a GPU when torch sees one)."""
    from ragloupe.devices import resolve_device

    device = resolve_device(device)
    with _LOCK:
        model = _CROSS_ENCODERS.get((model_name, device))
        if model is None:
            from sentence_transformers import CrossEncoder

            try:
                model = CrossEncoder(model_name, device=device)
            except Exception as exc:  # OSError, ValueError, hub errors: all mean "not on disk"
                raise RerankerUnavailable(
                    f"cannot load cross-encoder {model_name!r} offline ({type(exc).__name__}); "
                    "give a local path or a model already in the Hugging Face cache, "
                    "or leave RAGLOUPE_CROSS_ENCODER_MODEL empty") from exc
            _CROSS_ENCODERS[(model_name, device)] = model
    return model


def cross_encoder_scores(query: str, chunks: Sequence[Chunk], model_name: str,
                         batch_size: int = 16, device: str = "auto") -> list[float]:
    """The cross-encoder's relevance score of each chunk for the query."""
    if not chunks:
        return []
    model = get_cross_encoder(model_name, device)
    scores = model.predict([(query, chunk.text) for chunk in chunks],
                           batch_size=batch_size, show_progress_bar=False)
    return [float(s) for s in scores]


# ----------------------------------------------------------------------------
# Reordering, shared by both rerankers


@dataclass(frozen=True)
class Reordered:
    id: str
    score: float
    change: int  # old rank - new rank: positive means it moved up


def reorder(ids: Sequence[str], scores: Sequence[float]) -> list[Reordered]:
    """Sort ids (given in their old order, best first) by the reranker's scores.

    Equal scores keep their old relative order, so a reranker that cannot
    tell two chunks apart leaves them as fusion had them.
    """
    if len(ids) != len(scores):
        raise ValueError("reorder needs one score per id")
    order = sorted(range(len(ids)), key=lambda i: (-scores[i], i))
    return [Reordered(ids[old], float(scores[old]), old - new)
            for new, old in enumerate(order)]
