"""`ragloupe doctor`: is this machine ready for ragloupe as configured? One line per check.

    ragloupe doctor [--strict] [--json]

Checks the Python and the package pins of requirements.txt, the bundled model
loading offline, Chroma (embedded or the server), tesseract, the LLM and
embedding servers when configured, and disk space for the index (see
diagnostics/doctor.py). Exits 0, or with --strict 1 when any check failed.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult, add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("doctor", help="check this machine: versions, model, Chroma, OCR, servers, disk",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when any check fails")
    add_json_flag(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.index_cmd import plain
    from ragloupe.config import get_settings
    from ragloupe.diagnostics.doctor import run_checks

    checks = run_checks(get_settings())
    failed = [c.name for c in checks if c.status == "fail"]
    lines = [f"{c.status:<5} {c.name:<17} {plain(c.detail)}" for c in checks]
    lines.append(f"{len(failed)} of {len(checks)} checks failed" + (f": {', '.join(failed)}" if failed else ""))
    data = {"checks": [c.as_dict() for c in checks], "failed": failed, "strict": args.strict}
    return CommandResult(data, "\n".join(lines), exit_code=1 if args.strict and failed else 0)
