"""An answer generated from a ranking, with the passages and citations that back it.

answer(query, ranking, settings) fits the ranked chunks into a token budget
(in rank order; the chunks that do not fit are listed, not silently dropped),
asks the LLM with the prompt of prompt.py, and parses the citations out of
the reply. The Answer keeps everything needed to audit it afterwards: the
exact passages the model saw, which chunks were cut and why, the model and
the timings.

When the reply cites nothing, there are at least two passages to choose
from and the client can score continuations (the embedded backend's
``choose``), a citation is picked by constrained decoding: the same model
reads its answer followed by "This answer is supported by passage [" and
every passage number is scored by its log-likelihood. The most likely
number is appended to the answer as "[n]" only if it beats every other by
CHOICE_MARGIN_NATS. A picked citation is a guess, never evidence: it is
marked ``picked``, the Answer says so in ``citation_method`` and keeps the
scores in ``support_scores``, and the groundedness screen ignores it, so
it can never turn MISATTRIBUTED into NOT_CONTRADICTED. With one passage
nothing is picked: there is nothing to compare.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

from ragloupe.config import Settings, get_settings
from ragloupe.errors import LlmUnavailable
from ragloupe.generate.citations import Citation, cited_units, parse_citations
from ragloupe.generate.answer_gates import GateReport, check_gates
from ragloupe.generate.llm import NO_LLM_HINT, LlmClient, get_client
from ragloupe.generate.prompt import (NOT_IN_CONTEXT, SYSTEM, build_prompt, format_passage, passage_label,
                                      passage_options, support_prompt)
from ragloupe.models import Chunk, Hit, Ranking, unit_id

TokenCounter = Callable[[str], int]

# The model saying the context lacks the answer, in the words the prompt
# asks for or close to them.
_NOT_IN_CONTEXT = re.compile(
    r"(?:documents?|passages?|context)\s+(?:provided\s+)?(?:do|does)\s*(?:not|n't)\s+(?:contain|include|mention|say)"
    r"|\bnot (?:in|contained in) the (?:provided )?(?:documents?|passages?|context)",
    re.IGNORECASE)

# How far (in nats of log-likelihood) the chosen passage number must beat the
# runner-up; a near tie is no evidence for either, so nothing is cited.
CHOICE_MARGIN_NATS = 0.1

# Answer.citation_method values.
GENERATED = "generated"  # the model wrote the citations in its reply
CONSTRAINED = "constrained decoding"  # chosen afterwards by scoring passage numbers


@dataclass(frozen=True)
class Passage:
    """A chunk the model was given, under the number it was cited by."""

    number: int  # [number] in the prompt
    rank: int  # the hit's rank in the ranking
    label: str  # 'Grampian-2020-2021, page 28'
    n_tokens: int  # tokens of the passage as formatted in the prompt
    chunk: Chunk

    @property
    def unit(self) -> str:
        return self.chunk.unit


@dataclass(frozen=True)
class CutPassage:
    """A retrieved chunk left out of the prompt, and why."""

    rank: int
    chunk_id: str
    unit: str
    n_tokens: int
    reason: str


@dataclass(frozen=True)
class Answer:
    query: str
    text: str
    citations: tuple[Citation, ...]
    cited_units: tuple[str, ...]
    passages: tuple[Passage, ...]  # kept: what the model saw, in prompt order
    cut: tuple[CutPassage, ...]  # retrieved but left out for the token budget
    model: str  # 'ollama:llama3.2'
    not_in_context: bool  # the model said the passages do not hold the answer
    context_tokens: int
    budget_tokens: int
    mode: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # seconds: context, generate, parse, choose
    citation_method: str = ""  # GENERATED, CONSTRAINED, or "" when nothing is cited
    support_scores: tuple[float, ...] = ()  # constrained decoding: log-likelihood of passage 1, 2, ...
    gates: GateReport | None = None  # the gates before generation, when they ran

    @property
    def withheld(self) -> bool:
        """True when a gate failed: no LLM was asked, ``text`` is empty, ``gates`` says why."""
        return self.gates is not None and not self.gates.passed

    @property
    def unresolved_citations(self) -> tuple[Citation, ...]:
        """Citations that point at no passage the model was given (e.g. '[7]' of 5)."""
        return tuple(c for c in self.citations if not c.resolved)

    def as_dict(self) -> dict:
        """JSON-ready: passages carry their chunk's text and metadata."""
        data = asdict(self)
        data["unresolved_citations"] = [asdict(c) for c in self.unresolved_citations]
        data["gates"] = self.gates.as_dict() if self.gates is not None else None
        data["withheld"] = self.withheld
        return data


def select_context(hits: Sequence[Hit], budget_tokens: int,
                   count_tokens: TokenCounter) -> tuple[list[Passage], list[CutPassage]]:
    """Passages that fit ``budget_tokens``, taken in rank order, and the ones cut.

    A chunk that does not fit is cut and the next, smaller ones are still
    tried, so one long table chunk does not starve the rest of the context.
    The top hit is always kept, even alone over budget: an answer from no
    context at all would be worse than a long prompt, and the overrun is
    visible in context_tokens.
    """
    kept: list[Passage] = []
    cut: list[CutPassage] = []
    used = 0
    for hit in sorted(hits, key=lambda h: h.rank):
        number = len(kept) + 1
        n_tokens = count_tokens(format_passage(number, hit.chunk))
        if kept and used + n_tokens > budget_tokens:
            cut.append(CutPassage(hit.rank, hit.chunk.chunk_id, hit.chunk.unit, n_tokens,
                                  f"over the context budget: needs {n_tokens} tokens, "
                                  f"{budget_tokens - used} of {budget_tokens} left"))
            continue
        kept.append(Passage(number, hit.rank, passage_label(hit.chunk), n_tokens, hit.chunk))
        used += n_tokens
    return kept, cut


def says_not_in_context(text: str) -> bool:
    return NOT_IN_CONTEXT.lower() in text.lower() or bool(_NOT_IN_CONTEXT.search(text))


def answer(query: str, ranking: Ranking, settings: Settings | None = None,
           client: LlmClient | None = None, count_tokens: TokenCounter | None = None,
           indexed_units: Iterable[str] | None = None) -> Answer:
    """Generate an answer to ``query`` from ``ranking``'s hits, with citations.

    Raises LlmUnavailable (saying what to do) when no LLM can be reached.
    With no hits at all, the model is not asked: the answer says the
    documents do not contain it. With settings.answer_gates on, the context
    passes the gates first (answer_gates.py) or nothing is generated: the Answer is
    ``withheld`` and its ``gates`` say why. ``indexed_units`` are the units
    the citation gate maps passages to (default: the index manifest's).
    """
    settings = settings or get_settings()
    client = client or get_client(settings)
    timings: dict[str, float] = {}

    started = time.perf_counter()
    counter = count_tokens or context_token_counter(settings)
    passages, cut = select_context(ranking.hits, settings.context_budget_tokens, counter)
    timings["context"] = time.perf_counter() - started

    if not passages:
        return Answer(query, NOT_IN_CONTEXT, (), (), (), tuple(cut), client.label, True, 0,
                      settings.context_budget_tokens, ranking.mode, timings)
    gates = None
    if settings.answer_gates:
        started = time.perf_counter()
        gates = context_gates(passages, ranking, settings, indexed_units)
        timings["gates"] = time.perf_counter() - started
        if not gates.passed:
            return Answer(query, "", (), (), tuple(passages), tuple(cut), client.label, False,
                          sum(p.n_tokens for p in passages), settings.context_budget_tokens,
                          ranking.mode, timings, gates=gates)

    prompt = build_prompt(query, [p.chunk for p in passages])
    started = time.perf_counter()
    text = _generate(client, prompt)
    timings["generate"] = time.perf_counter() - started

    started = time.perf_counter()
    chunks = [p.chunk for p in passages]
    citations = parse_citations(text, chunks)
    timings["parse"] = time.perf_counter() - started
    method = GENERATED if citations else ""
    scores: tuple[float, ...] = ()
    not_in_context = says_not_in_context(text)
    choose = getattr(client, "choose", None)
    if not citations and not not_in_context and callable(choose) and len(passages) >= 2:
        started = time.perf_counter()
        text, citations, method, scores = _pick_citation(choose, prompt, text, chunks)
        timings["choose"] = time.perf_counter() - started
    return Answer(
        query=query, text=text, citations=tuple(citations),
        cited_units=tuple(cited_units(citations)), passages=tuple(passages), cut=tuple(cut),
        model=client.label, not_in_context=not_in_context,
        context_tokens=sum(p.n_tokens for p in passages),
        budget_tokens=settings.context_budget_tokens, mode=ranking.mode, timings=timings,
        citation_method=method, support_scores=scores, gates=gates)


def _generate(client: LlmClient, prompt: str) -> str:
    """The model's answer; an unreachable model says what to do (NO_LLM_HINT) once."""
    try:
        return client.generate(prompt, system=SYSTEM)
    except LlmUnavailable as exc:
        message = str(exc)
        raise LlmUnavailable(message if NO_LLM_HINT in message else f"{message}; {NO_LLM_HINT}") from exc


def _pick_citation(choose, prompt: str, text: str, chunks: Sequence) -> tuple[str, list, str, tuple[float, ...]]:
    """A model that cited nothing picks the passage its answer rests on, by constrained
    decoding; the citation is added only when the pick wins by CHOICE_MARGIN_NATS, and is
    marked picked (never evidence). Returns (text, citations, method, scores)."""
    _, all_scores = choose(support_prompt(prompt, text), passage_options(len(chunks)), system=SYSTEM)
    scores = tuple(round(score, 4) for score in all_scores)
    chosen = confident_choice(all_scores, CHOICE_MARGIN_NATS)
    if chosen is None:
        return text, [], "", scores
    text = with_citation(text, chosen + 1)
    citations = [dataclasses.replace(c, picked=True) for c in parse_citations(text, chunks)]
    return text, citations, CONSTRAINED, scores


def context_gates(passages: Sequence[Passage], ranking: Ranking, settings: Settings,
                  indexed_units: Iterable[str] | None = None) -> GateReport:
    """The gates over the passages chosen for the prompt; figures are compared within a
    document's own fiscal period where search found one (Hit.doc_period), else the document."""
    if indexed_units is None:
        from ragloupe.index.manifest import Manifest

        indexed_units = manifest_units(Manifest.load(settings))
    periods = {h.chunk.chunk_id: f"period {h.doc_period}" for h in ranking.hits if h.doc_period}
    return check_gates([p.chunk for p in passages], indexed_units, periods)


def manifest_units(manifest) -> set[str]:
    """The units (doc#pN, doc#record) of every document the manifest holds completely."""
    return {unit_id(e.doc_id, p.page, p.record_id) for e in manifest.complete() for p in e.pages if p.indexed}


def confident_choice(scores: Sequence[float], margin: float) -> int | None:
    """Index of the highest score if it beats every other by more than ``margin``, else None.

    Fewer than two options give None: a choice needs something to beat.
    """
    if len(scores) < 2:
        return None
    best = max(range(len(scores)), key=lambda i: scores[i])
    runner_up = max(s for i, s in enumerate(scores) if i != best)
    if scores[best] - runner_up <= margin:
        return None
    return best


def with_citation(text: str, number: int) -> str:
    """``text`` with "[number]" appended; after the last full stop it still belongs to the last sentence."""
    return f"{text.rstrip()} [{number}]"


def context_token_counter(settings: Settings) -> TokenCounter:
    """Count tokens with the embedding model's tokenizer (the one chunk sizes use).

    Any tokenizer would do for a budget; this one is already loaded by
    retrieval, so counting costs no extra model.
    """
    from ragloupe.index.embedder import get_embedder

    tokenizer = get_embedder(settings).tokenizer

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False, truncation=False,
                             verbose=False)["input_ids"])

    return count
