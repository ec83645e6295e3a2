"""Shared fixtures: isolated data directories, the bundled embedder, the demo index.

Fixtures
--------
isolated_dirs (autouse, function)
    Points RAGLOUPE_INDEX_DIR / RAGLOUPE_RUNS_DIR / RAGLOUPE_RAW_DIR /
    RAGLOUPE_LOGS_DIR / RAGLOUPE_COLLECTIONS_DIR at fresh directories under the test's tmp_path, and
    blanks CHROMA_HOST, so no test ever reads or writes the user's data/ and
    nothing reaches for a Chroma server by accident. Returns the dict of paths.

settings (function)
    ``Settings.from_env()`` as seen inside the test, i.e. with the isolated
    directories above. Build variations with ``settings.replace(...)``.

embedder (session)
    The bundled all-MiniLM-L6-v2 ``Embedder`` (loaded once per session;
    ``get_embedder`` caches it per model name, so pipeline code that asks for
    it gets the same object).

demo_index (session)
    Settings of an index of the shipped demo corpus (the three Grampian PDFs,
    natech/guidance.csv and five ICDAR 2013 EU PDFs with real tables: the
    Makefile's DEMO_SOURCES), built ONCE per session into a session tmp dir
    (or copied from pytest's cache when nothing it depends on changed; see
    the fixture's docstring; ``--cache-clear`` forces a rebuild).
    Treat it as read-only: a test that adds or deletes documents must build
    its own small index instead. Its ``index_dir``/``runs_dir``/``raw_dir``
    are absolute tmp paths; pass the settings explicitly
    (``search(..., workspace=workspace_of(demo_index))``), or use ``demo_env``.

workspace_of (session)
    ``workspace_of(settings)``: the session's Workspace of that index location
    (with the session embedder); pass it as ``workspace=`` to search(),
    evaluate() or tune() when a test asks one index many questions.

demo_env (function)
    Sets RAGLOUPE_INDEX_DIR to the demo index (runs and raw stay isolated
    per test) so code that calls ``get_settings()`` itself — the CLI, the
    app — sees the demo corpus. Returns ``Settings.from_env()``.

small_corpus (function)
    A fresh directory with two small sources that index in seconds:
    ``notes.csv`` (three records with id/title/text) and ``report.pdf`` (a
    four-page text PDF with a running header and a page footer, written by
    tests/pdf_factory.py). Tests may modify or delete them. Use
    ``write_records(path, rows)`` to write more records files.

DEMO_SOURCES
    The paths the demo index was built from, for tests that need them.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import os
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

import pytest

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment

bootstrap_environment()

BENCHMARKS = PROJECT_ROOT / "data" / "benchmarks"
# The Makefile's DEMO_SOURCES: five ICDAR 2013 EU PDFs bring real ruled and unruled tables.
DEMO_TABLE_PDFS = tuple(BENCHMARKS / "icdar2013-eu" / "pdf" / f"eu-{n}.pdf" for n in ("001", "004", "013", "017", "027"))
DEMO_SOURCES = (BENCHMARKS / "grampian" / "pdf", BENCHMARKS / "natech" / "guidance.csv", *DEMO_TABLE_PDFS)
# The demo index's documents, one per file of DEMO_SOURCES (a folder's PDFs, each file itself).
DEMO_DOC_IDS = tuple(sorted(p.stem for root in DEMO_SOURCES for p in ([root] if root.is_file() else root.glob("*.pdf"))))

_DIR_VARS = {
    "index_dir": "RAGLOUPE_INDEX_DIR",
    "runs_dir": "RAGLOUPE_RUNS_DIR",
    "raw_dir": "RAGLOUPE_RAW_DIR",
    "logs_dir": "RAGLOUPE_LOGS_DIR",
    "collections_dir": "RAGLOUPE_COLLECTIONS_DIR",  # named collections (ragloupe.collections)
}


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Every test gets its own index, runs, raw and logs directories."""
    paths = {}
    for name, var in _DIR_VARS.items():
        path = tmp_path / "ragloupe" / name.removesuffix("_dir")
        path.mkdir(parents=True)
        monkeypatch.setenv(var, str(path))
        paths[name] = path
    # An empty value in the environment beats a CHROMA_HOST in a developer's .env.
    monkeypatch.setenv("CHROMA_HOST", "")
    return paths


@pytest.fixture
def settings(isolated_dirs: dict[str, Path]) -> Settings:
    return Settings.from_env()


@pytest.fixture(scope="session")
def embedder():
    from ragloupe.index.embedder import get_embedder

    return get_embedder(Settings.from_env(chroma_host=""))


@pytest.fixture(scope="session")
def workspace_of(embedder):
    """``workspace_of(settings)``: one Workspace (ragloupe.workspace) per index location for the
    session, with the session embedder, as a face keeps one: the tests that search or evaluate
    an index many times share its BM25, periods and corpus views instead of rebuilding them per
    call; each comes under the settings asked with (Workspace.with_settings)."""
    from ragloupe.workspace import Workspace

    held: dict[tuple, Workspace] = {}

    def of(settings: Settings) -> Workspace:
        key = (str(settings.path("index_dir")), settings.collection, settings.chroma_host, settings.chroma_port)
        if key not in held:
            held[key] = Workspace.open(settings, embedder=embedder)
        return held[key].with_settings(settings)

    return of


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config, embedder) -> Settings:
    """Index the shipped demo corpus once per session; return its Settings.

    Embedding ~1,300 chunks is most of the cost, so a built index is kept in
    pytest's cache (.pytest_cache, git-ignored) under a key that changes
    with the demo files, the settings that shape the index, the code of
    ingest / chunking / index, and the library versions; a later session
    with the same key copies it instead of re-embedding. A fresh clone, CI,
    ``--cache-clear`` or ``-p no:cacheprovider`` builds it from scratch.
    """
    root = tmp_path_factory.mktemp("demo")
    demo_settings = Settings.from_env(
        index_dir=root / "index", runs_dir=root / "runs", raw_dir=root / "raw",
        logs_dir=root / "logs", chroma_host="")
    for name in ("runs_dir", "raw_dir", "logs_dir"):
        demo_settings.path(name).mkdir(parents=True, exist_ok=True)
    built = _built_once(tmp_path_factory, pytestconfig, embedder.backend)
    shutil.copytree(built.path("index_dir"), demo_settings.path("index_dir"),
                    ignore=shutil.ignore_patterns(".lock"))
    return demo_settings


def _built_once(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config,
                backend: str) -> Settings:
    """The demo index of this run, built (or copied from pytest's cache) by whichever test
    process needs it first; `make test` runs two (pytest-xdist), and the second waits on a
    file lock for the first instead of embedding the corpus again. Each process then works
    on a copy of its own, as Chroma wants one process per directory."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "demo-built"
    built = Settings.from_env(index_dir=shared / "index", runs_dir=shared / "runs", raw_dir=shared / "raw",
                              logs_dir=shared / "logs", chroma_host="")
    with _exclusive(shared.with_name("demo-built.lock")):
        if (shared / "done").exists():
            return built
        for name in ("runs_dir", "raw_dir", "logs_dir"):
            built.path(name).mkdir(parents=True, exist_ok=True)
        cache = getattr(pytestconfig, "cache", None)
        cached = cache.mkdir("ragloupe-demo-index") / _demo_key(built, backend) if cache else None
        if cached is None or not (cached / "index").is_dir() or not _copy_if_sound(cached / "index", built):
            build_demo_index(built)
            if cached is not None:
                _store_in_cache(built.path("index_dir"), cached)
        (shared / "done").touch()
    return built


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Held by one test process at a time (an flock, released if the process dies)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_demo_index(demo_settings: Settings) -> None:
    """The demo corpus indexed as `ragloupe index` does, its PDFs' extraction and its chunk
    vectors taken from the ones shipped in tests/data (demo_extractions.py and demo_vectors.py
    say why); a PDF or a text not there is extracted or encoded for real."""
    import demo_extractions
    import demo_vectors
    from ragloupe.index import pipeline
    from ragloupe.ingest import pdf
    from ragloupe.workspace import save_search_copies

    shutil.rmtree(demo_settings.path("index_dir"), ignore_errors=True)
    embedder = demo_vectors.ShippedVectors(pipeline.get_embedder(demo_settings))
    extract = demo_extractions.ShippedExtractions(pdf.extract_in_child)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "get_embedder", lambda settings: embedder)
        patch.setattr(pdf, "extract_in_child", extract)
        summary = pipeline.run_index(list(DEMO_SOURCES), demo_settings, save_derived=save_search_copies)
    if summary.errors:
        raise RuntimeError(f"demo corpus did not index cleanly: {summary.errors}")
    if embedder.encoded:
        warnings.warn(f"{embedder.encoded} of {embedder.looked_up} demo chunk texts are not in "
                      f"{demo_vectors.SHIPPED.name} and were encoded by the model: refresh it with "
                      "`.venv/bin/python tests/demo_vectors.py`", DemoDataStale)
    if extract.extracted:
        warnings.warn(f"{extract.extracted} of {extract.looked_up} demo PDFs are not in "
                      f"{demo_extractions.SHIPPED.name} as this code and these libraries read them, and "
                      "were extracted: refresh it with `.venv/bin/python tests/demo_extractions.py`",
                      DemoDataStale)


class DemoDataStale(UserWarning):
    """The shipped demo vectors or extractions no longer cover the demo index (the suite is slower)."""


def _demo_key(demo_settings: Settings, backend: str | None = None) -> str:
    """What the demo index depends on: inputs, shaping settings, indexing code, libraries, and the
    backend that encodes it (onnx, or torch standing in for a failed export: same vectors, but
    the manifest records which; None: the settings' embedding_backend)."""
    import chromadb
    import sentence_transformers
    import torch

    package = PROJECT_ROOT / "src" / "ragloupe"
    inputs = sorted(p for root in DEMO_SOURCES for p in ([root] if root.is_file() else root.rglob("*.*")))
    code = sorted([*(package / "ingest").glob("*.py"), *(package / "index").glob("*.py"),
                   package / "chunking.py", package / "models.py"])
    digest = hashlib.sha256()
    for path in inputs + code:
        # Paths relative to the checkout, so every clone or worktree of the same code shares the key.
        digest.update(str(path.relative_to(PROJECT_ROOT)).encode() + b"\0" + path.read_bytes())
    encoded_by = backend or demo_settings.embedding_backend
    digest.update(demo_settings.index_fingerprint().encode() + b"\0" + encoded_by.encode())
    digest.update(f"{chromadb.__version__}|{sentence_transformers.__version__}|{torch.__version__}".encode())
    return digest.hexdigest()[:20]


def _copy_if_sound(source: Path, demo_settings: Settings) -> bool:
    """Copy a cached index in and check the store holds exactly what its manifest says."""
    from ragloupe.index.manifest import Manifest
    from ragloupe.index.store import open_store

    shutil.copytree(source, demo_settings.path("index_dir"))
    manifest = Manifest.load(demo_settings)
    sound = ({e.doc_id for e in manifest.complete()} == set(DEMO_DOC_IDS) and not manifest.pending()
             and set(open_store(demo_settings).ids()) == manifest.complete_chunk_ids())
    if not sound:
        shutil.rmtree(demo_settings.path("index_dir"), ignore_errors=True)
    return sound


def _store_in_cache(index_dir: Path, cached: Path) -> None:
    """Keep only the newest demo index: write it beside, then swap it in."""
    for old in cached.parent.iterdir():
        if old != cached:
            shutil.rmtree(old, ignore_errors=True)
    partial = cached.with_name(cached.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(index_dir, partial / "index", ignore=shutil.ignore_patterns(".lock"))
    shutil.rmtree(cached, ignore_errors=True)
    partial.rename(cached)


@pytest.fixture
def demo_env(demo_index: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("RAGLOUPE_INDEX_DIR", str(demo_index.path("index_dir")))
    return Settings.from_env()


NOTE_ROWS = (
    ("n1", "Flood defences", "The river flood defences protect the storage tanks from high water. "
     "Inspections after each flood check the bunds, the pumps and the anchoring of every tank."),
    ("n2", "Power supply", "A loss of mains power stops the cooling pumps. Two diesel generators "
     "start within thirty seconds and carry the cooling load for at least seventy-two hours."),
    ("n3", "Earthquake bracing", "Pipe racks are braced against ground shaking. Flexible joints "
     "let the long pipelines move without rupture when the ground shifts during an earthquake."),
)


def write_records(path: Path, rows: Sequence[tuple[str, str, str]]) -> Path:
    """A records CSV with columns id, title, text."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "title", "text"])
        writer.writerows(rows)
    return path


@pytest.fixture
def small_corpus(tmp_path: Path) -> Path:
    from pdf_factory import write_report_pdf

    root = tmp_path / "corpus"
    root.mkdir()
    write_records(root / "notes.csv", NOTE_ROWS)
    write_report_pdf(root / "report.pdf", n_pages=4)
    return root


# The files that take longest (`pytest --durations`), slowest first: `make test` runs the
# suite in two processes, each taking whole files (pytest-xdist --dist loadfile), and
# starting the long ones first keeps one process from finishing alone at the end.
_LONG_FILES = ("test_browser.py", "test_browser_goldsets.py", "test_browser_seeds.py", "test_browser_engines.py",
               "test_answer_cli.py", "test_projections.py", "test_embedded_llm.py", "test_chat_cli.py",
               "test_index_consistency.py", "test_tuning.py", "test_index_small_faults.py",
               "test_ingest_faults.py", "test_chroma_faults.py", "test_answer.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the files for two processes: one long file that needs the demo index first (its
    process builds the index while the other runs the files that need none), then the files
    that need no demo index, then the rest; long files first within each part."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def needs_index(path: str) -> bool:
        return any("demo_index" in item.fixturenames for item in files[path])

    def length_rank(path: str) -> int:
        name = Path(path).name
        return _LONG_FILES.index(name) if name in _LONG_FILES else len(_LONG_FILES)

    heavy = sorted((p for p in files if needs_index(p)), key=length_rank)
    light = sorted((p for p in files if not needs_index(p)), key=length_rank)
    order = heavy[:1] + light + heavy[1:]
    items[:] = [item for path in order for item in files[path]]
