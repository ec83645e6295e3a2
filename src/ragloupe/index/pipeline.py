"""Incremental indexing: sources in, chunks and embeddings in Chroma, manifest kept true.

``plan`` compares the files under the given roots with the manifest: new,
modified (sha256 differs), unchanged, deleted (a manifest entry under one of
the roots whose file is gone). ``run_index`` carries the plan out under the
index lock. Only new and modified sources are read and embedded; unchanged
ones cost one streamed sha256, and under the sentence grain an unchanged one
whose sentence vectors the model in force lacks has them encoded from its
stored chunks, after the files, so a finished run leaves the index complete.

Consistency protocol, per source: mark the entry "pending" in the manifest
(saved atomically) before touching Chroma, delete its old chunks, upsert the
new ones, then mark it "complete". Every run starts with ``repair``: a
pending entry has all its chunks removed and is redone, a complete entry
whose chunks Chroma lacks is redone, and chunks no complete entry claims
are deleted. So whenever the process dies, the next run ends consistent.

A change of the settings that shape the index (model, chunk size, overlap,
boilerplate and quality rules, record fields) is refused with StaleIndex
unless ``rebuild`` is asked for: old and new chunks are never mixed.
"""

from __future__ import annotations

import functools
import os
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from ragloupe.chunking import chunk_document, content_budget
from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action, StaleIndex
from ragloupe.index.embedder import get_embedder
from ragloupe.index import derived_saved, lexical_saved, sentences, swap
from ragloupe.index.chunk_columns import FORMAT as CHUNKS_FORMAT
from ragloupe.index.lock import index_lock, lock_holder
from ragloupe.index.manifest import DocumentEntry, Manifest, entry_for
from ragloupe.index.store import Store, open_store
from ragloupe.ingest import discover_sources, load_source
from ragloupe.ingest.sources import EXPECTED, doc_id_for, file_sha256, is_source
from ragloupe.models import Chunk, SourceDoc


@dataclass(frozen=True)
class Progress:
    """One step of a run, for a progress bar: ``done`` of ``total`` sources handled."""

    stage: str  # "hash" | "ingest" | "embed" | "write" | "sentences" | "done"; encode_sentences: "sentences" | "done"
    done: int
    total: int
    path: str = ""  # encode_sentences: the document's doc_id
    part: float = 0.0  # share of the current source done (the embedding goes in slices)
    # run_index's file stages: the documents whose sentence vectors the run encodes after its files
    # (unchanged ones that lack them; their "sentences" steps count from 0 of their own total)
    later: int = 0


ProgressCallback = Callable[[Progress], None]
SaveDerived = Callable[[Store, Settings], None]  # what a face hands run_index: see save_for_searches

EMBED_SLICE = 256  # texts per encode() call


@dataclass(frozen=True)
class SentencesEncoded:
    """What encode_sentences did: the documents whose sentence vectors it encoded, the distinct
    sentences it embedded, and whether they could be saved (not in a read-only index dir)."""

    documents: int = 0
    sentences: int = 0
    saved: bool = True


@dataclass
class IndexPlan:
    """What a run would do. Paths are absolute strings."""

    roots: list[str]
    new: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # doc_ids whose file is gone
    missing_roots: list[str] = field(default_factory=list)  # given paths that do not exist
    unsupported: list[str] = field(default_factory=list)  # given files of a type ragloupe does not read
    stale: str | None = None  # why the index does not match the settings in force
    hashes: dict[str, str] = field(default_factory=dict)  # path -> sha256 (for the run)

    @property
    def to_ingest(self) -> list[str]:
        return sorted(self.new + self.modified)  # path order, as discovered

    def as_dict(self) -> dict:
        out = asdict(self)
        out.pop("hashes")
        return out


@dataclass
class FileError:
    """A source that was refused; nothing of it is in the index."""

    path: str
    doc_id: str
    error: str
    findings: list[dict] = field(default_factory=list)


@dataclass
class IndexSummary:
    """The result of ``run_index``, for the CLI table and ``--json``."""

    new: list[str] = field(default_factory=list)  # doc_ids
    modified: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)  # what the start-of-run repair fixed
    rebuilt: bool = False
    pages_indexed: int = 0
    pages_excluded: int = 0
    excluded_reasons: dict[str, int] = field(default_factory=dict)  # reason -> pages
    chunks_added: int = 0
    chunks_removed: int = 0
    errors: list[FileError] = field(default_factory=list)
    # Unchanged documents whose sentence vectors for the model in force were missing (an index built
    # before them, at weight 0, or before `ragloupe adapt` switched models): encoded and saved by this
    # run; or left missing because the index folder cannot hold them (searches encode them in memory).
    sentences_filled: list[str] = field(default_factory=list)
    sentences_unsaved: list[str] = field(default_factory=list)
    review_findings: list[dict] = field(default_factory=list)  # non-blocking records findings
    # Documents of this run that went in without a single indexed page (a scan, a file whose
    # pages all failed): {"doc_id", "path", "pages", "reasons": {reason: pages}}.
    unindexed: list[dict] = field(default_factory=list)
    documents: int = 0  # complete documents in the index after the run
    chunks: int = 0  # chunks in the index after the run
    settings_fingerprint: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class IndexStatus:
    """What the index holds, for ``ragloupe status`` and the app."""

    index_dir: str
    store: str  # "embedded <path>" or "chroma server host:port"
    documents: list[dict]
    n_documents: int
    n_pages: int
    n_pages_indexed: int
    n_chunks_manifest: int
    n_chunks_store: int
    quality: dict[str, int]
    settings_fingerprint: str
    current_fingerprint: str
    stale: str | None
    pending: list[str]
    refused: list[str]
    roots: list[str]
    busy_pid: int | None
    fingerprint: str  # the store's content fingerprint
    encoded_with: list[str] = field(default_factory=list)  # Manifest.encoded_with
    dense_sentence_weight: float = 0.0  # the settings' sentence grain (index/sentences.py); 0: off
    n_documents_with_sentences: int = 0  # documents whose sentence vectors are saved for the model in force

    def as_dict(self) -> dict:
        return asdict(self)


# ---- planning ------------------------------------------------------------------
def default_roots(manifest: Manifest, settings: Settings) -> list[Path]:
    """With no PATHS: the roots recorded in the manifest, plus raw_dir."""
    roots = [Path(r) for r in manifest.roots]
    raw = settings.path("raw_dir")
    if raw.exists() and raw.resolve() not in roots:
        roots.append(raw.resolve())
    return roots


def plan(paths: Sequence[str | Path] | None, settings: Settings,
         manifest: Manifest | None = None, progress: ProgressCallback | None = None) -> IndexPlan:
    """Classify the sources under ``paths`` against the manifest (read-only; no lock)."""
    manifest = manifest or Manifest.load(settings)
    roots = [Path(p).resolve() for p in paths] if paths else default_roots(manifest, settings)
    result = IndexPlan(roots=[str(r) for r in roots], stale=manifest.stale_reason(settings))
    if paths:  # a recorded root that is gone just means its files were deleted
        result.missing_roots = [str(r) for r in roots if not r.exists()
                                and not _any_under(manifest.documents.values(), r)]
    result.unsupported = [str(r) for r in roots if r.is_file() and not is_source(r)]
    sources = discover_sources([r for r in roots if r.exists()])
    known = manifest.by_path()
    for i, source in enumerate(sources):
        if progress:
            progress(Progress("hash", i, len(sources), str(source)))
        path = str(source)
        sha = file_sha256(source)
        result.hashes[path] = sha
        entry = known.get(path)
        if entry is None:
            result.new.append(path)
        elif entry.sha256 != sha or entry.state == "pending":
            result.modified.append(path)
        else:
            result.unchanged.append(path)
    present = set(result.hashes)
    for entry in manifest.documents.values():
        if entry.path not in present and any(_is_under(Path(entry.path), r) for r in roots):
            if not Path(entry.path).exists():
                result.deleted.append(entry.doc_id)
    result.deleted.sort()
    return result


def _is_under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _any_under(entries: Iterable[DocumentEntry], root: Path) -> bool:
    return any(_is_under(Path(e.path), root) for e in entries)


# ---- running ---------------------------------------------------------------------
def _remember_roots(manifest: Manifest, roots: Sequence[str]) -> None:
    """Keep where the sources live, so `ragloupe index` without PATHS finds them again."""
    manifest.roots = sorted(r for r in set(manifest.roots) | set(roots)
                            if Path(r).is_dir() or (Path(r).is_file() and is_source(Path(r))))


def run_index(paths: Sequence[str | Path] | None, settings: Settings, rebuild: bool = False,
              progress: ProgressCallback | None = None, save_derived: SaveDerived | None = None) -> IndexSummary:
    """Bring the index in line with the sources under ``paths`` (see module docstring).

    ``save_derived(store, settings)``, when given, saves what searches build from the content
    beyond the chunk columns and BM25 the indexer saves itself (a face passes
    save_search_copies from the workspace module; index/ does not know retrieval's builders).

    Raises IndexBusy when another indexer holds the lock, StaleIndex when the
    settings changed and ``rebuild`` is false. Bad files never raise: they
    end up in ``summary.errors`` and nothing of them is stored.
    """
    started = time.perf_counter()
    timings: Counter[str] = Counter()
    with index_lock(settings):
        manifest = Manifest.load(settings)
        summary = IndexSummary(settings_fingerprint=settings.index_fingerprint())
        if not rebuild and (reason := manifest.stale_reason(settings)):
            raise StaleIndex(f"{reason}: {ACTION}, or restore the previous settings",
                             action=Action.REBUILD_INDEX)
        store = open_store(settings)
        swapped = swap.finish_interrupted(store)  # a `ragloupe adapt` killed mid-swap
        if swapped:
            manifest = Manifest.load(settings)
        if rebuild:
            paths = _rebuild_paths(paths, manifest, settings)
            manifest = _emptied(manifest, store, settings)
            summary.rebuilt = True
        # Past the stale check, the settings in force are the index's: equal, or the
        # index holds no document yet, or it was just rebuilt.
        manifest.settings_fingerprint = settings.index_fingerprint()
        manifest.shaping_settings = settings.shaping_settings()
        summary.repaired, summary.chunks_removed = repair(manifest, store)
        summary.repaired[:0] = [swapped] if swapped else []
        mark = time.perf_counter()
        the_plan = plan(paths, settings, manifest, progress)
        timings["hash"] += time.perf_counter() - mark
        _remember_roots(manifest, the_plan.roots)
        for doc_id in the_plan.deleted:
            summary.chunks_removed += _remove_document(manifest, store, doc_id)
            summary.deleted.append(doc_id)
        _note_untouched(the_plan, manifest, summary)
        to_fill = _lacking_sentences(manifest, the_plan, settings)
        if to_fill and not _can_save_sentences(settings):
            summary.sentences_unsaved, to_fill = [e.doc_id for e in to_fill], []
        embedder = get_embedder(settings) if the_plan.to_ingest or to_fill else None
        if the_plan.to_ingest:  # refuse impossible chunk settings before any file is touched
            content_budget(embedder.tokenizer, settings, embedder.max_seq_length)
            manifest.encoded_with = sorted(set(manifest.encoded_with) | {embedder.backend})
        total = len(the_plan.to_ingest)
        # Every step of the files says how many documents' sentence vectors follow them, so a bar can
        # share itself out from the start.
        files_progress = (lambda step: progress(replace(step, later=len(to_fill)))) if progress else None
        for i, path in enumerate(the_plan.to_ingest):
            if files_progress:
                files_progress(Progress("ingest", i, total, path))
            mark = time.perf_counter()
            doc = load_source(Path(path), settings)
            timings["ingest"] += time.perf_counter() - mark
            is_new = path in the_plan.new
            _index_document(doc, manifest, store, embedder, settings, summary, timings,
                            is_new, files_progress, (i, total))
        manifest.save()
        store.set_content_marker(manifest.content_hash())
        save_for_searches(store, settings, save_derived, timings)
        if to_fill:
            mark = time.perf_counter()
            summary.sentences_filled, summary.sentences_unsaved = _fill_sentences(
                to_fill, store, embedder, settings, progress)
            timings["fill_sentences"] += time.perf_counter() - mark
        _tally(manifest, summary)
        summary.chunks = store.count()
        if progress:
            progress(Progress("done", total, total))
    timings["total"] = time.perf_counter() - started
    summary.timings = {k: round(v, 3) for k, v in timings.items()}
    return summary


def save_for_searches(store: Store, settings: Settings, save_derived: SaveDerived | None = None,
                      timings: Counter[str] | None = None) -> None:
    """Save every chunk the store now holds (as columns) and its chunk BM25, drop what earlier content
    left, then hand the store to ``save_derived`` (what a face passes: retrieval's own derived things,
    save_search_copies of the workspace module), so a server starts without reading the store's chunks or
    building them; the chunks are read from the store once, here. A failure to write only means the
    first search builds them (lexical_saved, derived_saved, chunk_columns)."""
    timings = timings if timings is not None else Counter()
    mark = time.perf_counter()
    fingerprint, empty = store.fingerprint(), store.count() == 0
    columns = functools.cache(lambda: derived_saved.save_chunks(store, settings))
    try:
        if not empty and not derived_saved.saved_path(settings, "chunks", fingerprint, (),
                                                      version=CHUNKS_FORMAT).is_file():
            columns()
        lexical_saved.refresh(store, settings, columns)
        if not empty:
            derived_saved.prune(settings, fingerprint)
    except OSError:
        pass
    timings["bm25"] += time.perf_counter() - mark
    if save_derived is not None and not empty:
        mark = time.perf_counter()
        save_derived(store, settings)
        timings["derived"] += time.perf_counter() - mark


def _lacking_sentences(manifest: Manifest, the_plan: IndexPlan, settings: Settings) -> list[DocumentEntry]:
    """The complete documents the run does not re-read whose sentence vectors for the model in force
    are not saved for their chunks (sentences.saved_for: a small .json read each); none at weight 0.
    The run encodes them after its files, so that a finished run leaves the index complete."""
    if settings.dense_sentence_weight <= 0:
        return []
    reread = set(the_plan.to_ingest)
    return [entry for entry in sorted(manifest.complete(), key=lambda e: e.doc_id)
            if entry.n_chunks and entry.path not in reread
            and not sentences.saved_for(settings, entry.doc_id, entry.chunk_ids)]


def _can_save_sentences(settings: Settings) -> bool:
    """Whether the sentence vectors' folder for the model in force can be written: when it cannot,
    the run leaves them to the searches (held in memory there) instead of encoding them for nothing."""
    folder = sentences.model_dir(settings)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK)


def _fill_sentences(entries: Sequence[DocumentEntry], store: Store, embedder, settings: Settings,
                    progress: ProgressCallback | None) -> tuple[list[str], list[str]]:
    """Encode and save the sentence vectors of these unchanged documents from their chunks in the
    store, as a stage of the run's progress; returns the doc_ids saved and those that could not be."""
    chunks_of = {entry.doc_id: store.get_chunks(entry.chunk_ids) for entry in entries}
    unsaved: list[str] = []

    def step(event: Progress) -> None:
        if event.stage != "done":  # the run says "done" once, at its end
            progress(event)

    encode_sentences(chunks_of, embedder, settings, step if progress else None,
                     unsaved=lambda doc_id, _vectors: unsaved.append(doc_id))
    return [doc_id for doc_id in chunks_of if doc_id not in unsaved], unsaved


def _rebuild_paths(paths: Sequence[str | Path] | None, manifest: Manifest,
                   settings: Settings) -> Sequence[str | Path] | None:
    """A rebuild drops everything, so it re-reads everything the index held, not only
    PATHS: otherwise the other folders' documents would vanish until a plain run."""
    if not paths:
        return paths
    given = {Path(p).resolve() for p in paths}
    return [*paths, *(r for r in default_roots(manifest, settings) if r.exists() and r not in given)]


def _emptied(manifest: Manifest, store: Store, settings: Settings) -> Manifest:
    """Drop every chunk and write an empty manifest that keeps the roots (under the lock)."""
    roots = list(manifest.roots)
    store.reset()
    sentences.clear(settings.path("index_dir"))
    emptied = Manifest.empty(settings)
    emptied.roots = roots
    emptied.save()
    return emptied


def _note_untouched(the_plan: IndexPlan, manifest: Manifest, summary: IndexSummary) -> None:
    """Record what the run leaves alone: missing or unsupported paths (as errors), unchanged
    sources, and refused files, which stay refused until they change."""
    for root in the_plan.missing_roots:
        summary.errors.append(FileError(root, doc_id_for(Path(root)), "no such file or directory"))
    for path in the_plan.unsupported:
        summary.errors.append(FileError(path, doc_id_for(Path(path)),
                                        f"unsupported file type {Path(path).suffix or '(none)'}: "
                                        f"expected {EXPECTED}"))
    by_path = manifest.by_path()
    summary.unchanged = sorted(by_path[p].doc_id for p in the_plan.unchanged)
    for p in the_plan.unchanged:
        entry = by_path[p]
        if entry.state == "refused":
            summary.errors.append(FileError(p, entry.doc_id, entry.error or "refused",
                                            list(entry.findings)))


def _index_document(doc: SourceDoc, manifest: Manifest, store: Store, embedder, settings: Settings,
                    summary: IndexSummary, timings: Counter, is_new: bool,
                    progress: ProgressCallback | None, step: tuple[int, int]) -> None:
    """Replace one source's chunks (or refuse it), keeping the manifest true at every step."""
    owner = manifest.documents.get(doc.doc_id)
    if owner is not None and owner.path != str(doc.path):
        # doc_id is the file stem: a second file with the same stem would overwrite the first.
        summary.errors.append(FileError(str(doc.path), doc.doc_id,
                                        f"doc_id {doc.doc_id!r} is already used by {owner.path}; "
                                        "rename one of the files"))
        return
    summary.review_findings.extend(
        {"path": str(doc.path), "doc_id": doc.doc_id, **asdict(f)}
        for f in doc.findings if f.severity == "review")
    if doc.blocked:
        if owner is not None:  # the file changed into a bad one: its old chunks go too
            summary.chunks_removed += _remove_document(manifest, store, doc.doc_id)
        entry = entry_for(doc, "refused")
        manifest.documents[doc.doc_id] = entry
        manifest.save()
        summary.errors.append(FileError(str(doc.path), doc.doc_id, entry.error or "refused",
                                        list(entry.findings)))
        return

    mark = time.perf_counter()
    chunks = chunk_document(doc, embedder.tokenizer, settings, embedder.max_seq_length)
    timings["chunk"] += time.perf_counter() - mark
    mark = time.perf_counter()
    # Under the sentence grain each chunk's sentences are embedded apart too (index/sentences.py):
    # the file's progress runs over both.
    n_sentences = len(sentences.distinct_texts(chunks)) if settings.dense_sentence_weight > 0 else 0
    of = len(chunks) + n_sentences
    embeddings = _embed(embedder, [c.search_text for c in chunks], progress, step, str(doc.path), 0, of)
    timings["embed"] += time.perf_counter() - mark
    if n_sentences:
        mark = time.perf_counter()
        by_sentence = sentences.build(chunks, lambda texts: _embed(embedder, texts, progress, step,
                                                                   str(doc.path), len(chunks), of))
        sentences.save(settings, doc.doc_id, by_sentence)
        timings["embed_sentences"] += time.perf_counter() - mark

    if progress:
        progress(Progress("write", step[0], step[1], str(doc.path)))
    mark = time.perf_counter()
    # Pending first: if we die between here and "complete", the next run's repair
    # deletes whatever of this document reached Chroma and redoes it.
    manifest.documents[doc.doc_id] = entry_for(doc, "pending")
    manifest.save()
    old = store.ids({"doc_id": doc.doc_id})
    new_ids = {c.chunk_id for c in chunks}
    stale_ids = [i for i in old if i not in new_ids]
    store.delete_ids(stale_ids)
    store.upsert(chunks, embeddings)
    per_page = Counter((c.page, c.record_id) for c in chunks)
    manifest.documents[doc.doc_id] = entry_for(doc, "complete", [c.chunk_id for c in chunks], per_page)
    manifest.save()
    timings["write"] += time.perf_counter() - mark

    summary.chunks_added += len(new_ids - set(old))
    summary.chunks_removed += len(stale_ids)
    (summary.new if is_new else summary.modified).append(doc.doc_id)


def _embed(embedder, texts: list[str], progress: ProgressCallback | None,
           step: tuple[int, int], path: str, before: int = 0, of: int | None = None, stage: str = "embed"):
    """Encode in slices of EMBED_SLICE texts, so a progress bar moves within a large file.

    A slice holds many model batches, so the model's own length-sorting still
    packs batches well and the slicing costs nothing measurable. ``before`` texts of the
    file's ``of`` were encoded before these (its chunks before its sentences).
    """
    import numpy as np

    of = of or len(texts)
    parts = []
    for start in range(0, len(texts), EMBED_SLICE):
        if progress:
            progress(Progress(stage, step[0], step[1], path, part=(before + start) / of))
        parts.append(embedder.encode(texts[start:start + EMBED_SLICE]))
    return np.concatenate(parts) if parts else embedder.encode([])


def encode_sentences(chunks_of: Mapping[str, Sequence[Chunk]], embedder, settings: Settings,
                     progress: ProgressCallback | None = None,
                     unsaved: Callable[[str, sentences.DocSentences], None] | None = None) -> SentencesEncoded:
    """Encode and save the sentence vectors (index/sentences.py) of each document of ``chunks_of``
    (doc_id -> its chunks), as the indexer writes them: for the documents a search would otherwise
    encode on its first look, unseen (Workspace.encode_missing_sentences picks them).

    Progress goes as run_index's: Progress("sentences", documents done, of all, doc_id, share of
    this one's sentences embedded), then Progress("done", all, all). A read-only index dir saves
    nothing: ``unsaved(doc_id, vectors)`` is handed each document's vectors then, for the caller
    to hold in memory as Workspace.sentences_of does.
    """
    total = len(chunks_of)
    embedded, saved = 0, True
    for done, (doc_id, chunks) in enumerate(chunks_of.items()):  # _embed says when each one starts
        texts = sentences.distinct_texts(chunks)
        built = sentences.build(chunks, lambda distinct: _embed(embedder, distinct, progress, (done, total),
                                                                doc_id, stage="sentences"))
        embedded += len(texts)
        try:
            sentences.save(settings, doc_id, built)
        except OSError:
            saved = False
            if unsaved:
                unsaved(doc_id, built)
    if progress and total:
        progress(Progress("done", total, total))
    return SentencesEncoded(total, embedded, saved)


def _remove_document(manifest: Manifest, store: Store, doc_id: str) -> int:
    """Delete a document's chunks and entry: pending first, so a crash mid-way is repaired."""
    entry = manifest.documents[doc_id]
    manifest.documents[doc_id] = DocumentEntry(**{**entry.__dict__, "state": "pending"})
    manifest.save()
    removed = store.delete_where({"doc_id": doc_id})
    del manifest.documents[doc_id]
    manifest.save()
    sentences.remove(manifest.path.parent, doc_id)
    return removed


def repair(manifest: Manifest, store: Store) -> tuple[list[str], int]:
    """Make Chroma hold exactly the complete documents' chunks; returns (what was fixed, chunks removed).

    Pending entries lose their chunks and their entry (the plan then sees
    their file as new, or, when the file is gone, the deletion that was
    interrupted is thereby done); complete entries with chunks missing from Chroma
    are dropped the same way, to be redone; chunks no complete entry
    claims are deleted.
    """
    fixed: list[str] = []
    removed = 0
    held = set(store.ids())
    for entry in list(manifest.documents.values()):
        if entry.state == "pending" and not Path(entry.path).exists():
            fixed.append(f"{entry.doc_id}: interrupted deletion, removed")
        elif entry.state == "pending":
            fixed.append(f"{entry.doc_id}: interrupted run, re-indexed")
        elif entry.state == "complete" and not set(entry.chunk_ids) <= held:
            fixed.append(f"{entry.doc_id}: chunks missing from the store, re-indexed")
        else:
            continue
        removed += store.delete_where({"doc_id": entry.doc_id})
        del manifest.documents[entry.doc_id]
    if fixed:
        held = set(store.ids())
    orphans = sorted(held - manifest.complete_chunk_ids())
    if orphans:
        removed += store.delete_ids(orphans)
        fixed.append(f"{len(orphans)} chunk(s) no complete document claims, removed")
    if fixed:
        manifest.save()
    return fixed, removed


def _tally(manifest: Manifest, summary: IndexSummary) -> None:
    """Pages indexed / excluded (with reasons) by this run, and the index's totals."""
    reasons: Counter[str] = Counter()
    for doc_id in summary.new + summary.modified:
        entry = manifest.documents[doc_id]
        excluded: Counter[str] = Counter()
        for page in entry.pages:
            if page.indexed:
                summary.pages_indexed += 1
            else:
                summary.pages_excluded += 1
                excluded[page.reason or f"{page.quality} page"] += 1
        reasons.update(excluded)
        if not any(page.indexed for page in entry.pages):
            summary.unindexed.append({"doc_id": doc_id, "path": entry.path, "pages": len(entry.pages),
                                      "reasons": _by_count(excluded)})
    summary.excluded_reasons = _by_count(reasons)
    summary.documents = len(manifest.complete())


def _by_count(counts: Counter[str]) -> dict[str, int]:
    """Most frequent first, then alphabetical: the same order on every run."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# ---- status ----------------------------------------------------------------------
def status(settings: Settings) -> IndexStatus:
    """What the index holds and whether it matches the settings in force (read-only)."""
    manifest = Manifest.load(settings)
    store = open_store(settings)
    quality: Counter[str] = Counter()
    documents = []
    n_pages = n_indexed = 0
    for entry in manifest.complete():
        quality.update(p.quality for p in entry.pages)
        indexed = sum(p.indexed for p in entry.pages)
        n_pages += len(entry.pages)
        n_indexed += indexed
        documents.append({"doc_id": entry.doc_id, "path": entry.path, "kind": entry.kind,
                          "pages": len(entry.pages), "pages_indexed": indexed,
                          "chunks": entry.n_chunks, "sha256": entry.sha256,
                          # the dense engine's sentence vectors for this model, written for its chunks
                          # (a document with no chunk has none to miss)
                          "sentence_vectors": not entry.n_chunks
                          or sentences.saved_for(settings, entry.doc_id, entry.chunk_ids)})
    where = (f"chroma server {settings.chroma_host}:{settings.chroma_port}" if settings.chroma_host
             else f"embedded {settings.path('index_dir') / 'chroma'}")
    return IndexStatus(
        index_dir=str(settings.path("index_dir")), store=where, documents=documents,
        n_documents=len(documents), n_pages=n_pages, n_pages_indexed=n_indexed,
        n_chunks_manifest=sum(e.n_chunks for e in manifest.complete()),
        n_chunks_store=store.count(), quality=dict(sorted(quality.items())),
        settings_fingerprint=manifest.settings_fingerprint,
        current_fingerprint=settings.index_fingerprint(), stale=manifest.stale_reason(settings),
        pending=[e.doc_id for e in manifest.pending()],
        refused=[e.doc_id for e in manifest.refused()], roots=sorted(manifest.roots),
        busy_pid=lock_holder(settings), fingerprint=store.fingerprint(),
        encoded_with=list(manifest.encoded_with), dense_sentence_weight=float(settings.dense_sentence_weight),
        n_documents_with_sentences=sum(d["sentence_vectors"] for d in documents))


def sentences_line(data: dict) -> str:
    """Whether dense reads each chunk's sentences, and how many documents have theirs saved (status's
    dict): one line for `ragloupe status` and the Index page."""
    if not data["dense_sentence_weight"]:
        return "off (RAGLOUPE_DENSE_SENTENCE_WEIGHT=0: dense reads each chunk's own embedding alone)"
    have, total = data["n_documents_with_sentences"], data["n_documents"]
    line = (f"dense blends each chunk's best sentence at {data['dense_sentence_weight']:g}; "
            f"{have} of {total} documents have their sentence vectors saved")
    return line + ("" if have == total else "; the others' are encoded by the next index run, or "
                                             "before the first search that reads them")


def encoding_sentences_line(n_documents: int) -> str:
    """What a face says while it encodes sentence vectors a search would otherwise encode unseen."""
    plural = "s" if n_documents != 1 else ""
    return (f"encoding the sentence vectors of {n_documents} document{plural} (first search since "
            f"{'they were' if plural else 'it was'} indexed without them, or with another model; "
            "saved for the next searches)")


def filled_sentences_line(summary: dict) -> str:
    """What a finished index run says about the unchanged documents' sentence vectors it encoded, or
    could not save (IndexSummary.as_dict()); "" when there were none."""
    filled, unsaved = len(summary.get("sentences_filled", ())), len(summary.get("sentences_unsaved", ()))
    if filled:
        plural = "s" if filled != 1 else ""
        return (f"encoded the sentence vectors of {filled} unchanged document{plural} "
                f"(indexed without them, or with another model)")
    if unsaved:
        one = unsaved == 1
        return (f"{unsaved} unchanged document{'' if one else 's'} {'lacks its' if one else 'lack their'} "
                "sentence vectors and the index folder cannot hold them: searches encode them in memory")
    return ""


def encoded_sentences_line(encoded: SentencesEncoded) -> str:
    """What a face says when encode_sentences is done."""
    plural = "s" if encoded.documents != 1 else ""
    kept = ("saved for the next searches" if encoded.saved
            else "held by this process only (the index folder is read-only)")
    return (f"encoded the sentence vectors of {encoded.documents} document{plural} "
            f"({encoded.sentences:,} sentences), {kept}")


def clear_index(settings: Settings) -> None:
    """Empty the index: drop the collection and write an empty manifest, under the index lock.

    The source files are untouched and the manifest keeps its roots, so the
    next run indexes the same sources from scratch.
    """
    with index_lock(settings):
        _emptied(Manifest.load(settings), open_store(settings), settings)
