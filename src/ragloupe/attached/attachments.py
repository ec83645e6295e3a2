"""Where attached engines are kept: one small JSON file beside the index.

``<index_dir>/attached_engines.json`` (each named collection has its own index
dir, so its own attachments)::

    {"schema": 1, "engines": [
      {"name": "mylc", "kind": "chroma", "attached_at": "2026-12-04T22:30:00+00:00",
       "options": {"path": "/abs/chroma_dir", "collection": "docs", "doc_field": "source",
                   "page_field": "page", "page_base": 0, "model": ""}}]}

The file holds what to open, never what was read: an attachment is opened again
by each face that searches it. It is written whole to a temporary file and moved
into place, so a reader never sees half of it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import AttachRefused, EngineNotFound

FILE_NAME = "attached_engines.json"
SCHEMA = 1
KINDS = ("chroma", "python", "http", "run")


@dataclass(frozen=True)
class Attachment:
    """One outside system attached by name: its kind and what opens it."""

    name: str
    kind: str  # chroma | python | http | run
    options: dict = field(default_factory=dict)
    attached_at: str = ""

    def target(self) -> str:
        """What it reads, in a few words (`ragloupe engines` shows it)."""
        o = self.options
        if self.kind == "chroma":
            where = o.get("path") or f"{o.get('host')}:{o.get('port')}"
            return f"chroma {where} collection {o.get('collection')}"
        return f"{self.kind} {o.get('function') or o.get('url') or o.get('path') or ''}".strip()


def file_of(settings: Settings) -> Path:
    return settings.path("index_dir") / FILE_NAME


def stamp(settings: Settings) -> tuple:
    """Changes whenever the file does: what a workspace keys its attached engines by."""
    path = file_of(settings)
    try:
        info = path.stat()
    except OSError:
        return (str(path), None, None)
    return (str(path), info.st_mtime_ns, info.st_size)


def load(settings: Settings) -> tuple[list[Attachment], list[str]]:
    """The attachments, and a line per entry that cannot be read (the file itself unreadable: one line)."""
    path = file_of(settings)
    if not path.exists():
        return [], []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["engines"]
        if not isinstance(entries, list):
            raise TypeError("engines is not a list")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [], [f"{path}: cannot be read ({exc}); `ragloupe attach` writes it anew"]
    found, problems = [], []
    for number, entry in enumerate(entries, start=1):
        try:
            attachment = Attachment(str(entry["name"]), str(entry["kind"]), dict(entry.get("options") or {}),
                                    str(entry.get("attached_at", "")))
        except (KeyError, TypeError, ValueError):
            problems.append(f"{path}: entry {number} has no name and kind")
            continue
        if attachment.kind not in KINDS:
            problems.append(f"{path}: {attachment.name}: unknown kind {attachment.kind!r}")
            continue
        found.append(attachment)
    return found, problems


def save(settings: Settings, attachments: list[Attachment]) -> Path:
    """Write the attachments whole (a temporary file moved into place)."""
    path = file_of(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"schema": SCHEMA, "engines": [asdict(a) for a in sorted(attachments, key=lambda a: a.name)]}
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".attached-", suffix=".json")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(body, out, indent=2, ensure_ascii=False)
        out.write("\n")
    os.replace(temporary, path)
    return path


def add(settings: Settings, attachment: Attachment, replace: bool = False) -> Attachment:
    """Keep ``attachment``; a name already attached is refused unless ``replace``."""
    current, _ = load(settings)
    if not replace and any(a.name == attachment.name for a in current):
        raise AttachRefused(f"an engine is already attached as {attachment.name!r}: "
                            f"`ragloupe attach --remove {attachment.name}` first, or --replace")
    stamped = Attachment(attachment.name, attachment.kind, attachment.options,
                         attachment.attached_at or datetime.now(timezone.utc).isoformat(timespec="seconds"))
    save(settings, [a for a in current if a.name != attachment.name] + [stamped])
    return stamped


def remove(settings: Settings, name: str) -> Attachment:
    """Forget the attachment called ``name`` (what it read is left as it was)."""
    current, _ = load(settings)
    gone = [a for a in current if a.name == name]
    if not gone:
        names = ", ".join(a.name for a in current) or "none"
        raise EngineNotFound(f"no engine is attached as {name!r} (attached: {names})")
    save(settings, [a for a in current if a.name != name])
    return gone[0]
