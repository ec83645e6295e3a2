"""Checking answers that ragloupe did not write: POST /check and POST /halloumi/generate.

/check returns everything generate.check found. /halloumi/generate answers in
exactly the shape of the Halloumi verification backend of the EEA chatbot
(volto-eea-chatbot) and its drop-in replacement rag-facts-check:

    {"answer_score": 0-10,
     "claims": [{"claimString", "startOffset", "endOffset", "segmentIds", "score", "rationale", "skipped"}],
     "segments": {"<id>": {"id", "startOffset", "endOffset"}}}

- claim offsets are character offsets into the answer; a claim whose words
  cannot be found in the answer is "skipped" and spans the whole answer, so
  a client does not draw it inline;
- a segment is the evidence quote located in a source, as offsets into the
  sources' texts joined with no separator (how the chatbot's ClaimSegments
  joins them to highlight);
- score is the claim's verdict weight: supported 1.0, unverified 0.4,
  contradicted 0.0 (rag-facts-check's mapping; the model's own confidence is
  in /check, uncalibrated).

Without an LLM (none configured, or it does not answer its probe, with
RAGLOUPE_CHECK_VERIFIER=auto) both answer 200 from the model-free verifier:
claims are the answer's sentences and table rows, checked by the groundedness
screen and evidence spans, and every rationale says that no model judged
meaning. With RAGLOUPE_CHECK_VERIFIER=llm and no LLM, /check says why claims
were not checked and /halloumi/generate answers 503 with the reason; an LLM
that passes its probe but then fails is 503 (or 502 for nonsense) too.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from ragloupe.api.schemas import CheckRequest, HalloumiRequest, SourceIn
from ragloupe.errors import LlmBadOutput, LlmUnavailable, TooManySources
from ragloupe.generate.check import CHECKED, FAILED, CheckResult, Source, check, use_model_free

router = APIRouter(tags=["answer checks"])

CLAIM_SCORES = {"supported": 1.0, "unverified": 0.4, "contradicted": 0.0}


@router.post("/check")
def check_answer(body: CheckRequest, request: Request) -> dict[str, Any]:
    """Screen, evidence spans and (with an LLM) claim verdicts for an answer and its sources."""
    result = _run(body, request, claims=body.claims)
    return result.as_dict()


@router.post("/halloumi/generate")
def halloumi_generate(body: HalloumiRequest, request: Request) -> dict[str, Any]:
    """Halloumi's request and response shapes, over ragloupe's claim check."""
    result = _run(body, request, claims=True)
    if result.claims_status == FAILED:
        raise LlmBadOutput(result.claims_reason)
    if result.claims_status != CHECKED:
        raise LlmUnavailable(result.claims_reason)
    return to_halloumi(result)


def to_halloumi(result: CheckResult) -> dict[str, Any]:
    """A CheckResult in Halloumi's response shape (see the module docstring)."""
    starts = result.source_offsets()
    segments: dict[str, dict[str, Any]] = {}
    claims = []
    for check_ in result.claims:
        span = check_.claim.span
        segment_ids = []
        if check_.evidence_span is not None and check_.source is not None:
            segment_id = str(len(segments))
            offset = starts[check_.source - 1]
            segments[segment_id] = {"id": segment_id, "startOffset": offset + check_.evidence_span.start,
                                    "endOffset": offset + check_.evidence_span.end}
            segment_ids.append(segment_id)
        claims.append({
            "claimString": result.answer[span.start:span.end] if span else check_.claim.text,
            "startOffset": span.start if span else 0,
            "endOffset": span.end if span else len(result.answer),
            "segmentIds": segment_ids,
            "score": CLAIM_SCORES[check_.verdict],
            "rationale": check_.rationale or check_.note or _default_rationale(check_),
            "skipped": span is None,
        })
    return {"answer_score": result.answer_score, "claims": claims, "segments": segments}


def _default_rationale(check_: Any) -> str:
    if check_.verdict == "unverified":
        return "the sources do not say"
    return f"{check_.verdict} by source {check_.source}" if check_.source else check_.verdict


def _run(body: HalloumiRequest, request: Request, claims: bool) -> CheckResult:
    resources = request.app.state.resources
    limit = resources.settings.api_max_sources
    if len(body.sources) > limit:
        raise TooManySources(f"sources: {len(body.sources)} given, at most {limit} "
                             "(RAGLOUPE_API_MAX_SOURCES)")
    sources = [_source(item) for item in body.sources]
    settings = resources.settings
    embedder = None
    if claims:  # decide once which verifier runs: the model is needed only for the LLM's evidence
        free = use_model_free(settings)
        settings = settings.replace(check_verifier="model-free" if free else "llm")
        embedder = None if free or settings.check_evidence == "whole-sources" else resources.embedder()
    result = check(body.answer, sources, settings, batch_size=body.batch_size, claims=claims, embedder=embedder)
    resources.metrics.stages(result.timings, prefix="check_")
    return result


def _source(item: SourceIn) -> Source:
    return Source(text=item.text, title=item.title or "", source_type=item.source_type or "",
                  link=item.link or "")
