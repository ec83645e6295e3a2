"""Claim verification with an LLM: split an answer into atomic claims, check each
against the passages, and score the answer from 0 to 10.

Steps, each its own function:

1. split_answer: long answers are cut into pieces at paragraph and line
   breaks; a markdown table keeps its header (and separator) line with every
   group of rows, so a row is never read without its column names.
2. extract_claims: the LLM lists each piece's atomic claims with the verbatim
   span of the answer that states them; spans are located in the answer with
   spans.find_span and claims with the same span are kept once.
3. verify_claims: claims go to the LLM in batches with the numbered passages;
   each comes back supported / contradicted / unverified, with a verbatim
   evidence quote and the passage number. The quote is located in that
   passage with spans.find_span. A "supported" verdict whose quote cannot be
   found in any passage is downgraded to unverified: evidence that is not
   there does not support anything.
4. score_claims, the formula:

       raw     = (1.0 * supported + 0.4 * unverified - 2.0 * contradicted) / claims
       penalty = 0.3 * (supported claims without a citation / supported claims)
       score   = 10 * max(raw, 0) * (1 - penalty), rounded to 2 decimals

   An unverified claim counts 0.4: it may be true, but the passages do not
   show it. A contradicted claim costs twice what a supported one earns, so a
   single contradiction outweighs several supported claims. Supported claims
   that do not cite a source lose up to 30% of the score. An answer with no
   claim has no score (None), not 0 or 10.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterator, Literal, Sequence

from ragloupe.errors import LlmBadOutput
from ragloupe.generate.groundedness import split_sentences
from ragloupe.generate.llm import LlmClient
from ragloupe.generate.spans import Span, find_span

ClaimVerdict = Literal["supported", "contradicted", "unverified"]
WEIGHTS: dict[str, float] = {"supported": 1.0, "unverified": 0.4, "contradicted": -2.0}
UNCITED_PENALTY = 0.3
MAX_PIECE_CHARS = 1500
BATCH_SIZE = 8

EXTRACT_SYSTEM = (
    "You split text into atomic factual claims. An atomic claim states exactly one fact. "
    "Reply with JSON only.")
EXTRACT_PROMPT = (
    "Text:\n{text}\n\n"
    "List every atomic factual claim the text makes. For each, give \"claim\": the fact as a "
    "self-contained sentence, and \"span\": the exact words of the text that state it, copied "
    "verbatim. Leave out citations like [1].\n"
    "Reply as JSON: {{\"claims\": [{{\"claim\": \"...\", \"span\": \"...\"}}]}}")
VERIFY_SYSTEM = (
    "You check claims against numbered source passages, using only those passages. "
    "Reply with JSON only.")
VERIFY_PROMPT = (
    "Passages:\n\n{passages}\n\nClaims:\n{claims}\n\n"
    "For each claim, decide: \"supported\" (a passage states it), \"contradicted\" (a passage states "
    "otherwise) or \"unverified\" (the passages do not say). Give \"source\": the passage number, and "
    "\"quote\": the exact words of that passage that support or contradict it, copied verbatim "
    "(empty for unverified), \"rationale\": one short sentence saying why, and \"confidence\": "
    "how sure you are of the verdict, from 0 to 1.\n"
    "Reply as JSON: {{\"results\": [{{\"id\": 1, \"verdict\": \"supported\", \"source\": 1, "
    "\"quote\": \"...\", \"rationale\": \"...\", \"confidence\": 0.9}}]}}")


@dataclass(frozen=True)
class Claim:
    text: str  # the claim as a self-contained sentence
    span_text: str  # the answer's words that state it
    span: Span | None  # where they are in the answer (None when they cannot be found)
    cited: bool  # its sentence in the answer carries a citation


@dataclass(frozen=True)
class ClaimCheck:
    claim: Claim
    verdict: ClaimVerdict
    source: int | None  # passage number of the evidence
    quote: str  # the evidence as the model quoted it
    evidence_span: Span | None  # the quote located in the source passage
    note: str = ""  # why a verdict was changed or is missing
    rationale: str = ""  # the model's one-sentence reason for its verdict
    confidence: float | None = None  # the model's own 0-1 certainty: uncalibrated, None when not given


@dataclass(frozen=True)
class ClaimReport:
    checks: tuple[ClaimCheck, ...]
    score: float | None  # 0-10; None when the answer makes no claim

    def counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.checks) for v in WEIGHTS}

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "counts": self.counts(), "checks": [asdict(c) for c in self.checks]}

    def summary(self) -> str:
        counts = self.counts()
        score = "n/a (no claims)" if self.score is None else f"{self.score:.1f}/10"
        lines = [f"claims: {len(self.checks)}  supported {counts['supported']}  unverified "
                 f"{counts['unverified']}  contradicted {counts['contradicted']}  score {score}"]
        for check in self.checks:
            source = f" [{check.source}]" if check.source else ""
            lines.append(f"  {check.verdict:<12}{source} {check.claim.text}")
        return "\n".join(lines)


# ----------------------------------------------------------------------------
# 1. Splitting


def split_answer(text: str, max_chars: int = MAX_PIECE_CHARS) -> list[str]:
    """Pieces of at most about ``max_chars``, cut at paragraph and line breaks.

    A markdown table is cut between rows only, and every piece of it starts
    with the table's header and separator lines.
    """
    pieces: list[str] = []
    for block in _blocks(text):
        if _is_table(block):
            pieces.extend(_split_table(block, max_chars))
        elif len(block) <= max_chars:
            pieces.append(block)
        else:
            pieces.extend(_pack(block.splitlines() if "\n" in block else _sentences(block), max_chars, " "))
    return _merge_small(pieces, max_chars)


def _blocks(text: str) -> list[str]:
    """Paragraphs, with each markdown table a block of its own."""
    blocks: list[str] = []
    current: list[str] = []
    in_table = False
    for line in text.splitlines():
        row = line.strip().startswith("|")
        if not line.strip() or row != in_table:
            if current:
                blocks.append("\n".join(current))
            current = []
        in_table = row
        if line.strip():
            current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def _is_table(block: str) -> bool:
    lines = block.splitlines()
    return len(lines) >= 2 and all(l.strip().startswith("|") for l in lines) \
        and bool(re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", lines[1])) and "-" in lines[1]


def _split_table(block: str, max_chars: int) -> list[str]:
    lines = block.splitlines()
    header, rows = lines[:2], lines[2:]
    if not rows:
        return [block]
    budget = max(max_chars - len("\n".join(header)) - 1, 1)
    return ["\n".join(header) + "\n" + group for group in _pack(rows, budget, "\n")]


def _pack(units: list[str], max_chars: int, joiner: str) -> list[str]:
    groups: list[str] = []
    current = ""
    for unit in units:
        candidate = f"{current}{joiner}{unit}" if current else unit
        if current and len(candidate) > max_chars:
            groups.append(current)
            candidate = unit
        current = candidate
    if current:
        groups.append(current)
    return groups


def _sentences(block: str) -> list[str]:
    return [block[s:e] for s, e in split_sentences(block)]


def _merge_small(pieces: list[str], max_chars: int) -> list[str]:
    """Join neighbouring prose pieces that fit together (fewer LLM calls); tables stay alone."""
    merged: list[str] = []
    for piece in pieces:
        if merged and not _is_table(piece) and not _is_table(merged[-1]) \
                and len(merged[-1]) + len(piece) + 2 <= max_chars:
            merged[-1] = f"{merged[-1]}\n\n{piece}"
        else:
            merged.append(piece)
    return merged


# ----------------------------------------------------------------------------
# 2. Extraction


def extract_claims(client: LlmClient, answer_text: str, citations: Sequence[Any] = ()) -> list[Claim]:
    """The answer's atomic claims, with their spans in the answer, de-duplicated by span."""
    sentences = split_sentences(answer_text)
    claims: list[Claim] = []
    seen: set[str] = set()
    for piece in split_answer(answer_text):
        reply = client.generate(EXTRACT_PROMPT.format(text=piece), system=EXTRACT_SYSTEM, json_mode=True)
        for item in _json_list(reply, "claims", "claim extraction"):
            if not isinstance(item, dict):
                continue
            text = str(item.get("claim") or "").strip()
            span_text = str(item.get("span") or text).strip()
            if not text:
                continue
            span = find_span(span_text, answer_text)
            key = f"{span.start}:{span.end}" if span else " ".join(span_text.lower().split())
            if key in seen:
                continue
            seen.add(key)
            claims.append(Claim(text, span_text, span, _is_cited(span, sentences, citations)))
    return claims


def _is_cited(span: Span | None, sentences: list[tuple[int, int]], citations: Sequence[Any]) -> bool:
    """True when a sentence the span touches carries a citation the model wrote (a picked one is no citation)."""
    if span is None:
        return False
    touched = [(s, e) for s, e in sentences if s < span.end and span.start < e]
    return any(s <= c.start < e for s, e in touched for c in citations if not getattr(c, "picked", False))


# ----------------------------------------------------------------------------
# 3. Verification


def verify_claims(client: LlmClient, claims: Sequence[Claim], passages: Sequence[str],
                  batch_size: int = BATCH_SIZE, batches: Sequence[Any] | None = None) -> list[ClaimCheck]:
    """Each claim checked against ``passages`` (numbered from 1), ``batch_size`` per LLM call.

    With ``batches`` (claim_evidence.pack_batches) each call holds its claims and only their
    excerpts, numbered from 1 in the prompt; verdicts come back in the passages' own numbers
    and offsets."""
    if batches is None:
        whole = tuple(_WholePassage(n, text) for n, text in enumerate(passages, start=1))
        batches = [_WholeBatch(tuple(range(first, min(first + batch_size, len(claims)))), whole)
                   for first in range(0, len(claims), batch_size)]
    checks: list[ClaimCheck] = []
    for batch in batches:
        shown = [ex.text for ex in batch.excerpts]
        context = "\n\n".join(f"[{i}] {text.strip()}" for i, text in enumerate(shown, start=1))
        listed = "\n".join(f"{i}. {claims[c].text}" for i, c in enumerate(batch.claims, start=1))
        reply = client.generate(VERIFY_PROMPT.format(passages=context, claims=listed),
                                system=VERIFY_SYSTEM, json_mode=True)
        results = _results_by_id(_json_list(reply, "results", "claim verification"), len(batch.claims))
        for i, c in enumerate(batch.claims, start=1):
            checks.append(_in_sources(_check(claims[c], results.get(i), shown), batch.excerpts, passages))
    return checks


@dataclass(frozen=True)
class _WholePassage:
    """A whole passage as an excerpt of itself (the batches of verify_claims without evidence)."""

    source: int
    text: str
    start: int = 0


@dataclass(frozen=True)
class _WholeBatch:
    claims: tuple[int, ...]
    excerpts: tuple[_WholePassage, ...]


def _in_sources(check: ClaimCheck, excerpts: Sequence[Any], passages: Sequence[str]) -> ClaimCheck:
    """A check made against excerpts, with its passage number and evidence span in the passages'
    own terms; a quote found in no excerpt is looked for in the whole passages."""
    if check.source is not None and check.evidence_span is not None:
        shown = excerpts[check.source - 1]
        span = check.evidence_span
        moved = Span(span.start + shown.start, span.end + shown.start, span.method, span.score)
        return replace(check, source=shown.source, evidence_span=moved)
    if check.quote and check.evidence_span is None:
        span, source = _locate(check.quote, None, passages)
        if span is not None:
            restored = "supported" if check.note.startswith("downgraded from supported") else check.verdict
            return replace(check, verdict=restored, source=source, evidence_span=span, note="")
    source = excerpts[check.source - 1].source if check.source is not None and check.source <= len(excerpts) else None
    return replace(check, source=source)


def _results_by_id(items: list[Any], n: int) -> dict[int, dict]:
    """Results keyed by claim number; a result without a usable id takes its position."""
    by_id: dict[int, dict] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            continue
        try:
            key = int(item.get("id", position))
        except (TypeError, ValueError):
            key = position
        if 1 <= key <= n and key not in by_id:
            by_id[key] = item
    return by_id


def _check(claim: Claim, result: dict | None, passages: Sequence[str]) -> ClaimCheck:
    if result is None:
        return ClaimCheck(claim, "unverified", None, "", None, "the model gave no verdict for this claim")
    verdict = str(result.get("verdict", "")).strip().lower()
    if verdict not in WEIGHTS:
        return ClaimCheck(claim, "unverified", None, "", None, f"unknown verdict {verdict!r}")
    quote = str(result.get("quote") or "").strip()
    source = _passage_number(result.get("source"), len(passages))
    span, source = _locate(quote, source, passages)
    rationale = " ".join(str(result.get("rationale") or "").split())
    confidence = _confidence(result.get("confidence"))
    if verdict == "supported" and span is None:
        return ClaimCheck(claim, "unverified", source, quote, None,
                          "downgraded from supported: the evidence quote is in no passage",
                          rationale, confidence)
    return ClaimCheck(claim, verdict, source, quote, span, "", rationale, confidence)  # type: ignore[arg-type]


def _confidence(value: Any) -> float | None:
    """The model's 0-1 confidence, or None when it gave none or something else."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0.0 <= number <= 1.0 else None


def _passage_number(value: Any, n: int) -> int | None:
    match = re.search(r"\d+", str(value)) if value is not None else None
    number = int(match.group(0)) if match else None
    return number if number is not None and 1 <= number <= n else None


def _locate(quote: str, source: int | None, passages: Sequence[str]) -> tuple[Span | None, int | None]:
    """The quote's span in the named passage, else in the first passage that holds it."""
    if not quote:
        return None, source
    order = ([source] if source else []) + [i for i in range(1, len(passages) + 1) if i != source]
    for number in order:
        span = find_span(quote, passages[number - 1])
        if span is not None:
            return span, number
    return None, source


# ----------------------------------------------------------------------------
# 4. Score and the whole check


def score_parts(checks: Sequence[ClaimCheck]) -> dict[str, Any]:
    """The score and what it is made of (the formula is in the module docstring)."""
    counts = {v: sum(c.verdict == v for c in checks) for v in WEIGHTS}
    parts: dict[str, Any] = {"claims": len(checks), **counts, "raw": None,
                             "uncited_supported_share": None, "penalty": None, "score": None}
    if not checks:
        return parts
    raw = sum(WEIGHTS[c.verdict] for c in checks) / len(checks)
    supported = [c for c in checks if c.verdict == "supported"]
    uncited = sum(not c.claim.cited for c in supported) / len(supported) if supported else 0.0
    parts.update(raw=round(raw, 4), uncited_supported_share=round(uncited, 4),
                 penalty=round(UNCITED_PENALTY * uncited, 4),
                 score=round(10 * max(raw, 0.0) * (1 - UNCITED_PENALTY * uncited), 2))
    return parts


def score_claims(checks: Sequence[ClaimCheck]) -> float | None:
    """The 0-10 answer score; the formula is in the module docstring."""
    return score_parts(checks)["score"]


def check_claims(answer: Any, client: LlmClient, batch_size: int = BATCH_SIZE) -> ClaimReport:
    """Extract, verify and score the claims of a generate.answer.Answer."""
    claims = extract_claims(client, answer.text, answer.citations)
    checks = verify_claims(client, claims, [p.chunk.text for p in answer.passages], batch_size)
    return ClaimReport(tuple(checks), score_claims(checks))


def _json_list(reply: str, key: str, what: str) -> list[Any]:
    """The list under ``key`` in a JSON reply, tolerating code fences and chatter around it.

    The first JSON value of the right shape wins: an object holding ``key``,
    or a bare list of objects. A "[1]" in prose is JSON too, and is skipped.
    """
    for value in _json_values(reply):
        if isinstance(value, dict) and isinstance(value.get(key), list):
            return value[key]
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            return value
    snippet = " ".join(reply.split())[:120]
    raise LlmBadOutput(f"the LLM's {what} reply has no JSON list of {key!r}: {snippet}")


def _json_values(reply: str) -> Iterator[Any]:
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", reply):
        try:
            value, _ = decoder.raw_decode(reply, match.start())
        except json.JSONDecodeError:
            continue
        yield value
