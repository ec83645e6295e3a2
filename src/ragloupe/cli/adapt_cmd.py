"""`ragloupe adapt`: fine-tune the embedding model on the indexed corpus and keep it if it wins.

    ragloupe adapt [GOLDSET ...] [--keep-untested] [--set NAME=VALUE] [--json]
    ragloupe adapt --revert [--json]
    ragloupe adapt --queries [GOLDSET ...] [--json]      # a query adapter, nothing re-embedded
    ragloupe adapt --queries --revert [--json]

Pseudo-queries are cut from the index's own text (a sentence for the rest of its passage,
a heading for its section, a table's row and column labels, a record's title), with hard
negatives from BM25 over the same document; the configured model is fine-tuned on them
within RAGLOUPE_ADAPT_MAX_STEPS / RAGLOUPE_ADAPT_MAX_SECONDS and saved under
<index dir>/models/. The index is re-embedded into a scratch collection and swapped in at
once, then the gold sets (default: your own, `ragloupe goldset list`) are searched before and
after: the adapted model is kept only when its Hit@1 is not lower on any gold set and its MRR
over all questions is higher; otherwise the previous collection is swapped back. No gold
question is ever trained on. --revert re-embeds the index with the configured model.
--queries instead learns a query adapter (a matrix on the question's embedding) from the gold
questions themselves, scores each question with an adapter trained without it (5 folds), and
keeps it for this index on the same rule; nothing is re-embedded.
Details: docs/adapt.md.
"""

from __future__ import annotations

import argparse
import sys

from ragloupe.cli import CommandResult, add_json_flag, settings_with_overrides


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("adapt", help="fine-tune the embedding model on the indexed corpus",
                            description=__doc__.splitlines()[0])
    parser.add_argument("goldsets", nargs="*", metavar="GOLDSET",
                        help="gold sets the decision is made on: files or names of yours "
                             "(default: every gold set of yours)")
    parser.add_argument("--keep-untested", action="store_true",
                        help="with no gold set to compare on, use the adapted model anyway")
    parser.add_argument("--revert", action="store_true",
                        help="re-embed the index with the configured model and stop using the adapted one "
                             "(with --queries: stop using the index's own query adapter)")
    parser.add_argument("--queries", action="store_true",
                        help="learn a query adapter from the gold questions instead of fine-tuning the model")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                        help="override a setting for this run, e.g. --set adapt_max_steps=50")
    add_json_flag(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.adapt import compare
    from ragloupe.adapt.run import adapt, revert, training_summary
    from ragloupe.evaluate.usersets import list_user_goldsets, resolve_goldset
    from ragloupe.workspace import Workspace

    settings = settings_with_overrides(args.overrides)
    if args.queries:
        return _queries(args, settings)
    if args.revert:
        done = revert(settings, progress=_progress_line)
        return CommandResult(done, f"index re-embedded with {done['reverted_to']} ({done['chunks']} chunks)")
    goldsets = [resolve_goldset(g, settings) for g in args.goldsets] or list_user_goldsets(settings)
    outcome = adapt(Workspace.open(settings), goldsets, progress=_progress_line, keep_untested=args.keep_untested)
    training = outcome.training
    lines = [f"adapted model: {outcome.model_dir}" + (" (reused: same corpus and settings)" if outcome.reused_model else ""),
             "pairs: " + ", ".join(f"{k} {v}" for k, v in outcome.pairs.items()),
             f"training: {training_summary(training)}"]
    if outcome.comparison:
        lines += ["", f"before -> after, mode {outcome.mode}, each question in its own document "
                      "(p: paired permutation test)"]
        lines += compare.table_lines(outcome.comparison)
    lines += ["", ("KEPT: " if outcome.kept else "NOT KEPT: ") + outcome.reason]
    return CommandResult(outcome.as_dict(), "\n".join(lines))


def _queries(args: argparse.Namespace, settings) -> CommandResult:
    from ragloupe.adapt import compare
    from ragloupe.adapt.query_run import adapt_queries, revert_queries
    from ragloupe.evaluate.usersets import list_user_goldsets, resolve_goldset
    from ragloupe.workspace import Workspace

    if args.revert:
        done = revert_queries(settings)
        return CommandResult(done, f"the index's own query adapter is no longer used: dense searches with "
                                   f"RAGLOUPE_QUERY_ADAPTER={done['reverted_to']}")
    goldsets = [resolve_goldset(g, settings) for g in args.goldsets] or list_user_goldsets(settings)
    outcome = adapt_queries(Workspace.open(settings), goldsets, progress=_progress_line)
    skipped = "".join(f"; {n} left out: {why}" for why, n in outcome.skipped.items())
    lines = [f"query adapter: {outcome.questions} gold questions from {len(outcome.goldsets)} gold set(s){skipped}",
             "", f"before (RAGLOUPE_QUERY_ADAPTER={outcome.baseline}) -> after (each question searched with an "
                 f"adapter learned from the other {outcome.folds - 1} of {outcome.folds} folds), mode "
                 f"{outcome.mode}, each question in its own document (p: paired permutation test)"]
    lines += compare.table_lines(outcome.comparison)
    lines += ["", ("KEPT: " if outcome.kept else "NOT KEPT: ") + outcome.reason]
    if outcome.overridden_by:
        lines.append(f"saved for this index as {outcome.adapter_file}, but {outcome.overridden_by} wins "
                     "while it is set: unset it to search with the index's own")
    elif outcome.kept:
        lines.append(f"this index's dense searches now use {outcome.adapter_file} "
                     "(`ragloupe adapt --queries --revert` stops it)")
    return CommandResult(outcome.as_dict(), "\n".join(lines))


def _progress_line(step) -> None:
    """One line on stderr per stage, every tenth training step, and each document whose sentence
    vectors are encoded before the gold sets are searched."""
    if step.stage == "train" and step.done % 10 and step.done != step.total:
        return
    if step.stage == "reembed" and step.done != step.total and step.done % 1024:
        return
    if step.stage == "draft" and step.done != step.total and step.done % 64:
        return
    count = f" {step.done}/{step.total}" if step.total else ""
    detail = f" {step.detail}" if step.detail else ""
    print(f"adapt: {step.stage}{count}{detail}", file=sys.stderr, flush=True)
