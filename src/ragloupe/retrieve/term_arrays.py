"""Learned fusion's per-chunk and per-page terms as compact arrays, made into sets when a candidate asks.

features.CorpusViews held a frozenset of tokens for every page and every chunk
and a ChunkTerms for every chunk: at 300k chunks tens of millions of set entries,
which took most of a minute to unpickle and gigabytes to hold, while a question
reads only its ~100 candidates' rows. Here each is a row of token ids into one
shared table of strings (CSR: one id array, one offsets array), and the
chunk's words and figure positions likewise; the frozensets and the ChunkTerms
a candidate's features read are made from its row when asked for (the same
values as before: the same tokens, the same word ids) and kept for the next
question. Every string (token, word, BM25 vocabulary entry) is held once, in one
``Strings`` table; the word ids, the page vocabulary and the page and section
BM25s' vocabularies are arrays over it (``StringIds``, ``StringSet``), so a load
unpickles one dict of strings instead of five. The arrays pickle out of band
(index.derived_saved maps them from disk).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence, Set
from typing import Callable, Iterator

import numpy as np

from ragloupe.models import Chunk

KEPT = 20000  # rows made into sets and kept per table (a question reads ~100; a tuning sweep ~15,000)


class _Kept:
    """What rows were made into, kept up to KEPT entries (then forgotten all at once)."""

    def __init__(self):
        self._made: dict = {}
        self._lock = threading.Lock()

    def get(self, key, make: Callable):
        found = self._made.get(key)
        if found is None:
            found = make()
            with self._lock:
                if len(self._made) >= KEPT:
                    self._made.clear()
                self._made[key] = found
        return found


class Strings:
    """Every distinct string of the views, each with an id (its place in the table)."""

    def __init__(self, ids: dict[str, int] | None = None):
        self.ids: dict[str, int] = {} if ids is None else ids
        self._names: list[str] | None = None

    def __reduce__(self):
        return (Strings, (self.ids,))

    @property
    def names(self) -> list[str]:
        """id -> string (made once, after the table is complete)."""
        if self._names is None or len(self._names) != len(self.ids):
            self._names = list(self.ids)
        return self._names

    def id(self, text: str) -> int:
        """The id of ``text``, added when new."""
        found = self.ids.get(text)
        if found is None:
            found = self.ids[text] = len(self.ids)
        return found

    def row(self, texts) -> np.ndarray:
        """The ids of ``texts``, each once, in first-seen order (a set's row)."""
        return np.asarray(list(dict.fromkeys(map(self.id, texts))), dtype=np.int32)

    def local(self, mapping: Mapping[str, int]) -> "StringIds":
        """A str -> int mapping (a word-id dict, a BM25 vocabulary) as an array over this table."""
        local = np.full(len(self.ids) + len(mapping), -1, dtype=np.int32)
        for text, value in mapping.items():
            local[self.id(text)] = value
        return StringIds(self, local[:len(self.ids)].copy(), len(mapping))


class StringIds(Mapping):
    """str -> int for some strings of a Strings table (the others are not keys)."""

    def __init__(self, strings: Strings, local: np.ndarray, count: int):
        self.strings, self.local, self.count = strings, local, count

    def __getitem__(self, text: str) -> int:
        at = self.strings.ids[text]
        value = int(self.local[at]) if at < len(self.local) else -1
        if value < 0:
            raise KeyError(text)
        return value

    def __contains__(self, text) -> bool:
        at = self.strings.ids.get(text) if isinstance(text, str) else None
        return at is not None and at < len(self.local) and self.local[at] >= 0

    def __iter__(self) -> Iterator[str]:
        names = self.strings.names
        return (names[i] for i in np.flatnonzero(self.local >= 0).tolist())

    def __len__(self) -> int:
        return self.count


class StringSet(Set):
    """A set of some strings of a Strings table (the page vocabulary): ``terms - it`` is a frozenset."""

    def __init__(self, strings: Strings, member: np.ndarray):
        self.strings, self.member = strings, member

    @classmethod
    def _from_iterable(cls, values):
        return frozenset(values)

    def __contains__(self, text) -> bool:
        at = self.strings.ids.get(text) if isinstance(text, str) else None
        return at is not None and at < len(self.member) and bool(self.member[at])

    def __iter__(self) -> Iterator[str]:
        names = self.strings.names
        return (names[i] for i in np.flatnonzero(self.member).tolist())

    def __len__(self) -> int:
        return int(self.member.sum())

    __hash__ = Set._hash


class TokenSets(Mapping):
    """key -> the frozenset of its tokens, over rows of string ids (the pages' tokens: CorpusViews.unit_tokens)."""

    def __init__(self, row: dict, strings: Strings, ids: np.ndarray, at: np.ndarray):
        self.row, self.strings, self.ids, self.at = row, strings, ids, at
        self._kept = _Kept()

    def __reduce__(self):
        return (TokenSets, (self.row, self.strings, self.ids, self.at))

    def tokens(self, row: int) -> frozenset:
        return frozenset(map(self.strings.names.__getitem__, self.ids[self.at[row]:self.at[row + 1]].tolist()))

    def __getitem__(self, key) -> frozenset:
        row = self.row[key]
        return self._kept.get(row, lambda: self.tokens(row))

    def __contains__(self, key) -> bool:
        return key in self.row

    def __iter__(self) -> Iterator:
        return iter(self.row)

    def __len__(self) -> int:
        return len(self.row)


class ChunkTermTable(Mapping):
    """chunk_id -> features.ChunkTerms, over arrays: each chunk's token ids (into ``tokens.strings``),
    its heading's index in ``headings``, its word ids and the positions of its figures."""

    def __init__(self, tokens: TokenSets, headings: list[frozenset], heading_of: np.ndarray,
                 words: tuple[np.ndarray, np.ndarray], figures: tuple[np.ndarray, np.ndarray],
                 make: Callable):
        self.tokens, self.headings, self.heading_of = tokens, headings, heading_of
        self.words, self.figures, self.make = words, figures, make
        self._kept = _Kept()

    def __reduce__(self):
        return (ChunkTermTable, (self.tokens, self.headings, self.heading_of, self.words, self.figures, self.make))

    def _terms(self, row: int):
        (words, word_at), (figures, figure_at) = self.words, self.figures
        return self.make(self.tokens.tokens(row), self.headings[int(self.heading_of[row])],
                         words[word_at[row]:word_at[row + 1]].astype(np.int64),
                         figures[figure_at[row]:figure_at[row + 1]].astype(np.int64))

    def __getitem__(self, chunk_id: str):
        row = self.tokens.row[chunk_id]
        return self._kept.get(row, lambda: self._terms(row))

    def __contains__(self, chunk_id) -> bool:
        return chunk_id in self.tokens.row

    def __iter__(self) -> Iterator[str]:
        return iter(self.tokens.row)

    def __len__(self) -> int:
        return len(self.tokens.row)


class TextlessRows(Sequence):
    """The rows of a whole-page or whole-section BM25 once built: text-less stand-ins for the merged
    pseudo-chunks it was built from (their texts were the corpus once more, and a question reads
    only the BM25's scores and the row numbers)."""

    def __init__(self, keys: list[str], docs: list[str], doc_of: np.ndarray, pages: np.ndarray):
        self.keys, self.docs, self.doc_of, self.pages = keys, docs, doc_of, pages

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return Chunk(chunk_id=self.keys[i], doc_id=self.docs[int(self.doc_of[i])], page=int(self.pages[i]), position=0,
                     text="", n_tokens=0, quality="clean")
