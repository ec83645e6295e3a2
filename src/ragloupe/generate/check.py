"""Check an answer that ragloupe did not write against sources the caller gives.

The same three checks as for ragloupe's own answers, reused, not redone:

- the groundedness screen (groundedness.screen: every figure, standard and
  legal act, with ``checkable_share``), which needs no model;
- evidence spans (evidence.citation_evidence over spans.find_span, with the
  matching method), for the sentences that cite a source;
- claim verification and the 0-10 score (claims.extract_claims,
  verify_claims, score_parts). With an LLM, each claim is verified against
  the few source excerpts most likely to hold its evidence (claim_evidence:
  BM25 over the sources' sentences, then the embedder), packed into batches
  under check_batch_tokens. Without an LLM (check_verifier "auto" and none
  configured or reachable, or "model-free"), modelfree verifies the answer's
  sentences and table rows by the screen and evidence spans, and says in
  every rationale that no model judged meaning;
- rag-facts-check's report over the verdicts (claim_report: dimensions,
  overall verdict, hallucination flags).

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
from ragloupe.generate.claim_evidence import Batch, evidence_for_claims, pack_batches
from ragloupe.generate import claim_report, modelfree
from ragloupe.generate.claims import BATCH_SIZE, ClaimCheck, extract_claims, score_parts, verify_claims
from ragloupe.generate.evidence import CitationEvidence, citation_evidence
from ragloupe.generate.groundedness import Screen, screen, split_sentences
from ragloupe.generate.llm import LlmClient, get_client
from ragloupe.models import Chunk

VERIFIERS = ("auto", "llm", "model-free")  # Settings.check_verifier
EVIDENCE = ("per-claim", "per-claim-bm25", "whole-sources")  # Settings.check_evidence

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
    model: str  # the LLM that checked the claims, 'ollama:llama3.2', or modelfree.LABEL
    timings: dict[str, float] = field(default_factory=dict)  # seconds: screen, evidence, extract, verify
    verifier: str = ""  # "llm" | "model-free" | "" (claims not checked)
    batches: tuple[dict[str, Any], ...] = ()  # per verification call: its claims, excerpts and tokens

    @property
    def report(self) -> dict[str, Any]:
        """Dimensions, overall verdict and hallucination flags (claim_report)."""
        return claim_report.report(self.claims)

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
                       "verifier": self.verifier, "batches": list(self.batches),
                       "checks": [asdict(c) for c in self.claims]},
            "score": self.score,
            **(self.report if self.claims_status == CHECKED else
               {"dimensions": None, "overall_verdict": None, "hallucination_flags": []}),
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
        report = self.report
        dims = "  ".join(f"{k} {'n/a' if v is None else f'{v:.1f}%'}" for k, v in report["dimensions"].items())
        lines.append(f"overall: {report['overall_verdict']}   {dims}")
        lines.append(f"hallucination flags: {len(report['hallucination_flags'])}")
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
          batch_size: int = BATCH_SIZE, claims: bool = True, embedder: Any = None) -> CheckResult:
    """Screen, locate evidence for and verify ``answer`` against ``sources``.

    ``claims=False`` skips claim verification on purpose (claims_reason says so). Which verifier
    runs follows settings.check_verifier (module docstring); ``embedder`` re-ranks each claim's
    evidence and counts its tokens (without one, BM25's order stands and tokens are estimated). Never raises for an LLM that is
    down or talks nonsense: the result carries the reason.
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

    texts = [c.text for c in chunks]
    outcome = _Outcome(UNAVAILABLE, "claim checking was not asked for")
    if claims:
        if use_model_free(settings, client):
            outcome = _model_free(answer, written, screened, texts, timings)
        else:
            outcome = _with_llm(client or get_client(settings), answer, citations, texts, settings, batch_size,
                                embedder, timings)
    return CheckResult(answer, tuple(sources), mode, tuple(written), screened, evidence, outcome.status,
                       outcome.reason, tuple(outcome.checks), score_parts(outcome.checks), outcome.model,
                       timings, outcome.verifier, tuple(outcome.batches))


def use_model_free(settings: Settings, client: LlmClient | None = None) -> bool:
    """check_verifier: "model-free" always; "llm" never; "auto" when no LLM is configured or it
    does not answer its probe (``client``'s own, else one with llm_probe_timeout_s)."""
    if settings.check_verifier != "auto":
        return settings.check_verifier == "model-free"
    if client is None:
        if settings.llm_backend == "none":
            return True
        client = get_client(settings.replace(llm_timeout_s=settings.llm_probe_timeout_s))
    return not client.available()[0]


@dataclass
class _Outcome:
    status: str
    reason: str
    checks: list[ClaimCheck] = field(default_factory=list)
    model: str = ""
    verifier: str = ""
    batches: list[dict[str, Any]] = field(default_factory=list)


def _model_free(answer: str, written: Sequence[Any], screened: Screen, texts: list[str],
                timings: dict[str, float]) -> _Outcome:
    started = time.perf_counter()
    cited = modelfree.claim_is_cited(written) if written else (lambda start, end: True)
    checks = modelfree.verify_without_model(modelfree.answer_claims(answer, cited), screened, texts)
    timings["verify"] = time.perf_counter() - started
    return _Outcome(CHECKED, "", checks, modelfree.LABEL, "model-free")


def _with_llm(client: LlmClient, answer: str, citations: Sequence[Any], texts: list[str], settings: Settings,
              batch_size: int, embedder: Any, timings: dict[str, float]) -> _Outcome:
    outcome = _Outcome(CHECKED, "", model=client.label, verifier="llm")
    try:
        started = time.perf_counter()
        extracted = extract_claims(client, answer, citations)
        timings["extract"] = time.perf_counter() - started
        started = time.perf_counter()
        batches = _evidence_batches(extracted, texts, settings, max(1, batch_size), embedder)
        timings["claim_evidence"] = time.perf_counter() - started
        started = time.perf_counter()
        outcome.checks = verify_claims(client, extracted, texts, max(1, batch_size), batches)
        timings["verify"] = time.perf_counter() - started
        outcome.batches = [_batch_view(b) for b in batches or ()]
    except LlmUnavailable as exc:
        outcome.status, outcome.reason = UNAVAILABLE, str(exc)
    except LlmBadOutput as exc:
        outcome.status, outcome.reason = FAILED, str(exc)
    return outcome


def _evidence_batches(extracted: Sequence[Any], texts: list[str], settings: Settings, batch_size: int,
                      embedder: Any) -> list[Batch] | None:
    """Per-claim evidence packed into batches (claim_evidence), or None for whole sources."""
    if settings.check_evidence == "whole-sources" or not extracted:
        return None
    if embedder is None:  # BM25 order stands; tokens estimated at four characters each
        count: Any = lambda text: -(-len(text) // 4)
        embed = None
    else:
        tokenizer = embedder.tokenizer
        count = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])
        embed = embedder.encode if settings.check_evidence == "per-claim" else None  # per-claim-bm25: BM25 alone
    excerpts = evidence_for_claims([c.text for c in extracted], texts, embed)
    return pack_batches(excerpts, count, settings.check_batch_tokens, batch_size)


def _batch_view(batch: Batch) -> dict[str, Any]:
    return {"claims": list(batch.claims), "tokens": batch.tokens,
            "excerpts": [{"source": e.source, "start": e.start, "end": e.end} for e in batch.excerpts]}


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
