"""Learned fusion's corpus views, the documents' periods and the unit index saved beside the saved BM25
(index.derived_saved) and loaded by a fresh workspace: the rankings of a build, nothing rebuilt."""

from __future__ import annotations

import shutil

import pytest

from ragloupe.index import derived_saved
from ragloupe.index.pipeline import save_for_searches
from ragloupe.index.store import Store, open_store
from ragloupe.retrieve import doc_periods, features, units
from ragloupe.retrieve.search import search
from ragloupe.retrieve.doc_periods import PERIODS_FORMAT
from ragloupe.workspace import Workspace, save_search_copies

QUESTIONS = ("What was the total capital expenditure in 2020/21?", "number of staff in the year",
             "How should operators prepare storage tanks for a flood?", "COVID-19 vaccination costs")


def _hits(workspace: Workspace, question: str) -> list[tuple]:
    # At chunk grain: the sentence vectors are not among these copies (the indexer writes them per
    # document, tests/test_sentence_grain.py), and the build in "nowhere" would encode the demo's.
    ranking = search(question, k=10, workspace=workspace, dense_sentence_weight=0)
    return [(h.chunk.chunk_id, h.score) for h in ranking.hits]


def _saved(settings) -> list[str]:
    root = settings.path("index_dir") / derived_saved.SUBDIR
    return sorted(p.name.split("-", 1)[0] for p in root.glob("*.pickle")) if root.is_dir() else []


@pytest.fixture(scope="module")
def saved_copy(demo_index, tmp_path_factory):
    """A copy of the demo index, with its derived files written by the indexer's refresh; the unit view on."""
    root = tmp_path_factory.mktemp("derived")
    shutil.copytree(demo_index.path("index_dir"), root / "index")
    settings = demo_index.replace(index_dir=root / "index", unit_view="all")
    shutil.rmtree(settings.path("index_dir") / derived_saved.SUBDIR, ignore_errors=True)
    save_for_searches(open_store(settings), settings, save_search_copies)
    return settings


def test_indexer_saves_chunks_views_periods_and_units(saved_copy):
    assert _saved(saved_copy) == ["chunks", "periods", "units", "views"]
    root = saved_copy.path("index_dir") / derived_saved.SUBDIR
    assert sorted(p.with_suffix("").name for p in root.glob("*.buffers")) == \
        sorted(p.with_suffix("").name for p in root.glob("*.pickle"))


def test_fresh_workspace_loads_them_and_ranks_as_a_build(saved_copy, embedder, monkeypatch):
    store = open_store(saved_copy)
    built = Workspace.open(saved_copy.replace(index_dir=saved_copy.path("index_dir").parent / "nowhere"),
                      store=store, embedder=embedder)  # its saved copies would live elsewhere: it builds
    expected = {q: _hits(built, q) for q in QUESTIONS}
    for module, name in ((features, "build_views"), (doc_periods, "periods_of"), (units, "build_unit_index"),
                         (Store, "all_chunks")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("built instead of loaded"))
    loaded = Workspace.open(saved_copy, store=store, embedder=embedder)
    loaded.open_dense_index()  # what a starting server runs beside its loads: from the saved chunks

    for question in QUESTIONS:
        assert _hits(loaded, question) == expected[question]
        assert expected[question]
    assert loaded.periods() == built.periods()
    assert list(loaded.chunks()) == list(built.chunks()) and len(loaded.chunks()) == store.count()


def test_a_damaged_saved_file_is_rebuilt_and_saved_again(saved_copy, embedder, tmp_path):
    settings = saved_copy.replace(index_dir=tmp_path / "index")
    shutil.copytree(saved_copy.path("index_dir"), settings.path("index_dir"))
    store = open_store(settings)
    path = derived_saved.saved_path(settings, "periods", store.fingerprint(),
                                    (settings.fiscal_year_start_month,), version=PERIODS_FORMAT)
    path.write_bytes(b"\x80\x05 not a whole pickle")

    periods = Workspace.open(settings, store=store).periods()

    assert periods and periods == Workspace.open(saved_copy, store=open_store(saved_copy)).periods()
    assert derived_saved.load(settings, "periods", store.fingerprint(), (settings.fiscal_year_start_month,),
                              version=PERIODS_FORMAT) == periods


def test_other_content_or_parameters_read_as_nothing(saved_copy):
    fingerprint = open_store(saved_copy).fingerprint()
    month = saved_copy.fiscal_year_start_month

    assert derived_saved.load(saved_copy, "periods", fingerprint, (month,), version=PERIODS_FORMAT)
    assert derived_saved.load(saved_copy, "periods", fingerprint + "-other", (month,), version=PERIODS_FORMAT) is None
    assert derived_saved.load(saved_copy, "periods", fingerprint, (month % 12 + 1,), version=PERIODS_FORMAT) is None
    # saved by a builder of another format: its number was bumped since, so the copy is not read
    assert derived_saved.load(saved_copy, "periods", fingerprint, (month,), version=PERIODS_FORMAT + 1) is None


def test_refresh_after_new_content_drops_the_old_files(saved_copy, tmp_path):
    settings = saved_copy.replace(index_dir=tmp_path / "index")
    old = derived_saved.save(settings, "periods", "earlier-content", (4,), {}, version=PERIODS_FORMAT)
    kept = derived_saved.save(settings, "periods", "current-content", (4,), {}, version=PERIODS_FORMAT)

    derived_saved.prune(settings, "current-content")

    assert not old.exists() and kept.exists()
