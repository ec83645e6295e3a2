"""Chunking variants for `ragloupe tune`: what they are, and the scratch index each one needs.

Chunk size and overlap shape the index, so a variant cannot be replayed over
the index in force the way a fusion weight can: its chunks must be cut and
embedded again. ``scratch_index`` builds that index from exactly the sources
the main index holds for the gold sets' documents (their paths come from the
main manifest, which is only read), under
``runs_dir/tune-indexes/<index fingerprint>/``, and reuses it while its
fingerprint and its sources' sha256 still match. The main index is never
written to.

A scratch index holds only the gold sets' documents: in the document scope
dense search reads nothing else, but BM25's document frequencies come from
the whole index, so BM25 scores differ slightly from an index that also
holds other documents. The report says which index each variant was
scored on.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action, ChunkingVariantInvalid, RagloupeError

SCRATCH_DIR = "tune-indexes"
_PAIR = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True, order=True)
class Chunking:
    """One chunking variant: tokens per chunk and tokens shared by neighbouring chunks."""

    tokens: int
    overlap: int

    @classmethod
    def of(cls, settings: Settings) -> "Chunking":
        return cls(int(settings.chunk_tokens), int(settings.chunk_overlap))

    def label(self) -> str:
        return f"{self.tokens}/{self.overlap}"

    def applied_to(self, settings: Settings) -> Settings:
        return settings.replace(chunk_tokens=self.tokens, chunk_overlap=self.overlap)


def parse_chunking(text: str | Iterable[str] | None) -> list[Chunking]:
    """``"128/32,256/64"`` (or a list of such strings) as variants, in order, without repeats.

    Raises ChunkingVariantInvalid naming the bad pair and what is expected.
    """
    if text is None:
        return []
    parts = [p for item in ([text] if isinstance(text, str) else text) for p in str(item).split(",")]
    variants: list[Chunking] = []
    for part in (p for p in parts if p.strip()):
        match = _PAIR.match(part)
        if not match:
            raise ChunkingVariantInvalid(
                f"chunking {part.strip()!r} is not TOKENS/OVERLAP: give pairs such as 128/32,256/64")
        tokens, overlap = int(match.group(1)), int(match.group(2))
        if tokens < 1:
            raise ChunkingVariantInvalid(f"chunking {tokens}/{overlap}: a chunk needs at least 1 token")
        if overlap >= tokens:
            raise ChunkingVariantInvalid(f"chunking {tokens}/{overlap}: the overlap ({overlap}) must be "
                                         f"smaller than the chunk ({tokens} tokens)")
        variant = Chunking(tokens, overlap)
        if variant not in variants:
            variants.append(variant)
    return variants


def variants_to_score(settings: Settings, asked: Sequence[Chunking]) -> list[Chunking]:
    """The chunking in force first (the baseline every test is against), then the others asked for."""
    in_force = Chunking.of(settings)
    return [in_force] + [v for v in asked if v != in_force]


def check_variants(variants: Sequence[Chunking], settings: Settings, embedder) -> list[dict]:
    """Refuse a variant the chunker cannot use before anything is built; say what each one really cuts.

    The embedding model reads at most ``max_seq_length`` tokens, so a longer chunk
    is cut to it: the returned ``content_tokens`` is what a chunk of the variant holds.
    """
    from ragloupe.chunking import content_budget

    out = []
    for variant in variants:
        content, overlap = content_budget(embedder.tokenizer, variant.applied_to(settings),
                                          embedder.max_seq_length)
        out.append({"chunking": variant.label(), "content_tokens": int(content), "overlap": int(overlap),
                    "capped_by_model": variant.tokens > int(embedder.max_seq_length)})
    return out


@dataclass(frozen=True)
class VariantIndex:
    """The index a variant is scored on: the main one (the chunking in force) or a scratch one."""

    chunking: Chunking
    settings: Settings  # the settings in force with the variant's chunking and this index's directory
    scratch: bool
    built: bool  # built (or rebuilt) by this run
    seconds: float  # time spent building it

    def timing(self) -> dict:
        return {"chunking": self.chunking.label(), "index_dir": str(self.settings.path("index_dir")),
                "scratch": self.scratch, "built": self.built, "seconds": round(self.seconds, 1)}


def scratch_dir(settings: Settings, variant: Chunking) -> Path:
    """Where the scratch index of a variant lives: keyed by the index fingerprint it would have."""
    return settings.path("runs_dir") / SCRATCH_DIR / variant.applied_to(settings).index_fingerprint()


def gold_sources(doc_ids: Iterable[str], settings: Settings) -> dict[str, Path]:
    """doc_id -> the source file the main index holds for it, checked unchanged since it was indexed.

    Variants are compared on the same text: a source that changed or vanished
    since the main index read it would give a variant other content.
    """
    from ragloupe.index.manifest import Manifest
    from ragloupe.ingest.sources import file_sha256

    from ragloupe.evaluate.tune_space import TuningError

    manifest = Manifest.load(settings)
    sources = {}
    for doc_id in sorted(set(doc_ids)):
        entry = manifest.documents.get(doc_id)
        if entry is None or entry.state != "complete":
            raise TuningError(f"the main index's manifest has no complete entry for {doc_id}: "
                              f"{ACTION}", action=Action.INDEX_FIRST)
        path = Path(entry.path)
        if not path.is_file() or file_sha256(path) != entry.sha256:
            raise TuningError(f"the source of {doc_id} ({path}) is gone or changed since the main index "
                              f"read it: {ACTION} so every chunking is tuned on the same text",
                              action=Action.REINDEX)
        sources[doc_id] = path
    return sources


def scratch_index(settings: Settings, variant: Chunking, sources: dict[str, Path],
                  progress: Callable[[str], None] | None = None) -> VariantIndex:
    """The scratch index of ``variant`` over ``sources``: reused when it still matches, else built anew."""
    from ragloupe.evaluate.tune_space import TuningError
    from ragloupe.index.pipeline import run_index
    from ragloupe.workspace import save_search_copies

    directory = scratch_dir(settings, variant)
    main = settings.path("index_dir").resolve()
    if directory.resolve() == main or main in directory.resolve().parents or directory.resolve() in main.parents:
        raise TuningError(f"the scratch index directory {directory} overlaps the main index {main}: "
                          "set RAGLOUPE_RUNS_DIR outside RAGLOUPE_INDEX_DIR")
    # Always embedded: a configured Chroma server holds the main collection, never a scratch one.
    scratch = variant.applied_to(settings).replace(index_dir=str(directory), chroma_host="")
    if _reusable(scratch, sources):
        return VariantIndex(variant, scratch, scratch=True, built=False, seconds=0.0)
    if progress:
        progress(f"building a scratch index for chunking {variant.label()} ({len(sources)} documents)")
    started = time.perf_counter()
    shutil.rmtree(directory, ignore_errors=True)  # exactly these documents, nothing left from before
    summary = run_index([str(p) for _, p in sorted(sources.items())], scratch, save_derived=save_search_copies)
    if summary.errors:
        first = summary.errors[0]
        raise TuningError(f"the scratch index for chunking {variant.label()} refused {first.doc_id}: {first.error}")
    return VariantIndex(variant, scratch, scratch=True, built=True, seconds=time.perf_counter() - started)


def _reusable(scratch: Settings, sources: dict[str, Path]) -> bool:
    """The scratch index holds exactly ``sources`` at their current sha256, cut with these settings."""
    from ragloupe.index.manifest import Manifest
    from ragloupe.index.store import open_store
    from ragloupe.ingest.sources import file_sha256

    if not (scratch.path("index_dir") / "manifest.json").is_file():
        return False
    try:
        manifest = Manifest.load(scratch)
    except RagloupeError:
        return False
    held = {e.doc_id: (e.path, e.sha256) for e in manifest.complete()}
    wanted = {doc_id: (str(path.resolve()), file_sha256(path)) for doc_id, path in sources.items()}
    if manifest.settings_fingerprint != scratch.index_fingerprint() or manifest.pending() or held != wanted:
        return False
    return set(open_store(scratch).ids()) == manifest.complete_chunk_ids()


def variant_index(settings: Settings, variant: Chunking, sources: dict[str, Path] | None,
                  progress: Callable[[str], None] | None = None) -> VariantIndex:
    """The main index for the chunking in force, a scratch index for any other."""
    if variant == Chunking.of(settings):
        return VariantIndex(variant, settings, scratch=False, built=False, seconds=0.0)
    return scratch_index(settings, variant, sources or {}, progress)
