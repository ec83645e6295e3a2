"""The index manifest: what the index holds, per source, and the settings that shaped it.

One JSON file, <index_dir>/manifest.json, replaced atomically (written to a
temporary file, fsynced, then os.replace'd), so a reader sees the old or the
new manifest, never half of one. It is the source of truth for consistency:
a document is in the index exactly when its entry says "complete", and the
indexer marks an entry "pending" before it touches that document's chunks in
Chroma, so a killed run leaves a trace the next run repairs.

It also keeps what ingestion learned and the index does not hold — every
page's quality and reason (rejected and empty pages included), the stripped
boilerplate, records findings, the error of a refused file — for the Chunk
Explorer and the failure audit.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Literal

from ragloupe.config import Settings
from ragloupe.errors import ACTION, Action, StaleIndex
from ragloupe.models import Finding, SourceDoc

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 1

DocState = Literal["pending", "complete", "refused"]


@dataclass(frozen=True)
class PageEntry:
    """What ingestion found on one page (or record), indexed or not."""

    page: int
    quality: str
    reason: str
    method: str
    n_chars: int
    n_chunks: int = 0
    stripped: tuple[str, ...] = ()
    record_id: str = ""
    title: str = ""
    tables: int = 0  # tables cut out of the page (their chunks are counted in n_chunks)
    confidence: float | None = None  # OCR pages: the engine's mean word confidence, 0-100

    @property
    def indexed(self) -> bool:
        return self.n_chunks > 0


@dataclass(frozen=True)
class DocumentEntry:
    """One source file as the index knows it.

    state: "pending" while its chunks are being written or removed,
    "complete" when Chroma holds exactly ``chunk_ids``, "refused" when the
    file was refused (``error`` / blocking findings) and nothing of it is
    in Chroma.
    """

    doc_id: str
    path: str
    sha256: str
    kind: str
    state: DocState
    chunk_ids: tuple[str, ...] = ()
    pages: tuple[PageEntry, ...] = ()
    boilerplate: tuple[str, ...] = ()
    findings: tuple[dict, ...] = ()  # Finding fields as dicts
    error: str | None = None
    title: str | None = None

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_ids)

    def finding_records(self) -> list[Finding]:
        return [Finding(**f) for f in self.findings]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "DocumentEntry":
        pages = tuple(PageEntry(**{**p, "stripped": tuple(p.get("stripped", ()))})
                      for p in data.get("pages", ()))
        return cls(
            doc_id=data["doc_id"], path=data["path"], sha256=data["sha256"], kind=data["kind"],
            state=data["state"], chunk_ids=tuple(data.get("chunk_ids", ())), pages=pages,
            boilerplate=tuple(data.get("boilerplate", ())),
            findings=tuple(data.get("findings", ())), error=data.get("error"),
            title=data.get("title"))


def entry_for(doc: SourceDoc, state: DocState, chunk_ids: Iterable[str] = (),
              chunks_per_page: dict[tuple[int, str], int] | None = None) -> DocumentEntry:
    """The manifest entry of an ingested document."""
    per_page = chunks_per_page or {}
    pages = tuple(PageEntry(
        page=p.page, quality=p.quality, reason=p.reason, method=p.method, n_chars=len(p.text),
        n_chunks=per_page.get((p.page, p.record_id or ""), 0), stripped=tuple(p.stripped),
        record_id=p.record_id or "", title=p.title or "", tables=len(p.tables),
        confidence=p.confidence) for p in doc.pages)
    error = doc.error
    if error is None and doc.blocked:
        blocking = [f for f in doc.findings if f.severity == "blocking"]
        error = f"refused: {len(blocking)} blocking finding(s), first: {blocking[0].message}"
    return DocumentEntry(
        doc_id=doc.doc_id, path=str(doc.path), sha256=doc.sha256, kind=doc.kind, state=state,
        chunk_ids=tuple(chunk_ids), pages=pages, boilerplate=tuple(doc.boilerplate),
        findings=tuple(asdict(f) for f in doc.findings), error=error, title=doc.title)


@dataclass
class Manifest:
    """The manifest of one index directory. Load with ``Manifest.load(settings)``."""

    path: Path
    settings_fingerprint: str = ""
    shaping_settings: dict = field(default_factory=dict)
    # The embedding backends that encoded its chunks (Embedder.backend: "onnx", or "torch" when
    # asked for or standing in for a failed export); not in the fingerprint, whose backends
    # give the same vectors. Empty in an index written before it was recorded.
    encoded_with: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)
    documents: dict[str, DocumentEntry] = field(default_factory=dict)

    @classmethod
    def load(cls, settings: Settings) -> "Manifest":
        """The manifest in settings' index_dir; an empty one when there is none yet."""
        path = settings.path("index_dir") / MANIFEST_NAME
        if not path.exists():
            return cls(path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            documents = {d["doc_id"]: DocumentEntry.from_dict(d) for d in data["documents"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StaleIndex(f"the index manifest {path} is unreadable ({type(exc).__name__}): "
                             f"{ACTION}", action=Action.REBUILD_INDEX) from exc
        return cls(path=path, settings_fingerprint=data.get("settings_fingerprint", ""),
                   shaping_settings=data.get("shaping_settings", {}),
                   encoded_with=list(data.get("encoded_with", [])),
                   roots=list(data.get("roots", [])), documents=documents)

    @classmethod
    def empty(cls, settings: Settings) -> "Manifest":
        return cls(path=settings.path("index_dir") / MANIFEST_NAME,
                   settings_fingerprint=settings.index_fingerprint(),
                   shaping_settings=settings.shaping_settings())

    def save(self) -> None:
        """Write atomically: a temporary file in the same directory, fsync, os.replace."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "format": FORMAT_VERSION,
            "settings_fingerprint": self.settings_fingerprint,
            "shaping_settings": self.shaping_settings,
            "encoded_with": sorted(set(self.encoded_with)),
            "roots": sorted(set(self.roots)),
            "content": self.content_hash(),
            "documents": [self.documents[k].to_dict() for k in sorted(self.documents)],
        }
        fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False, indent=1)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ---- the read API -----------------------------------------------------
    def pages(self, doc_id: str) -> list[PageEntry]:
        """Every page (or record) ingestion found in ``doc_id``, indexed or not."""
        entry = self.documents.get(doc_id)
        return list(entry.pages) if entry else []

    def complete(self) -> list[DocumentEntry]:
        return [e for e in self._sorted() if e.state == "complete"]

    def pending(self) -> list[DocumentEntry]:
        return [e for e in self._sorted() if e.state == "pending"]

    def refused(self) -> list[DocumentEntry]:
        return [e for e in self._sorted() if e.state == "refused"]

    def by_path(self) -> dict[str, DocumentEntry]:
        return {e.path: e for e in self.documents.values()}

    def complete_chunk_ids(self) -> set[str]:
        return {chunk_id for e in self.complete() for chunk_id in e.chunk_ids}

    def excluded_pages(self) -> list[tuple[str, PageEntry]]:
        """(doc_id, page) of every page that is not in the index, with its reason."""
        return [(e.doc_id, p) for e in self._sorted() for p in e.pages if not p.indexed]

    def content_hash(self) -> str:
        """Hash of what the index holds: the settings and each complete document's sha256."""
        parts = [self.settings_fingerprint] + sorted(
            f"{e.doc_id}:{e.sha256}:{e.n_chunks}" for e in self.complete())
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def stale_reason(self, settings: Settings) -> str | None:
        """Why this index does not match ``settings``, or None when it does (or is empty)."""
        if not self.documents or self.settings_fingerprint == settings.index_fingerprint():
            return None
        current = settings.shaping_settings()
        changed = [f"{name} {self.shaping_settings.get(name)!r} -> {value!r}"
                   for name, value in current.items() if self.shaping_settings.get(name) != value]
        what = "; ".join(changed) if changed else "settings that shape the index (record fields)"
        n = len(self.complete())
        return (f"the index was built with other settings ({what}); its {n} document(s) "
                "must be re-chunked and re-embedded")

    def _sorted(self) -> list[DocumentEntry]:
        return [self.documents[k] for k in sorted(self.documents)]
