"""`ragloupe check --answer FILE --sources FILE`: check an answer ragloupe did not write.

The answer file is plain text. The sources file is JSON: a list whose items
are strings or objects with "text" (and optionally "title", "source_type",
"link"), or an object holding such a list under "sources" (a Halloumi
request body works as it is); any other file is read as one plain-text
source. "[1]" in the answer cites the first source.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ragloupe.cli import CommandResult, add_json_flag
from ragloupe.errors import CheckInputInvalid


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("check", help="check a pasted answer against sources you give",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--answer", required=True, metavar="FILE", help="the answer, as plain text")
    parser.add_argument("--sources", required=True, metavar="FILE",
                        help="JSON list of sources (strings or {text, title, ...}), or one plain-text source")
    parser.add_argument("--no-claims", action="store_true", help="skip the LLM claim check (screen only)")
    parser.add_argument("--batch-size", type=int, default=None, help="claims per verification call (default 8)")
    add_json_flag(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.config import get_settings
    from ragloupe.generate.check import check
    from ragloupe.generate.claims import BATCH_SIZE

    answer = _read_text(Path(args.answer), "answer")
    if not answer.strip():
        raise CheckInputInvalid(f"{args.answer}: the answer is empty")
    sources = read_sources(Path(args.sources))
    settings = get_settings()
    result = check(answer, sources, settings, batch_size=args.batch_size or BATCH_SIZE,
                   claims=not args.no_claims, embedder=_embedder(settings, args))
    return CommandResult(result.as_dict(), result.summary())


def _embedder(settings: Any, args: argparse.Namespace) -> Any:
    """The embedding model re-ranks each claim's evidence when an LLM will verify claims."""
    from ragloupe.generate.check import use_model_free

    if args.no_claims or settings.check_evidence == "whole-sources" or use_model_free(settings):
        return None
    from ragloupe.index.embedder import get_embedder

    return get_embedder(settings)


def read_sources(path: Path) -> list:
    """Sources from a file, as described in the module docstring."""
    text = _read_text(path, "sources")
    if path.suffix.lower() != ".json":
        if not text.strip():
            raise CheckInputInvalid(f"{path}: the sources file is empty")
        return [_source({"text": text}, path, 1)]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckInputInvalid(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None
    items = data.get("sources") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise CheckInputInvalid(f"{path}: expected a non-empty list of sources, or an object with one under \"sources\"")
    return [_source(item, path, number) for number, item in enumerate(items, start=1)]


def _source(item: Any, path: Path, number: int):
    from ragloupe.generate.check import Source

    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict) or not isinstance(item.get("text"), str):
        raise CheckInputInvalid(f"{path}: source {number} has no \"text\" string")
    fields = {key: str(item.get(key) or "") for key in ("title", "source_type", "link")}
    return Source(text=item["text"], **fields)


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CheckInputInvalid(f"{path}: no such {what} file") from None
    except UnicodeDecodeError:
        raise CheckInputInvalid(f"{path}: the {what} file is not UTF-8 text") from None
    except OSError as exc:
        raise CheckInputInvalid(f"{path}: cannot read the {what} file ({exc.strerror})") from None
