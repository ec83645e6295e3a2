"""The report rag-facts-check gives over a checked answer: its dimensions, its overall verdict and
its hallucination flags, computed from claims.ClaimCheck verdicts (LLM or model-free alike).

Dimensions, each a percentage of the claims (None when the answer makes no claim):

- groundedness: supported;
- contradiction_rate: contradicted;
- hallucination_rate: contradicted or unverified (stated, but not shown by the sources);
- completeness: supported, as rag-facts-check reports it without a coverage analysis (it is
  not how much of the question the answer covers).

The overall verdict: no_claims; fully_supported (every claim supported); mostly_supported
(at least 70% supported and none contradicted); partially_supported (at least 30%);
largely_unsupported (the rest).

A hallucination flag is a claim that is contradicted or unverified, with where it is in the
answer and why: the claims a reader should look at first.
"""

from __future__ import annotations

from typing import Any, Sequence

from ragloupe.generate.claims import ClaimCheck

VERDICTS = ("no_claims", "fully_supported", "mostly_supported", "partially_supported", "largely_unsupported")


def dimensions(checks: Sequence[ClaimCheck]) -> dict[str, float | None]:
    total = len(checks)
    counts = {v: sum(c.verdict == v for c in checks) for v in ("supported", "contradicted", "unverified")}

    def share(n: int) -> float | None:
        return round(100.0 * n / total, 1) if total else None

    return {"groundedness": share(counts["supported"]), "contradiction_rate": share(counts["contradicted"]),
            "hallucination_rate": share(counts["contradicted"] + counts["unverified"]),
            "completeness": share(counts["supported"])}


def overall_verdict(checks: Sequence[ClaimCheck]) -> str:
    total = len(checks)
    if not total:
        return "no_claims"
    supported = sum(c.verdict == "supported" for c in checks) / total
    contradicted = sum(c.verdict == "contradicted" for c in checks) / total
    if supported == 1.0:
        return "fully_supported"
    if supported >= 0.7 and contradicted == 0:
        return "mostly_supported"
    return "partially_supported" if supported >= 0.3 else "largely_unsupported"


def hallucination_flags(checks: Sequence[ClaimCheck]) -> list[dict[str, Any]]:
    flags = []
    for index, check in enumerate(checks):
        if check.verdict == "supported":
            continue
        span = check.claim.span
        flags.append({"claim_index": index, "claim": check.claim.text, "verdict": check.verdict,
                      "start": span.start if span else None, "end": span.end if span else None,
                      "source": check.source, "reason": check.rationale or check.note or "the sources do not say"})
    return flags


def report(checks: Sequence[ClaimCheck]) -> dict[str, Any]:
    return {"dimensions": dimensions(checks), "overall_verdict": overall_verdict(checks),
            "hallucination_flags": hallucination_flags(checks)}
