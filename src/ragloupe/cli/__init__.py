"""The `ragloupe` command: everything the workbench does, headless.

Each area keeps its subcommands in its own module (index_cmd, search_cmd,
eval_cmd, answer_cmd); this module wires them up and is the one place that
turns errors into a one-line message. A RagloupeError is the user's to act
on; anything else is a bug, logged with its traceback to logs/ragloupe.log.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable, Sequence

from ragloupe.config import bootstrap_environment

bootstrap_environment()

from ragloupe.errors import RagloupeError  # noqa: E402
from ragloupe.logs import log_exception, warnings_to_log  # noqa: E402

# Modules that add subcommands: each has register(subparsers) and sets
# `handler` on its parsers: handler(args) -> CommandResult.
COMMAND_MODULES = ("index_cmd", "search_cmd", "eval_cmd", "goldset_cmd", "answer_cmd", "chat_cmd", "tune_cmd",
                   "check_cmd", "serve_cmd", "doctor_cmd", "collections_cmd", "adapt_cmd", "engines_cmd")


class CommandResult:
    """What a subcommand returns: data for --json and text for people."""

    def __init__(self, data: Any, text: str, exit_code: int = 0, gate_line: str = ""):
        # gate_line: why a gate failed, one line on stderr whether or not --json is given
        self.data, self.text, self.exit_code, self.gate_line = data, text, exit_code, gate_line


def build_parser() -> argparse.ArgumentParser:
    import importlib

    parser = argparse.ArgumentParser(prog="ragloupe", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"ragloupe.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"ragloupe.cli.{name}":
                continue
            raise
        module.register(sub)
    # --collection NAME before the subcommand or after it (SUPPRESS: a subcommand's absent flag
    # must not overwrite the one given before it).
    parser.add_argument("--collection", default=None, metavar="NAME", help=COLLECTION_HELP)
    for subparser in sub.choices.values():
        if "--collection" in subparser._option_string_actions:  # attach: --collection names a Chroma collection
            continue
        subparser.add_argument("--collection", default=argparse.SUPPRESS, metavar="NAME", help=COLLECTION_HELP)
    return parser


COLLECTION_HELP = "work on this named collection (default: RAGLOUPE_COLLECTION); `ragloupe collections list`"


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def settings_with_overrides(items: Sequence[str]):
    """The settings in force with each ``--set NAME=VALUE`` applied (every command's one
    parser for them); a malformed item or a bad value is one SettingsInvalid line."""
    from ragloupe.config import get_settings
    from ragloupe.errors import SettingsInvalid

    changes = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise SettingsInvalid(f"--set wants NAME=VALUE, got {item!r}")
        changes[name.strip()] = value.strip()
    settings = get_settings()
    try:
        return settings.replace(**changes) if changes else settings
    except SettingsInvalid as exc:
        raise SettingsInvalid(f"--set: {exc}") from None


def check_settings() -> None:
    """Validate every setting once, before any command runs (a bad one raises
    SettingsInvalid, one line), and warn about RAGLOUPE_* names that are no setting."""
    from ragloupe.config import get_settings, setting_warnings

    get_settings()
    for line in setting_warnings():
        print(f"ragloupe: warning: {line}", file=sys.stderr)


def run(handler: Callable[[argparse.Namespace], CommandResult], args: argparse.Namespace) -> int:
    try:
        if getattr(args, "collection", None):
            from ragloupe.config import select_collection

            select_collection(args.collection)
        check_settings()
        with warnings_to_log():
            result = handler(args)
    except RagloupeError as exc:
        _fail(args, str(exc))
        return 2
    except KeyboardInterrupt:
        _fail(args, "interrupted")
        return 130
    except Exception as exc:  # a bug: keep the traceback off the screen
        where = log_exception(exc)
        _fail(args, f"internal error ({type(exc).__name__}: {exc}); details in {where}")
        return 1
    try:
        if getattr(args, "json", False):
            print(json.dumps(result.data, indent=2, default=str, ensure_ascii=False))
        else:
            print(result.text)
        sys.stdout.flush()
        if result.gate_line:
            print(f"ragloupe: {result.gate_line}", file=sys.stderr)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error worth a traceback.
        # Point stdout at devnull so the interpreter's final flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return result.exit_code


def _fail(args: argparse.Namespace, message: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"error": message}))
    print(f"ragloupe: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run(args.handler, args)


if __name__ == "__main__":
    sys.exit(main())
