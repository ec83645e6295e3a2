"""`ragloupe answer "question"`: retrieve, generate an answer with citations, screen it.

The groundedness screen always runs (it needs no model). `--claims` also
asks the LLM to extract and verify the answer's claims, which costs two or
more extra LLM calls.
"""

from __future__ import annotations

import argparse

from ragloupe.cli import CommandResult, add_json_flag


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("answer", help="answer a question from the index, with citations and a groundedness screen")
    parser.add_argument("question", help="the question, in quotes")
    parser.add_argument("--doc", action="append", dest="doc_ids", metavar="ID",
                        help="only this document (repeat for several)")
    parser.add_argument("--mode", default=None, help="retrieval mode (default: RAGLOUPE_MODE, e.g. hybrid)")
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved before the token budget (default 5)")
    parser.add_argument("--backend", choices=("ollama", "openai", "embedded"), default=None,
                        help="LLM backend (default: RAGLOUPE_LLM_BACKEND)")
    parser.add_argument("--claims", action="store_true",
                        help="also extract and verify claims with the LLM (slower)")
    parser.add_argument("--gates", action=argparse.BooleanOptionalAction, default=None,
                        help="gates before generation: answer only from mappable, consistent context "
                             "(default: RAGLOUPE_ANSWER_GATES)")
    add_json_flag(parser)
    parser.set_defaults(handler=lambda args: run_answer(args))


def run_answer(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.config import get_settings
    from ragloupe.generate.answer import answer
    from ragloupe.generate.groundedness import screen_answer
    from ragloupe.generate.llm import get_client
    from ragloupe.retrieve.search import search
    from ragloupe.workspace import Workspace

    settings = get_settings()
    if args.backend:
        settings = settings.replace(llm_backend=args.backend)
    if args.gates is not None:
        settings = settings.replace(answer_gates=args.gates)
    client = get_client(settings)
    filters = {"doc_ids": args.doc_ids} if args.doc_ids else None
    workspace = Workspace.open(settings)
    encode_missing_sentences(workspace, [args.mode or settings.mode], args.doc_ids or None)
    ranking = search(args.question, mode=args.mode, k=args.k, filters=filters, workspace=workspace)
    result = answer(args.question, ranking, settings, client=client)
    if result.withheld:
        return CommandResult({"answer": result.as_dict(), "screen": None}, format_withheld(result))
    screen = screen_answer(result)
    data = {"answer": result.as_dict(), "screen": screen.as_dict()}
    claims_text = ""
    if args.claims:
        from ragloupe.errors import LlmBadOutput
        from ragloupe.generate.claims import check_claims

        # A model too small to return the JSON asked for (the embedded one often
        # is) must not cost the person the answer and the screen above.
        try:
            report = check_claims(result, client)
        except LlmBadOutput as exc:
            data["claims"] = {"error": str(exc)}
            claims_text = f"\n\nclaims: not checked ({exc})"
        else:
            data["claims"] = report.as_dict()
            claims_text = "\n\n" + report.summary()
    return CommandResult(data, format_answer(result, screen) + claims_text)


def format_withheld(result) -> str:
    """A gate failed: which, why, and the passages the answer would have come from."""
    lines = ["no answer generated (no LLM call): " + result.gates.summary()]
    for gate in result.gates.failed:
        lines += [f"  {problem}" for problem in gate.problems]
    lines += ["", "passages:"] + [f"  [{p.number}] {p.label}  (rank {p.rank})" for p in result.passages]
    return "\n".join(lines)


def format_answer(result, screen) -> str:
    """Plain text for a terminal: answer, sources, cut chunks, screen verdicts."""
    lines = [result.text, "", f"model: {result.model}   context: {result.context_tokens}"
             f"/{result.budget_tokens} tokens"]
    if result.not_in_context:
        lines.append("the model says the passages do not contain the answer")
    lines += ["", "passages:"]
    cited = {c.passage for c in result.citations}
    for p in result.passages:
        mark = "*" if p.number in cited else " "
        lines.append(f" {mark}[{p.number}] {p.label}  (rank {p.rank}, {p.n_tokens} tokens)")
    for c in result.unresolved_citations:
        lines.append(f"  cited but not given to the model: {c.raw}")
    if result.cut:
        lines.append("cut for the token budget:")
        lines += [f"   rank {c.rank} {c.unit}: {c.reason}" for c in result.cut]
    lines += ["", screen.summary()]
    return "\n".join(lines)
