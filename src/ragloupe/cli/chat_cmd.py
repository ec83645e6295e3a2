"""`ragloupe chat`: questions in a loop, each answered from the index with citations and screened.

The session keeps its conversation: a follow-up is made standalone with the
earlier turns before it is searched (generate/conversation.py); the answer
and its screen come from the passages alone. Lines starting with "/" are
commands: /help, /sources (the passages behind the last answer), /quit.
Ctrl+C or the end of input leave cleanly. Nothing heavy loads before the
first question.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, TextIO

from ragloupe.cli import CommandResult

PROMPT = "you> "
HELP = """Ask a question about the indexed documents; follow-ups may refer to earlier answers.
  /sources   the passages behind the last answer (* = cited), with where each comes from
  /help      this help
  /quit      leave (so do Ctrl+C and Ctrl+D)"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("chat", help="ask questions in a loop, with the conversation's history",
                            description=__doc__.splitlines()[0])
    parser.add_argument("--doc", action="append", dest="doc_ids", metavar="ID",
                        help="only this document (repeat for several)")
    parser.add_argument("--mode", default=None, help="retrieval mode (default: RAGLOUPE_MODE)")
    parser.add_argument("--k", type=int, default=5, help="chunks retrieved per question (default 5)")
    parser.add_argument("--backend", choices=("ollama", "openai", "embedded"), default=None,
                        help="LLM backend (default: RAGLOUPE_LLM_BACKEND)")
    parser.add_argument("--gates", action=argparse.BooleanOptionalAction, default=None,
                        help="gates before generation (default: RAGLOUPE_ANSWER_GATES)")
    parser.set_defaults(handler=run_chat)


def run_chat(args: argparse.Namespace, stdin: TextIO | None = None, stdout: TextIO | None = None) -> CommandResult:
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.config import get_settings
    from ragloupe.generate.conversation import Conversation
    from ragloupe.workspace import Workspace

    settings = get_settings()
    if args.backend:
        settings = settings.replace(llm_backend=args.backend)
    if args.gates is not None:
        settings = settings.replace(answer_gates=args.gates)
    workspace = Workspace.open(settings)  # every turn searches through it
    encode_missing_sentences(workspace, [args.mode or settings.mode], args.doc_ids or None)
    conversation = Conversation(settings, mode=args.mode, k=args.k,
                                filters={"doc_ids": args.doc_ids} if args.doc_ids else None,
                                search_kwargs={"workspace": workspace})
    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    say = _printer(stdout)
    say("ragloupe chat: ask about the indexed documents; /help for commands, /quit to leave.")
    try:
        _loop(conversation, _reader(stdin), say)
    except KeyboardInterrupt:
        say("")
    asked = len(conversation.turns)
    return CommandResult({"turns": asked}, f"bye ({asked} question{'s' if asked != 1 else ''} asked)")


def _loop(conversation, read: Callable[[], str | None], say: Callable[[str], None]) -> None:
    from ragloupe.errors import RagloupeError

    while True:
        line = read()
        if line is None:  # end of input
            say("")
            return
        line = line.strip()
        if not line:
            continue
        if line.startswith("/"):
            if not _command(line, conversation, say):
                return
            continue
        try:
            turn = conversation.ask(line)
        except RagloupeError as exc:  # a bad index or setting: say it, the session goes on
            say(f"ragloupe: {exc}")
            continue
        say(format_turn(turn))


def _command(line: str, conversation, say: Callable[[str], None]) -> bool:
    """Run a /command; False means leave."""
    name = line.split()[0].lower()
    if name in ("/quit", "/exit", "/q"):
        return False
    if name == "/help":
        say(HELP)
    elif name == "/sources":
        say(format_sources(conversation.last))
    else:
        say(f"unknown command {name}: /help lists them")
    return True


def format_turn(turn) -> str:
    from ragloupe.cli.answer_cmd import format_answer, format_withheld
    from ragloupe.generate.groundedness import screen_answer

    lines = []
    if turn.standalone != turn.question:
        lines.append(f"(searched as: {' '.join(turn.standalone.split())})")
    if turn.answer is None:
        lines.append(f"ragloupe: {turn.error}")
    elif turn.answer.withheld:
        lines.append(format_withheld(turn.answer))
    else:
        lines.append(format_answer(turn.answer, screen_answer(turn.answer)))
    return "\n".join(lines)


def format_sources(turn) -> str:
    if turn is None:
        return "no question asked yet"
    if turn.answer is None:
        hits = turn.ranking.hits if turn.ranking else ()
        return "\n".join(["no answer; the passages retrieved:"]
                         + [f"  [{h.rank}] {h.chunk.unit}" for h in hits]) if hits else "nothing retrieved"
    cited = {c.passage for c in turn.answer.citations}
    lines = [f"sources of the last answer ({turn.standalone.splitlines()[0]}):"]
    for p in turn.answer.passages:
        lines.append(f" {'*' if p.number in cited else ' '}[{p.number}] {p.label}  (rank {p.rank}, {p.unit})")
    return "\n".join(lines)


def _printer(stdout: TextIO) -> Callable[[str], None]:
    def say(text: str) -> None:
        stdout.write(text + "\n")
        stdout.flush()
    return say


def _reader(stdin: TextIO) -> Callable[[], str | None]:
    """One line at a time; the prompt (and line editing) only when a person is typing (a tty)."""
    interactive = stdin.isatty()
    if interactive:
        import readline  # noqa: F401  (input() then edits the line and keeps the session's history)

    def read() -> str | None:
        if interactive:
            try:
                return input(PROMPT)
            except EOFError:
                return None
        line = stdin.readline()
        return line if line else None
    return read
