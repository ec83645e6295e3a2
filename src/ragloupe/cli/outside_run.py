"""`ragloupe eval --run FILE` / `--retriever package.module:function`: an outside pipeline measured.

The outside ranking is scored on the gold sets like a ragloupe run, written
under RAGLOUPE_RUNS_DIR only when every line of it was good, and compared
pair by pair with ragloupe's own modes (``--against``, default the mode in
force). Also the ``--fail-under`` gate every eval shares.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Sequence

from ragloupe.cli import CommandResult
from ragloupe.config import Settings

PROBLEMS_SHOWN = 50


def add_outside_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", metavar="FILE",
                        help="score a run file from another system: TREC (qid Q0 docno rank score tag) "
                             'or JSON Lines {"query_id", "ranked": [...]}')
    parser.add_argument("--retriever", metavar="package.module:function",
                        help="score your own function (question -> ranked list of (doc_id, page) or "
                             "record ids), called live for each gold question")
    parser.add_argument("--label", help="name the outside run (default: the TREC tag, the file or function)")
    parser.add_argument("--against", default=None, metavar="MODE,...",
                        help="ragloupe modes to compare the outside run with (default: the mode in force; "
                             "'none' for no comparison)")
    parser.add_argument("--missing-as-empty", action="store_true",
                        help="score a gold question the run does not rank as finding nothing "
                             "(default: refuse the run)")


def handle_outside(args: argparse.Namespace, goldsets: list, load_errors: list[str], settings: Settings,
                   ks: Sequence[int], floors: dict, workspace) -> CommandResult:
    """Score an outside run (a file, or a function called per question), then run and pair each
    ragloupe mode it is compared with, through the command's ``workspace``."""
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.cli.eval_cmd import BadOption, render_comparison, render_run
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.outside import (OutsideRunInvalid, load_retriever, parse_run_file, rank_with,
                                           score_outside)
    from ragloupe.evaluate.runs import evaluate, save_report, searched_documents

    if args.run and args.retriever:
        raise BadOption("give --run or --retriever, not both")
    if args.retriever:
        if os.getcwd() not in sys.path:  # `ragloupe` is an entry point: let it import the user's modules
            sys.path.insert(0, os.getcwd())
        queries = [q for g in goldsets for q in g.queries]
        outside = rank_with(load_retriever(args.retriever), queries, args.retriever)
    else:
        outside = parse_run_file(args.run)
    if args.label:
        outside = dataclasses.replace(outside, label=args.label)
    try:
        report = score_outside(goldsets, outside, settings, ks=ks, scope=args.scope,
                               failure_k=args.failure_k, missing_as_empty=args.missing_as_empty,
                               store=workspace.store)
    except OutsideRunInvalid as exc:
        return _refused(outside.label, exc.problems)
    report = save_report(report, settings)
    lines = [render_run(report, load_errors), "", f"note: {report.data['failures']['note']}"]
    comparisons = []
    against = _against(args.against, settings)
    encode_missing_sentences(workspace, against, searched_documents(goldsets, args.scope))
    for mode in against:
        baseline = evaluate(goldsets, mode=mode, ks=ks, scope=args.scope,
                            failure_k=args.failure_k, workspace=workspace.with_settings(settings))
        comparison = compare(baseline, report)
        comparisons.append(comparison.as_dict())
        lines += ["", f"--- {outside.label} against ragloupe {mode} (A = ragloupe, B = {outside.label})",
                  *render_comparison(comparison)]
    data = {"run_id": report.run_id, "path": str(report.path), "load_errors": load_errors,
            "metrics": report.data["metrics"]["all"], "failures": report.data["failures"]["counts"],
            "source": report.data["source"], "comparisons": comparisons}
    return gate_floors(CommandResult(data, "\n".join(lines)), report, floors)


def gate_floors(result: CommandResult, report, floors: dict) -> CommandResult:
    """The --fail-under gate: exit 1 and one line naming each figure under its floor."""
    from ragloupe.evaluate.ci_gates import below_floors

    if not floors:
        return result
    fell = below_floors(report.data["metrics"]["all"], floors)
    if isinstance(result.data, dict):
        result.data["gate"] = {"floors": floors, "fell": fell}
    if not fell:
        return result
    line = f"fail-under: {report.run_id}: " + "; ".join(fell)
    return CommandResult(result.data, result.text, exit_code=1, gate_line=line)


def _against(text: str | None, settings: Settings) -> list[str]:
    from ragloupe.retrieve.search import parse_mode

    if text is None:
        return [settings.mode]
    modes = [m.strip() for m in text.split(",") if m.strip()]
    if modes == ["none"]:
        return []
    for mode in modes:
        parse_mode(mode)  # an unknown mode is one line before anything runs
    return modes


def _refused(label: str, problems: list) -> CommandResult:
    lines = [f"{label}: {len(problems)} problem(s) in the ranking; nothing was scored or saved as a run"]
    lines += [f"  {p}" for p in problems[:PROBLEMS_SHOWN]]
    if len(problems) > PROBLEMS_SHOWN:
        lines.append(f"  ... and {len(problems) - PROBLEMS_SHOWN} more (--json lists them all)")
    data = {"error": lines[0], "problems": [p.as_dict() for p in problems]}
    return CommandResult(data, "\n".join(lines), exit_code=2)

