"""Check an answer that ragloupe did not write against sources the caller gives.

The same three checks as for ragloupe's own answers, reused, not redone:

- the groundedness screen (groundedness.screen: every figure, standard and
  legal act, with ``checkable_share``), which needs no model;
- evidence spans (evidence.citation_evidence over spans.find_span, with the
  matching method), for the sentences that cite a source;
- claim verification and the 0-10 score (claims.extract_claims,
  verify_claims, score_parts), which need an LLM. Without one the result
  says why in ``claims_reason`` and everything else is still there.

Citations. An answer that writes "[1]", "[2]" ... cites the sources by their
position in the list (``citation_mode`` "cited"). An answer that cites
nothing (most answers from other systems, and Halloumi's) is checked as if
every sentence cited every source (``citation_mode`` "all sources"): a
figure found in any source is then NOT_CONTRADICTED rather than
MISATTRIBUTED, and claims are not penalised for lacking a citation the
caller never asked for.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.generate.citations import Citation, parse_citations
from ragloupe.generate.claims import BATCH_SIZE, ClaimCheck, extract_claims, score_parts, verify_claims
from ragloupe.generate.evidence import CitationEvidence, citation_evidence
from ragloupe.generate.groundedness import Screen, screen, split_sentences
from ragloupe.generate.llm import LlmClient, get_client
from ragloupe.models import Chunk

CITED = "cited"
ALL_SOURCES = "all sources"

# ClaimsOutcome.status values.
CHECKED = "checked"
UNAVAILABLE = "unavailable"  # no LLM answered: claims_reason says why and what to do
FAILED = "failed"  # the LLM answered, but not with the JSON asked for


@dataclass(frozen=True)
class Source:
    """A passage the answer is checked against, numbered by its position (1-based)."""

    text: str
    title: str = ""
    source_type: str = ""
    link: str = ""
    doc_id: str = ""  # set when the source was picked from the index
    page: int = 0
    record_id: str = ""

    def as_chunk(self, number: int) -> Chunk:
        """The source as a Chunk, so the citation parser and the screen can read it."""
        return Chunk(chunk_id=f"source-{number}", doc_id=self.doc_id or self.title or f"source {number}",
                     page=self.page, position=0, text=self.text, n_tokens=0, quality="clean",
                     record_id=self.record_id, title=self.title)


@dataclass(frozen=True)
class CheckResult:
    answer: str
    sources: tuple[Source, ...]
    citation_mode: str  # CITED | ALL_SOURCES
    citations: tuple[Citation, ...]
    screen: Screen
    evidence: tuple[CitationEvidence, ...]  # one per resolved citation the answer wrote
    claims_status: str  # CHECKED | UNAVAILABLE | FAILED
    claims_reason: str  # why claims were not checked ("" when they were)
    claims: tuple[ClaimCheck, ...]
    score: dict[str, Any]  # claims.score_parts: score (0-10 or None) and its parts
    model: str  # the LLM that checked the claims, 'ollama:llama3.2'
    timings: dict[str, float] = field(default_factory=dict)  # seconds: screen, evidence, extract, verify

    @property
    def answer_score(self) -> float | None:
        return self.score.get("score")

    def source_offsets(self) -> list[int]:
        """Where each source starts in the sources' texts joined with no separator."""
        offsets, position = [], 0
        for source in self.sources:
            offsets.append(position)
            position += len(source.text)
        return offsets

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "sources": [{"number": n, "title": s.title, "source_type": s.source_type, "link": s.link,
                         "doc_id": s.doc_id, "page": s.page or None, "record_id": s.record_id or None,
                         "chars": len(s.text)} for n, s in enumerate(self.sources, start=1)],
            "citation_mode": self.citation_mode,
            "citations": [asdict(c) for c in self.citations],
            "screen": self.screen.as_dict(),
            "evidence": [asdict(e) for e in self.evidence],
            "claims": {"status": self.claims_status, "reason": self.claims_reason, "model": self.model,
                       "checks": [asdict(c) for c in self.claims]},
            "score": self.score,
            "timings": self.timings,
        }

    def summary(self) -> str:
        lines = [f"sources: {len(self.sources)}   citations: {self.citation_mode}", "", self.screen.summary(), ""]
        if self.claims_status != CHECKED:
            lines.append(f"claims: not checked ({self.claims_reason})")
            return "\n".join(lines)
        score = self.score
        shown = "n/a (no claims)" if score["score"] is None else f"{score['score']:.2f}/10"
        lines.append(f"claims: {score['claims']}  supported {score['supported']}  unverified "
                     f"{score['unverified']}  contradicted {score['contradicted']}  score {shown}  "
                     f"({self.model})")
        for check in self.claims:
            where = f" [{check.source}]" if check.source else ""
            how = f" ({check.evidence_span.method})" if check.evidence_span else ""
            lines.append(f"  {check.verdict:<12}{where}{how} {check.claim.text}")
            if check.rationale:
                lines.append(f"      {check.rationale}")
        return "\n".join(lines)


@dataclass(frozen=True)
class _SentenceCitation:
    """A citation the answer did not write: its sentence cites one source (ALL_SOURCES mode)."""

    start: int
    end: int
    passage: int


def check(answer: str, sources: Sequence[Source], settings: Settings, client: LlmClient | None = None,
          batch_size: int = BATCH_SIZE, claims: bool = True) -> CheckResult:
    """Screen, locate evidence for and (with an LLM) verify ``answer`` against ``sources``.

    ``claims=False`` skips the LLM part on purpose (claims_reason says so).
    Never raises for an LLM that is down or talks nonsense: the result carries the reason.
    """
    timings: dict[str, float] = {}
    chunks = [source.as_chunk(number) for number, source in enumerate(sources, start=1)]
    written = parse_citations(answer, chunks)
    mode = CITED if written else ALL_SOURCES
    citations: Sequence[Any] = written or _every_sentence_cites_all(answer, len(sources))

    started = time.perf_counter()
    screened = screen(answer, citations, [c.text for c in chunks])
    timings["screen"] = time.perf_counter() - started

    started = time.perf_counter()
    evidence = tuple(citation_evidence(_Cited(answer, written, chunks), screened)) if written else ()
    timings["evidence"] = time.perf_counter() - started

    checks: list[ClaimCheck] = []
    status, reason, model = CHECKED, "", ""
    if not claims:
        status, reason = UNAVAILABLE, "claim checking was not asked for"
    else:
        client = client or get_client(settings)
        model = client.label
        try:
            started = time.perf_counter()
            extracted = extract_claims(client, answer, citations)
            timings["extract"] = time.perf_counter() - started
            started = time.perf_counter()
            checks = verify_claims(client, extracted, [c.text for c in chunks], max(1, batch_size))
            timings["verify"] = time.perf_counter() - started
        except LlmUnavailable as exc:
            status, reason = UNAVAILABLE, str(exc)
        except LlmBadOutput as exc:
            status, reason = FAILED, str(exc)
    return CheckResult(answer, tuple(sources), mode, tuple(written), screened, evidence, status, reason,
                       tuple(checks), score_parts(checks), model, timings)


def _every_sentence_cites_all(answer: str, n_sources: int) -> list[_SentenceCitation]:
    return [_SentenceCitation(start, start, number) for start, _ in split_sentences(answer)
            for number in range(1, n_sources + 1)]


@dataclass(frozen=True)
class _Passage:
    number: int
    chunk: Chunk


class _Cited:
    """The parts of a generate.answer.Answer that evidence.citation_evidence reads."""

    def __init__(self, text: str, citations: Sequence[Citation], chunks: Sequence[Chunk]):
        self.text = text
        self.citations = tuple(citations)
        self.passages = tuple(_Passage(n, c) for n, c in enumerate(chunks, start=1))
