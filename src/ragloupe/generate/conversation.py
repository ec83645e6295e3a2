"""A conversation over the index: each question answered from retrieval, with the session's history.

The history is context for the next question, never evidence. A follow-up
("and the year before?") means nothing to retrieval on its own, so when
there is history it is first made standalone: the LLM reads the last
HISTORY_TURNS questions and answers and rewrites the follow-up as one
question that names what it refers to (one short call, bounded by
rewrite_timeout_s). When that call fails or returns nothing, the last
question and the follow-up are searched together. The standalone question
is what search() ranks and what answer() answers, from the passages alone:
earlier answers never enter the answer prompt, the passages or the
groundedness screen, so an answer cannot be "supported" by what the model
said before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.generate.answer import Answer, answer
from ragloupe.generate.llm import LlmClient, get_client
from ragloupe.models import Ranking
from ragloupe.retrieve.search import search

HISTORY_TURNS = 3  # earlier turns the rewrite reads
ANSWER_CHARS = 400  # of each earlier answer shown to the rewrite
STANDALONE_MAX_TOKENS = 64

STANDALONE_SYSTEM = (
    "You rewrite a follow-up question from a conversation about documents as one standalone "
    "question. Name what the follow-up refers to (the subject, the document, the year) so it can "
    "be searched alone. Keep every number, code and name it contains. Reply with the question only.")


@dataclass(frozen=True)
class Turn:
    """One question of the conversation and what became of it."""

    question: str  # as the person asked it
    standalone: str  # what was searched and answered
    standalone_note: str  # how the standalone question was made
    ranking: Ranking | None
    answer: Answer | None
    error: str = ""  # the one-line reason when no answer came back
    seconds: float = 0.0


@dataclass
class Conversation:
    """The session's turns; ``ask`` answers the next question in their light."""

    settings: Settings
    mode: str | None = None
    k: int = 5
    filters: dict | None = None
    search_kwargs: dict[str, Any] = field(default_factory=dict)  # workspace= (the face's), per-call overrides
    client: LlmClient | None = None
    turns: list[Turn] = field(default_factory=list)

    def ask(self, question: str, search_fn: Callable[..., Ranking] | None = None) -> Turn:
        """Rewrite (with history), retrieve, answer; an LLM failure is kept on the turn, never raised."""
        search_fn = search_fn or search
        started = time.perf_counter()
        client = self.client or get_client(self.settings)
        standalone, note = standalone_question(question, self.turns, client, self.settings)
        ranking = search_fn(standalone, mode=self.mode, k=self.k, filters=self.filters, **self.search_kwargs)
        try:
            result, error = answer(standalone, ranking, self.settings, client=client), ""
        except (LlmUnavailable, LlmBadOutput) as exc:
            result, error = None, str(exc)
        turn = Turn(question, standalone, note, ranking, result, error,
                    round(time.perf_counter() - started, 3))
        self.turns.append(turn)
        return turn

    @property
    def last(self) -> Turn | None:
        return self.turns[-1] if self.turns else None

    def clear(self) -> None:
        self.turns.clear()


def standalone_question(question: str, history: list[Turn], client: LlmClient,
                        settings: Settings) -> tuple[str, str]:
    """(the question to search and answer, how it was made). With no history: the question itself."""
    question = question.strip()
    if not history:
        return question, "first question: searched as asked"
    prompt = history_prompt(question, history)
    try:
        reply = client.generate(prompt, system=STANDALONE_SYSTEM, max_tokens=STANDALONE_MAX_TOKENS,
                                timeout_s=settings.rewrite_timeout_s)
    except (LlmUnavailable, LlmBadOutput) as exc:
        return _joined(question, history), f"rewrite failed ({exc}): searched with the last question"
    line = next((part.strip().strip('"').strip() for part in reply.splitlines() if part.strip()), "")
    if not line:
        return _joined(question, history), "the rewrite was empty: searched with the last question"
    return line, "rewritten with the conversation's history"


def history_prompt(question: str, history: list[Turn]) -> str:
    """The last HISTORY_TURNS turns and the follow-up, as the rewrite reads them."""
    lines = ["Conversation so far:"]
    for turn in history[-HISTORY_TURNS:]:
        said = turn.answer.text if turn.answer is not None and turn.answer.text else "(no answer)"
        said = said if len(said) <= ANSWER_CHARS else said[:ANSWER_CHARS] + "…"
        lines += [f"Q: {turn.standalone}", f"A: {said}"]
    lines += ["", f"Follow-up question: {question}", "Standalone question:"]
    return "\n".join(lines)


def _joined(question: str, history: list[Turn]) -> str:
    return f"{history[-1].standalone}\n{question}"
