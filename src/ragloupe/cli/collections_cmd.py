"""`ragloupe collections list | create NAME`: the named indexes side by side.

Every command takes ``--collection NAME`` (before or after the subcommand) to
work on that collection instead of RAGLOUPE_COLLECTION's.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult, add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("collections", help="list or create named collections (each its own index)",
                            description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every collection, with its documents, chunks, runs and gold sets")
    add_json_flag(listing)
    listing.set_defaults(handler=run_list)
    create = actions.add_parser("create", help="make the folders of a new collection")
    create.add_argument("name", help="3-63 letters, digits, - or _")
    add_json_flag(create)
    create.set_defaults(handler=run_create)


def run_list(args: argparse.Namespace) -> CommandResult:
    from ragloupe.collections import list_collections
    from ragloupe.config import get_settings

    rows = list_collections(get_settings())
    lines = [f"{'*' if r.current else ' '} {r.name:<24} {r.documents:>5} documents {r.chunks:>7} chunks "
             f"{r.runs:>4} runs {r.goldsets:>4} gold sets  {r.index_dir}" for r in rows]
    return CommandResult([r.as_dict() for r in rows], "\n".join(lines + ["(* = in force)"]))


def run_create(args: argparse.Namespace) -> CommandResult:
    from ragloupe.collections import create_collection
    from ragloupe.config import get_settings

    folder = create_collection(get_settings(), args.name)
    return CommandResult({"name": args.name, "path": str(folder)},
                         f"collection {args.name} created in {folder}; index into it with "
                         f"`ragloupe --collection {args.name} index PATH`")
