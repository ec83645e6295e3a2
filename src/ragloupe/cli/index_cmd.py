"""`ragloupe index`, `ragloupe validate`, `ragloupe status`: build and inspect the index.

    ragloupe index [PATHS ...] [--rebuild] [--if-empty] [--json]
    ragloupe validate PATH [--json]
    ragloupe status [--json]

``index`` with no PATHS re-indexes the roots recorded in the manifest plus
RAGLOUPE_RAW_DIR. It exits 0 when every file went in, 1 when some file was
refused (the others are indexed all the same). ``validate`` exits 1 when the
file would be refused. A progress bar goes to stderr; with --json, stdout
holds only the JSON result.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ragloupe.cli import CommandResult, add_json_flag
from ragloupe.config import get_settings
from ragloupe.errors import COMMAND_LINE_WORDS, Action

# File names, record ids and reasons come from the files: print them as inert text,
# never as terminal control sequences.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(value: object) -> str:
    return _CONTROL.sub("?", str(value))


def register(sub: argparse._SubParsersAction) -> None:
    index = sub.add_parser("index", help="index PDFs and records files (incremental)",
                           description="Index sources incrementally: only new or modified files "
                                       "are embedded; deleted files are removed.")
    index.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: the roots indexed before, "
                            "plus RAGLOUPE_RAW_DIR)")
    index.add_argument("--rebuild", action="store_true",
                       help="drop the index and rebuild it (needed after a settings change)")
    index.add_argument("--if-empty", action="store_true",
                       help="index only when the index holds no document yet")
    add_json_flag(index)
    index.set_defaults(handler=handle_index)

    validate = sub.add_parser("validate", help="check a records file (or a PDF) without indexing it")
    validate.add_argument("path", metavar="PATH")
    add_json_flag(validate)
    validate.set_defaults(handler=handle_validate)

    status = sub.add_parser("status", help="what the index holds, and whether it is stale")
    add_json_flag(status)
    status.set_defaults(handler=handle_status)


# ---- index -----------------------------------------------------------------------
def handle_index(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.progress import ProgressBar
    from ragloupe.index.manifest import Manifest
    from ragloupe.index.pipeline import run_index
    from ragloupe.workspace import save_search_copies

    settings = get_settings()
    if args.if_empty:
        held = Manifest.load(settings).complete()
        if held:
            text = (f"index not empty ({len(held)} documents in "
                    f"{settings.path('index_dir')}); nothing to do")
            return CommandResult({"skipped": True, "reason": "index not empty",
                                  "documents": len(held)}, text)
    with ProgressBar(unit="file") as bar:
        summary = run_index(args.paths or None, settings, rebuild=args.rebuild, progress=bar.update,
                            save_derived=save_search_copies)
    data = summary.as_dict()
    return CommandResult(data, format_summary(data, settings.path("index_dir")),
                         exit_code=1 if summary.errors else 0)


def format_summary(data: dict, index_dir: Path) -> str:
    """The summary table people read after `ragloupe index`."""
    from ragloupe.index.pipeline import filled_sentences_line

    lines = [f"index: {index_dir}"]
    if data["rebuilt"]:
        lines.append("rebuilt from scratch")
    for fixed in data["repaired"]:
        lines.append(f"repaired   {plain(fixed)}")
    for label in ("new", "modified", "unchanged", "deleted"):
        names = data[label]
        shown = ", ".join(names[:6]) + (f", ... (+{len(names) - 6})" if len(names) > 6 else "")
        lines.append(f"{label:<10} {len(names):>5}  {plain(shown)}".rstrip())
    lines.append(f"{'pages':<10} {data['pages_indexed']:>5}  indexed, "
                 f"{data['pages_excluded']} excluded")
    for reason, count in data["excluded_reasons"].items():
        lines.append(f"{'':<10} {count:>5}  excluded: {plain(reason)}")
    lines.append(f"{'chunks':<10} {data['chunks_added']:>5}  added, {data['chunks_removed']} removed; "
                 f"the index holds {data['documents']} documents, {data['chunks']} chunks")
    if filled := filled_sentences_line(data):
        lines.append(f"{'sentences':<10} {filled}")
    if data["review_findings"]:
        lines.append(f"{'review':<10} {len(data['review_findings']):>5}  records findings to review "
                     "(not blocking; `ragloupe validate PATH` lists them)")
    if data.get("unindexed"):
        lines.append(f"{'no pages':<10} {len(data['unindexed']):>5}  documents with no page indexed "
                     "(nothing of them is searchable)")
        for doc in data["unindexed"]:
            why = "; ".join(f"{n} {reason}" for reason, n in doc["reasons"].items())
            lines.append(f"  {plain(Path(doc['path']).name)}: 0 of {doc['pages']} pages indexed"
                         + (f" ({plain(why)})" if why else ""))
    lines.append(f"{'errors':<10} {len(data['errors']):>5}")
    for error in data["errors"]:
        lines.append(f"  {plain(Path(error['path']).name)}: {plain(error['error'])}")
    lines.append(f"took {data['timings'].get('total', 0):.1f} s")
    return "\n".join(lines)


# ---- validate --------------------------------------------------------------------
def handle_validate(args: argparse.Namespace) -> CommandResult:
    from dataclasses import asdict

    from ragloupe.ingest import format_findings, load_source
    from ragloupe.ingest.sources import kind_for

    settings = get_settings()
    path = Path(args.path)
    doc = load_source(path, settings)
    data = {
        "path": str(path), "doc_id": doc.doc_id, "kind": doc.kind, "refused": doc.blocked,
        "error": doc.error, "findings": [asdict(f) for f in doc.findings],
        "pages": len(doc.pages),
        "quality": _count(p.quality for p in doc.pages),
        "excluded_pages": [{"page": p.page, "quality": p.quality, "reason": p.reason}
                           for p in doc.pages if not p.indexable],
    }
    if kind_for(path) == "records":
        text = plain(format_findings(doc))
    else:
        text = _pdf_report(data, path)
    return CommandResult(data, text, exit_code=1 if doc.blocked else 0)


def _pdf_report(data: dict, path: Path) -> str:
    if data["error"]:
        return plain(f"{path.name}: refused: {data['error']}")
    quality = ", ".join(f"{n} {q}" for q, n in data["quality"].items())
    lines = [f"{path.name}: ok; {data['pages']} pages ({quality})"]
    for page in data["excluded_pages"]:
        lines.append(f"  page {page['page']:>4} {page['quality']:<9} not indexed: {plain(page['reason'])}")
    return "\n".join(lines)


def _count(values) -> dict[str, int]:
    from collections import Counter

    return dict(sorted(Counter(values).items()))


# ---- status ----------------------------------------------------------------------
def handle_status(args: argparse.Namespace) -> CommandResult:
    from ragloupe.index.pipeline import sentences_line, status
    from ragloupe.retrieve import query_adapter

    settings = get_settings()
    data = status(settings).as_dict()
    adapter, said = query_adapter.in_force(settings)
    data["query_adapter"] = {"applied": adapter is not None, "source": adapter.source if adapter else None,
                             "line": said}
    lines = [f"index:     {data['index_dir']} ({data['store']})",
             f"documents: {data['n_documents']}   pages: {data['n_pages']} "
             f"({data['n_pages_indexed']} indexed)   chunks: {data['n_chunks_store']}",
             "quality:   " + (", ".join(f"{n} {q}" for q, n in data["quality"].items()) or "-"),
             f"settings:  fingerprint {data['settings_fingerprint'] or '-'}"
             f" (settings in force: {data['current_fingerprint']})",
             "encoded:   " + (", ".join(data["encoded_with"]) or "not recorded (indexed before it was)"),
             "sentences: " + sentences_line(data),
             "question:  dense searches with " + said]
    lines.append(f"stale:     {data['stale']}: {COMMAND_LINE_WORDS[Action.REBUILD_INDEX]}, "
                 "or restore the previous settings" if data["stale"] else "stale:     no")
    if data["n_chunks_manifest"] != data["n_chunks_store"] or data["pending"]:
        lines.append(f"repair:    the store holds {data['n_chunks_store']} chunks, the manifest "
                     f"{data['n_chunks_manifest']}; the next `ragloupe index` repairs it")
    if data["busy_pid"]:
        lines.append(f"busy:      an indexer is running (pid {data['busy_pid']})")
    for doc in data["documents"]:
        lines.append(f"  {plain(doc['doc_id']):<28} {doc['kind']:<7} {doc['pages']:>5} pages "
                     f"{doc['pages_indexed']:>5} indexed {doc['chunks']:>6} chunks"
                     + ("  (no page indexed)" if not doc["pages_indexed"] else ""))
    for doc_id in data["refused"]:
        lines.append(f"  {plain(doc_id):<28} refused")
    return CommandResult(data, "\n".join(lines))
