"""Every chunk as columns (index.chunk_columns), saved beside the BM25 (index.derived_saved) and read
back by a restarted process instead of Chroma's metadata table: the same chunks, field for field."""

from __future__ import annotations

from ragloupe.index import derived_saved, lexical, lexical_saved
from ragloupe.index.chunk_columns import FORMAT, ChunkColumns
from ragloupe.models import Chunk
from ragloupe.retrieve.engines import ChunkTable

CHUNKS = [  # in reading order, as Store.all_chunks gives them; ids out of that order on purpose
    Chunk(chunk_id="z-9", doc_id="accounts", page=1, position=0, text="Provisions £1,559,285 – 2020/21",
          n_tokens=7, quality="clean", section="7A. PROVISIONS", method="pypdf-plain", source_sha256="ab"),
    Chunk(chunk_id="a-1", doc_id="accounts", page=1, position=1, text="| Year | 2021 |\n|---|---|", n_tokens=9,
          quality="degraded", reason="few words", kind="table", table_index=0, row_start=0, row_end=3,
          context="Accounts › Notes"),
    Chunk(chunk_id="m-5", doc_id="natech", page=4, position=0, text="", n_tokens=0, quality="clean",
          record_id="R-17", title="Flood at a tank farm", section="Flood"),
    Chunk(chunk_id="b-2", doc_id="natech", page=5, position=0, text="Lightning struck the roof ☇", n_tokens=5,
          quality="clean", record_id="R-18", title="Lightning"),
]


def test_the_columns_give_back_every_chunk_field_for_field_in_both_orders():
    columns = ChunkColumns.of(CHUNKS)

    assert list(columns.reading_order()) == CHUNKS
    assert list(columns) == sorted(CHUNKS, key=lambda c: c.chunk_id)
    assert columns.chunk_ids == ["a-1", "b-2", "m-5", "z-9"]
    assert columns.reading_order()[1:3] == CHUNKS[1:3] and columns.reading_order()[-1] == CHUNKS[-1]
    assert columns[0] is columns[0] is columns.reading_order()[1]  # made once, then the same object


def test_the_dense_engines_look_ups_equal_a_table_of_every_chunk():
    columns, table = ChunkColumns.of(CHUNKS), ChunkTable.of(CHUNKS)

    assert dict(columns.by_doc()) == dict(table.by_doc) == {"accounts": ("z-9", "a-1"), "natech": ("m-5", "b-2")}
    assert dict(columns.by_id()) == dict(table.by_id)
    assert "nowhere" not in columns.by_id() and columns.by_doc().get("nowhere") is None


def test_a_bm25_over_columns_has_the_filter_arrays_of_one_over_chunks(settings):
    columns = ChunkColumns.of(CHUNKS)
    built = lexical.build_index(CHUNKS)
    lexical_saved.save(built, settings, "c" * 16)

    loaded = lexical_saved.load(settings, "c" * 16, columns, built.k1, built.b, built.backend)

    assert loaded is not None and loaded.chunks is columns
    for name in ("doc_codes", "quality_codes"):
        assert getattr(loaded, name).names == getattr(built, name).names
        assert getattr(loaded, name).codes.dtype == getattr(built, name).codes.dtype
        assert getattr(loaded, name).codes.tolist() == getattr(built, name).codes.tolist()
    assert loaded.pages.dtype == built.pages.dtype and loaded.pages.tolist() == built.pages.tolist()
    assert loaded.mask({"doc_ids": ["natech"], "quality": ["clean"]}).tolist() == \
        built.mask({"doc_ids": ["natech"], "quality": ["clean"]}).tolist()
    assert lexical.search(loaded, "provisions lightning", 5) == lexical.search(built, "provisions lightning", 5)


def test_saved_columns_load_as_the_same_chunks_and_a_damaged_copy_reads_as_missing(settings):
    path = derived_saved.save(settings, "chunks", "d" * 16, (), ChunkColumns.of(CHUNKS), version=FORMAT)

    loaded = derived_saved.load(settings, "chunks", "d" * 16, (), version=FORMAT)
    assert isinstance(loaded, ChunkColumns) and list(loaded.reading_order()) == CHUNKS

    buffers = derived_saved.buffers_path(path)
    buffers.write_bytes(buffers.read_bytes()[:-5])  # cut short
    assert derived_saved.load(settings, "chunks", "d" * 16, (), version=FORMAT) is None
    derived_saved.save(settings, "chunks", "d" * 16, (), ChunkColumns.of(CHUNKS[:2]), version=FORMAT)
    other = buffers.read_bytes()
    derived_saved.save(settings, "chunks", "d" * 16, (), ChunkColumns.of(CHUNKS), version=FORMAT)
    buffers.write_bytes(other)  # the arrays of another write beside this header
    assert derived_saved.load(settings, "chunks", "d" * 16, (), version=FORMAT) is None


def test_an_empty_store_has_empty_columns(settings):
    columns = ChunkColumns.of([])

    assert len(columns) == 0 and list(columns.reading_order()) == [] and dict(columns.by_doc()) == {}
    assert list(columns.strings("doc_id")) == [] and len(columns.integers("page")) == 0


def test_older_copies_of_the_chunks_go_with_their_arrays(settings):
    for fingerprint in ("a" * 16, "b" * 16, "c" * 16):
        derived_saved.load_or_build(settings, "chunks", fingerprint, (), lambda: ChunkColumns.of(CHUNKS),
                                    version=FORMAT)

    root = settings.path("index_dir") / derived_saved.SUBDIR
    kept = derived_saved.KEEP_SAVED["chunks"]
    assert len(list(root.glob("chunks-*.pickle"))) == len(list(root.glob("chunks-*.buffers"))) == kept < 3
    assert derived_saved.load(settings, "chunks", "c" * 16, (), version=FORMAT) is not None  # the current one stays
