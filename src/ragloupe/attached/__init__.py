"""Outside systems attached by name as engines: ``ragloupe attach NAME ...``.

Four kinds, each one module behind the engine protocol (retrieve/engines.py):
an existing Chroma collection (chroma_engine), a Python retriever function
(python_engine), an HTTP retriever (http_engine) and a run file (run_engine).
attachments.py keeps what is attached in a JSON file beside the index;
outside_hits.py turns an outside system's ranked units into engine hits. Once
attached, an engine is a mode of its own (``NAME``, ``hybrid+NAME``) everywhere
a mode is: search, compare, evaluation, the failure audit, the API.
"""

from __future__ import annotations

import importlib
from typing import Any

from ragloupe.attached.attachments import KINDS, Attachment, add, load, remove
from ragloupe.config import Settings
from ragloupe.errors import AttachRefused
from ragloupe.retrieve.modes import engine_name_problem
from ragloupe.retrieve.registry import EngineEntry

# kind -> (module, engine class)
ENGINE_CLASSES = {"chroma": ("chroma_engine", "ChromaEngine"), "python": ("python_engine", "PythonEngine"),
                  "http": ("http_engine", "HttpEngine"), "run": ("run_engine", "RunFileEngine")}


def open_engine(attachment: Attachment, settings: Settings):
    """The engine of one attachment (nothing is opened until its first search)."""
    module, cls = ENGINE_CLASSES[attachment.kind]
    return getattr(importlib.import_module(f"ragloupe.attached.{module}"), cls)(attachment, settings)


def attached_entries(settings: Settings) -> tuple[list[EngineEntry], list[str]]:
    """Every attached engine as a registry entry, and a line per attachment that cannot be used."""
    attachments, problems = load(settings)
    return [EngineEntry(open_engine(a, settings), "attached", a.target()) for a in attachments], problems


def attach(settings: Settings, name: str, kind: str, *, replace: bool = False, embedder=None,
           **options: Any) -> Attachment:
    """Check an outside system can be used as engine ``name`` and keep it; AttachRefused in one line.

    ``options`` by kind: chroma (collection, path or host and port, doc_field, page_field,
    page_base, model; ``embedder``: the model the question is embedded by, for the
    dimension check), python (function), http (url), run (path, goldsets).
    """
    why = engine_name_problem(name)
    if why:
        raise AttachRefused(why)
    if kind not in KINDS:
        raise AttachRefused(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    module = importlib.import_module(f"ragloupe.attached.{ENGINE_CLASSES[kind][0]}")
    if kind == "chroma":
        settled = module.attach_options(name=name, settings=settings, embedder=embedder, **options)
    elif kind == "python":
        settled = module.attach_options(options["function"])
    elif kind == "http":
        settled = module.attach_options(options["url"])
    else:
        settled = module.attach_options(options["path"], list(options.get("goldsets") or []))
    return add(settings, Attachment(name, kind, settled), replace=replace)


__all__ = ["KINDS", "Attachment", "attach", "attached_entries", "load", "open_engine", "remove"]
