"""Every chunk of a store in columns: what a (re)started process reads instead of Chroma's metadata table.

Reading every chunk back from Chroma was most of a restart (300k chunks: 103 s of
CPU), and 300k Chunk objects are 300k frozen dataclasses built before the first
answer. ``ChunkColumns`` holds the same chunks as arrays: every text in one
UTF-8 byte array with its offsets, each string field as codes into its distinct
values, the integer fields as one integer array, the chunk ids as a list. It is
saved beside the saved BM25 (index.derived_saved, kind "chunks", keyed by the
store's content fingerprint), whose arrays are mapped from disk when loaded, so
a restart builds no chunk at all: a Chunk is made when it is asked for (the BM25's
hits, a candidate's features) and kept.

The rows are in chunk id order, the order of the chunk BM25 (lexical.build_index),
so the columns are its chunk list as they are; ``reading_order()`` is the same
chunks in Store.all_chunks's order, what Workspace.chunks() returns. ``by_id()`` and
``by_doc()`` are the dense engine's look-ups (engines.ChunkTable), made without
building every chunk either.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Iterator

import numpy as np

from ragloupe.models import Chunk

# Chunk's fields besides chunk_id and text: strings as codes into their distinct values, then integers.
STRINGS = ("doc_id", "quality", "section", "reason", "method", "record_id", "title", "source_sha256",
           "context", "kind")
INTEGERS = ("page", "position", "n_tokens", "table_index", "row_start", "row_end")
# The format of ChunkColumns as index.derived_saved keeps it: bump it by hand when the columns change.
FORMAT = 1
_DOC = STRINGS.index("doc_id")


class ChunkColumns(Sequence):
    """The chunks of one store content, in chunk id order, made into Chunk objects when asked for."""

    def __init__(self, ids: list[str], text: np.ndarray, text_at: np.ndarray, codes: np.ndarray,
                 values: tuple[list[str], ...], integers: np.ndarray, reading: np.ndarray):
        self.chunk_ids = ids  # row -> chunk id (sorted)
        self._text, self._text_at = text, text_at  # UTF-8 bytes of every text; row i is [at[i], at[i+1])
        self._codes, self._values = codes, values  # (rows x STRINGS) codes; each field's distinct values
        self._integers = integers  # (rows x INTEGERS)
        self._reading = reading  # the rows in reading order
        self._made: list[Chunk | None] = [None] * len(ids)
        self._lock = threading.Lock()
        self._row: dict[str, int] | None = None
        self._docs: dict[str, np.ndarray] | None = None
        self._doc_ids: dict[str, tuple[str, ...]] = {}
        self._in_reading_order: ReadingOrder | None = None

    @classmethod
    def of(cls, chunks: Sequence[Chunk]) -> "ChunkColumns":
        """The columns of ``chunks`` (in reading order, as Store.all_chunks gives them)."""
        by_id = sorted(range(len(chunks)), key=lambda i: chunks[i].chunk_id)
        rows = [chunks[i] for i in by_id]
        reading = np.empty(len(rows), dtype=np.int64)  # reading position -> its row
        reading[np.asarray(by_id, dtype=np.int64)] = np.arange(len(rows), dtype=np.int64)
        encoded = [c.text.encode("utf-8") for c in rows]
        text_at = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum([len(e) for e in encoded], out=text_at[1:])
        codes = np.zeros((len(rows), len(STRINGS)), dtype=np.int32)
        values = []
        for column, name in enumerate(STRINGS):
            distinct: dict[str, int] = {}
            codes[:, column] = [distinct.setdefault(getattr(c, name), len(distinct)) for c in rows]
            values.append(list(distinct))
        integers = np.asarray([[getattr(c, name) for name in INTEGERS] for c in rows],
                              dtype=np.int64).reshape(len(rows), len(INTEGERS))
        text = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
        return cls([c.chunk_id for c in rows], text, text_at, codes, tuple(values), integers, reading)

    def __reduce__(self):
        """Pickled as its arrays (index.derived_saved writes them out of band), not its made chunks."""
        return (ChunkColumns, (self.chunk_ids, self._text, self._text_at, self._codes, self._values,
                               self._integers, self._reading))

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def __getitem__(self, row):
        if isinstance(row, slice):
            return [self.chunk(i) for i in range(*row.indices(len(self)))]
        return self.chunk(range(len(self))[row])

    def __iter__(self) -> Iterator[Chunk]:
        return (self.chunk(i) for i in range(len(self)))

    def chunk(self, row: int) -> Chunk:
        """The Chunk of a row, made on first use and kept (the same object every time)."""
        made = self._made[row]
        if made is None:
            strings = [values[code] for values, code in zip(self._values, self._codes[row].tolist())]
            start, end = self._text_at[row:row + 2].tolist()
            made = Chunk(chunk_id=self.chunk_ids[row], text=self._text[start:end].tobytes().decode("utf-8"),
                         **dict(zip(STRINGS, strings)), **dict(zip(INTEGERS, self._integers[row].tolist())))
            self._made[row] = made
        return made

    def strings(self, name: str) -> np.ndarray:
        """One string field of every row, as a fixed-width unicode array (what np.array(..., dtype=str) gives)."""
        values = np.array(self._values[STRINGS.index(name)], dtype=str)
        return values[self._codes[:, STRINGS.index(name)]] if len(self) else np.array([], dtype=str)

    def codes(self, name: str) -> tuple[dict[str, int], np.ndarray]:
        """One string field as (each distinct value -> its code, every row's code), the values coded
        in the order rows first hold them (what lexical.Codes.of over the rows gives)."""
        column = STRINGS.index(name)
        return ({v: i for i, v in enumerate(self._values[column])},
                np.ascontiguousarray(self._codes[:, column], dtype=np.int32))

    def integers(self, name: str) -> np.ndarray:
        """One integer field of every row (int64)."""
        return np.ascontiguousarray(self._integers[:, INTEGERS.index(name)])

    def row_of(self, chunk_id: str) -> int | None:
        if self._row is None:
            with self._lock:
                if self._row is None:
                    self._row = {chunk_id: row for row, chunk_id in enumerate(self.chunk_ids)}
        return self._row.get(chunk_id)

    def reading_order(self) -> "ReadingOrder":
        """The same chunks in Store.all_chunks's order (the same object every call)."""
        if self._in_reading_order is None:
            self._in_reading_order = ReadingOrder(self)
        return self._in_reading_order

    def by_id(self) -> "ChunksById":
        return ChunksById(self)

    def by_doc(self) -> "ChunkIdsByDoc":
        return ChunkIdsByDoc(self)

    def doc_rows(self) -> dict[str, np.ndarray]:
        """doc_id -> its rows in reading order."""
        if self._docs is None:
            with self._lock:
                if self._docs is None:
                    codes = self._codes[self._reading, _DOC]
                    order = np.argsort(codes, kind="stable")
                    bounds = np.searchsorted(codes[order], np.arange(len(self._values[_DOC]) + 1))
                    rows = self._reading[order]
                    self._docs = {doc: rows[bounds[i]:bounds[i + 1]]
                                  for i, doc in enumerate(self._values[_DOC]) if bounds[i + 1] > bounds[i]}
        return self._docs

    def doc_chunk_ids(self, doc_id: str) -> tuple[str, ...] | None:
        found = self._doc_ids.get(doc_id)
        if found is None:
            rows = self.doc_rows().get(doc_id)
            if rows is None:
                return None
            found = self._doc_ids[doc_id] = tuple(self.chunk_ids[r] for r in rows.tolist())
        return found


class ReadingOrder(Sequence):
    """A ChunkColumns's chunks in reading order (doc_id, page, record_id, position, chunk_id)."""

    def __init__(self, columns: ChunkColumns):
        self.columns = columns

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, i):
        reading = self.columns._reading
        if isinstance(i, slice):
            return [self.columns.chunk(r) for r in reading[i].tolist()]
        return self.columns.chunk(int(reading[i]))

    def __iter__(self) -> Iterator[Chunk]:
        return (self.columns.chunk(r) for r in self.columns._reading.tolist())


class ChunksById(Mapping):
    """chunk_id -> Chunk over the columns (ChunkTable.by_id)."""

    def __init__(self, columns: ChunkColumns):
        self.columns = columns

    def __getitem__(self, chunk_id: str) -> Chunk:
        row = self.columns.row_of(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return self.columns.chunk(row)

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.columns.row_of(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns.chunk_ids)

    def __len__(self) -> int:
        return len(self.columns)


class ChunkIdsByDoc(Mapping):
    """doc_id -> its chunk ids in reading order (ChunkTable.by_doc)."""

    def __init__(self, columns: ChunkColumns):
        self.columns = columns

    def __getitem__(self, doc_id: str) -> tuple[str, ...]:
        found = self.columns.doc_chunk_ids(doc_id) if isinstance(doc_id, str) else None
        if found is None:
            raise KeyError(doc_id)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns.doc_rows())

    def __len__(self) -> int:
        return len(self.columns.doc_rows())


def ids_of(chunks: Sequence[Chunk]) -> list[str]:
    """The chunk ids of ``chunks`` in order, without making every chunk of columns."""
    return list(chunks.chunk_ids) if isinstance(chunks, ChunkColumns) else [c.chunk_id for c in chunks]
