"""Query rewriting through the LLM client, appended to the question, never replacing it.

The model is asked (temperature 0, fixed seed: the client's defaults) to
restate the question with the document's likely wording. The engines then
search "original question + rewrite", so a bad rewrite can add noise but
cannot lose what the person asked. Codes, numbers, units and model names
are what a rewrite is most likely to mangle and what retrieval most needs:
the prompt tells the model to keep them, and ``restore_terms`` puts back
any it dropped anyway, recording which.

Any failure (no server, an HTTP error, an empty or unusable reply, a reply
slower than Settings.rewrite_timeout_s) falls back to the original question
with the reason recorded; search never fails because of the LLM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.models import rewrite_note

SYSTEM_PROMPT = (
    "You rewrite questions for a search engine over technical documents and annual reports. "
    "Restate the question in the words such a document would most likely use, adding close "
    "synonyms and expanding abbreviations. Keep every number, amount, unit, date, code, "
    "standard, model name and proper name exactly as written. Reply with the rewritten "
    "question only, on one line, with no explanation."
)

# Rewrites longer than this are cut: a rambling reply would drown the question in BM25.
MAX_REWRITE_CHARS = 400
MAX_REWRITE_TOKENS = 96

# Terms a rewrite must keep: anything with a digit (numbers, amounts, units,
# codes, years), acronyms, and words with inner capitals or underscores
# (model and product names like "RAPID-N", "eNATECH", "Q_2025").
_PROTECTED = re.compile(
    r"\b(?:ISO|IEC|EN|BS|DIN|API|ASTM|NFPA|ANSI|ASME|IEEE)(?:[ /-](?:ISO|IEC|EN))*[ -]?\d[\d:-]*"  # ISO 31000
    r"|\b\d+(?:/\d+)+(?:/[A-Za-z]+)?"  # 2012/18/EU, 2020/21
    r"|[£$€]?\d[\d,./:%-]*(?:\s?(?:%|mm|cm|km|kg|bar|kpa|mpa|kw|mw|°c|m))?(?![\w])"  # numbers, units
    r"|\b[A-Za-z]+[-_]?\d[\w./-]*"  # DN50, Q_2025, EN1473, llama3.2
    r"|\b[A-Z]{2,}[\w-]*"  # NHS, ISO, RAPID-N
    r"|\b[a-z]+[A-Z][\w-]*"  # eNATECH
)
_PREFIX = re.compile(r"^(rewritten( question| query)?|query|question|rewrite)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Rewrite:
    """What the engines search for, and what the LLM contributed to it, as data a face words."""

    search_text: str  # the original question, plus the rewrite when used
    rewrite: str | None  # the cleaned rewrite (terms restored), None when none came back
    used: bool
    not_used_because: str = ""  # why it was not used ("" when it was)
    restored: tuple[str, ...] = ()  # the question's terms the LLM dropped, put back at the rewrite's end

    @property
    def note(self) -> str:
        """The outcome in one line (logs, the CLI, run reports)."""
        return rewrite_note(self.not_used_because, self.restored)


def protected_terms(query: str) -> list[str]:
    """The query's numbers, codes, units and names, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in _PROTECTED.finditer(query):
        term = match.group().rstrip(".,;:")
        if term:
            seen.setdefault(term, None)
    return list(seen)


def clean_reply(reply: str) -> str:
    """The first non-empty line of the reply, without a 'Rewritten query:' label or quotes."""
    for line in reply.splitlines():
        line = _PREFIX.sub("", line.strip()).strip().strip("\"'`").strip()
        if line:
            return line[:MAX_REWRITE_CHARS]
    return ""


def restore_terms(query: str, rewrite: str) -> tuple[str, list[str]]:
    """Append to the rewrite any protected term of the query it lost; return it and those terms."""
    flat = " ".join(rewrite.lower().split())
    missing = [t for t in protected_terms(query) if " ".join(t.lower().split()) not in flat]
    return (f"{rewrite} {' '.join(missing)}" if missing else rewrite), missing


def rewrite_query(query: str, settings: Settings, client=None) -> Rewrite:
    """Ask the LLM for a rewrite and combine it with the question; fall back on any failure."""
    if client is None:
        from ragloupe.generate.llm import get_client

        try:
            client = get_client(settings)
        except LlmUnavailable as exc:
            return Rewrite(query, None, False, str(exc))
    try:
        reply = client.generate(query, system=SYSTEM_PROMPT, max_tokens=MAX_REWRITE_TOKENS,
                                timeout_s=settings.rewrite_timeout_s)
    except (LlmUnavailable, LlmBadOutput) as exc:
        return Rewrite(query, None, False, str(exc))
    rewrite = clean_reply(reply)
    if not rewrite:
        return Rewrite(query, None, False, "the LLM returned nothing")
    if _same(rewrite, query):
        return Rewrite(query, rewrite, False, "identical to the question")
    rewrite, missing = restore_terms(query, rewrite)
    return Rewrite(f"{query}\n{rewrite}", rewrite, True, restored=tuple(missing))


def _same(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", s.lower()).split())

    return norm(a) == norm(b)
