"""Draft gold questions from the corpus with the configured LLM, each checked before it is offered.

The complaints about test-set generators (empty or silent results, runs that
differ each time, questions nobody could answer from one page) shape this:

- the units drafted from are a sample stratified over documents and over each
  document's length (a document's pages are cut into as many equal stretches
  as it gets questions, one unit drawn from each), so drafts do not all come
  from the first pages;
- one question per unit, that unit its gold; temperature 0 and a fixed seed
  (the client's); the file records the model, the seed and the prompt's hash;
- a draft is offered only when its answer text is on its unit (whitespace and
  case aside), the question does not give its answer away, it is no
  duplicate of an earlier question, and BM25 over the whole corpus does not
  find MAX_RIVALS units at least as good as its own (too vague to have one
  right page). Every rejected draft keeps its reason, so nothing is silent.

Drafts are not gold: a person accepts, edits or rejects each one
(usersets.add_item on acceptance).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable, Sequence

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.evaluate import usersets
from ragloupe.generate.llm import get_client
from ragloupe.numbers import match_answer
from ragloupe.retrieve.search import search

MIN_UNIT_CHARS = 200  # a unit shorter than this has too little to ask about
PROMPT_CHARS = 3000  # the unit text the model is shown
MAX_RIVALS = 20  # BM25 units scoring at least as high as the gold unit before a draft is too vague
DUPLICATE_RATIO = 90.0  # rapidfuzz token_set_ratio at or above which two questions are one

SYSTEM = ("You write test questions for a search engine over documents. You read one page and write "
          "one question that a reader of the whole document might ask and that this page answers. "
          "Reply with JSON only.")
TEMPLATE = ("Document: {doc_id}, {where}.\n\nPage text:\n{text}\n\n"
            "Write ONE specific question answered by this page, in a reader's own words, naming what "
            "makes it specific (the item, the year, the table row). Do not put the answer in the "
            "question. Reply with JSON only: {{\"question\": \"...\", \"answer\": \"...\"}} where the "
            "answer is copied word for word from the page text (a figure, a name, a date or a short "
            "phrase).")
PROMPT_SHA256 = hashlib.sha256((SYSTEM + "\n" + TEMPLATE).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DraftUnit:
    unit: str
    doc_id: str
    page: int
    record_id: str
    text: str


@dataclass
class Draft:
    draft_id: str
    unit: str
    doc_id: str
    page: int
    record_id: str
    question: str
    answer: str
    status: str  # offered | rejected (by a check) | accepted | dismissed (by the user)
    reason: str = ""  # why a check rejected it
    checks: dict = field(default_factory=dict)
    query_id: str = ""  # the gold item it became, once accepted


def sample_units(chunks: Iterable, n: int, seed: int) -> list[DraftUnit]:
    """``n`` units stratified over documents and over each document's length, deterministically.

    Documents get n // D units each (the remainder to the first, by id); a
    document's units, in reading order, are cut into that many equal stretches
    and one unit is drawn from each with a seeded generator.
    """
    units = _units(chunks)
    by_doc: dict[str, list[DraftUnit]] = {}
    for unit in units:
        by_doc.setdefault(unit.doc_id, []).append(unit)
    docs = sorted(by_doc)
    if not docs or n < 1:
        return []
    shares = {doc: n // len(docs) + (1 if i < n % len(docs) else 0) for i, doc in enumerate(docs)}
    picked = []
    for doc in docs:
        pool, want = by_doc[doc], min(shares[doc], len(by_doc[doc]))
        rng = random.Random(f"{seed}:{doc}")
        for stretch in range(want):
            lo, hi = stretch * len(pool) // want, (stretch + 1) * len(pool) // want
            picked.append(pool[rng.randrange(lo, max(hi, lo + 1))])
    return picked


def _units(chunks: Iterable) -> list[DraftUnit]:
    parts: dict[str, list] = {}
    for chunk in chunks:
        if chunk.kind == "text":
            parts.setdefault(chunk.unit, []).append(chunk)
    units = []
    for unit, members in parts.items():
        members.sort(key=lambda c: c.position)
        text = "\n".join(c.text for c in members)
        if len(text.strip()) >= MIN_UNIT_CHARS:
            first = members[0]
            units.append(DraftUnit(unit, first.doc_id, first.page, first.record_id, text))
    return sorted(units, key=lambda u: (u.doc_id, u.page, u.record_id))


def draft_questions(units: Sequence[DraftUnit], client, rank_bm25: Callable[[str], list[tuple[str, float]]],
                    existing: Sequence[str] = (), seed: int = 0) -> dict:
    """A drafts file body: ``_meta`` (model, prompt hash, seed) and one checked draft per unit.

    ``rank_bm25(question)`` is BM25 over the whole corpus: (unit, score) best
    first. ``existing`` are questions already in the gold set (a draft that
    repeats one is a duplicate). LlmUnavailable stops the batch; a reply
    that cannot be read rejects that one draft.
    """
    drafts: list[Draft] = []
    kept_questions = list(existing)
    for number, unit in enumerate(units, start=1):
        draft = Draft(f"D_{number:03d}", unit.unit, unit.doc_id, unit.page, unit.record_id, "", "", "offered")
        try:
            reply = client.generate(_prompt(unit), SYSTEM, json_mode=True, max_tokens=200)
            draft.question, draft.answer = parse_reply(reply)
        except LlmBadOutput as exc:
            draft.status, draft.reason = "rejected", f"the model's reply was not usable: {exc}"
            drafts.append(draft)
            continue
        reason = check_draft(draft, unit.text, kept_questions, rank_bm25)
        if reason:
            draft.status, draft.reason = "rejected", reason
        else:
            kept_questions.append(draft.question)
        drafts.append(draft)
    meta = {"model": client.label, "prompt_sha256": PROMPT_SHA256, "seed": seed, "temperature": 0,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "units_sampled": len(units), "offered": sum(d.status == "offered" for d in drafts),
            "max_rivals": MAX_RIVALS}
    return {"_meta": meta, "drafts": [asdict(d) for d in drafts]}


def parse_reply(reply: str) -> tuple[str, str]:
    """(question, answer) from the model's JSON reply; LlmBadOutput when it has not both."""
    match = re.search(r"\{.*\}", reply or "", flags=re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise LlmBadOutput(f"no JSON object in {reply[:80]!r}")
    question, answer = str(data.get("question") or "").strip(), str(data.get("answer") or "").strip()
    if not question or not answer:
        raise LlmBadOutput("the JSON lacks a question or an answer")
    return question, answer


def check_draft(draft: Draft, unit_text: str, earlier: Sequence[str],
                rank_bm25: Callable[[str], list[tuple[str, float]]]) -> str:
    """Why the draft must not be offered, or "" when it passes every check (recorded in draft.checks)."""
    on_page = answer_on_page(draft.answer, unit_text)
    draft.checks["answer_on_page"] = on_page
    if not on_page:
        return f"its answer {draft.answer!r} is not on {draft.unit}"
    if _normal(draft.answer) in _normal(draft.question):
        return "the question gives its answer away"
    duplicate = _duplicate_of(draft.question, earlier)
    if duplicate:
        return f"a duplicate of {duplicate!r}"
    rivals = bm25_rivals(draft.unit, rank_bm25(draft.question))
    draft.checks["bm25_rivals"] = rivals
    if rivals >= MAX_RIVALS:
        return (f"too vague: BM25 over the whole corpus finds {rivals} units at least as good as "
                f"{draft.unit}")
    return ""


def answer_on_page(answer: str, text: str) -> bool:
    """The answer text occurs on the page, whitespace and case aside (a figure also as written
    another way: '£1,311,111' for '1,311,111')."""
    if not answer.strip():
        return False
    if _normal(answer) in _normal(text):
        return True
    return bool(re.search(r"\d", answer)) and match_answer(answer, text, "number").status == "found"


def bm25_rivals(unit: str, ranked: Sequence[tuple[str, float]]) -> int:
    """Units other than ``unit`` that BM25 scores at least as high (all listed ones when it is absent)."""
    scores = dict(ranked)
    if unit not in scores:
        return len(scores)
    return sum(1 for other, score in scores.items() if other != unit and score >= scores[unit])


def _prompt(unit: DraftUnit) -> str:
    where = f"record {unit.record_id}" if unit.record_id else f"page {unit.page}"
    return TEMPLATE.format(doc_id=unit.doc_id, where=where, text=unit.text[:PROMPT_CHARS])


def _duplicate_of(question: str, earlier: Sequence[str]) -> str:
    from rapidfuzz import fuzz

    wanted = _normal(question).rstrip(" ?.!")
    for other in earlier:
        normal = _normal(other).rstrip(" ?.!")
        if normal == wanted or fuzz.token_set_ratio(normal, wanted) >= DUPLICATE_RATIO:
            return other
    return ""


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip()


def no_llm_reason(client) -> str:
    """What to configure when no LLM can draft, or "" when one can."""
    ok, reason = client.available()
    return "" if ok else f"drafting questions needs an LLM: {reason}"



def draft_for(settings: Settings, name: str, n: int, workspace, client=None) -> dict:
    """Draft ``n`` questions for the gold set ``name`` from the whole index and save them as its drafts.

    ``workspace`` (ragloupe.workspace): the caller's open index; its BM25 ranks every draft.

    LlmUnavailable, saying what to configure, when no LLM answers; nothing is saved then.
    """
    if n < 1:
        raise usersets.GoldSetInvalid("ask for at least one draft")
    client = client or get_client(settings)
    problem = no_llm_reason(client)
    if problem:
        raise LlmUnavailable(problem)
    try:
        existing = [str(q.get("question", "")) for q in usersets.read_goldset(settings, name)["queries"]]
    except usersets.GoldSetInvalid:
        existing = []
    units = sample_units(workspace.chunks(), n, int(settings.llm_seed))

    def rank_bm25(question: str) -> list[tuple[str, float]]:
        ranking = search(question, mode="bm25", k=int(settings.candidate_window),
                         workspace=workspace.with_settings(settings))
        return [(page.unit, page.score) for page in ranking.pages]

    body = draft_questions(units, client, rank_bm25, existing, seed=int(settings.llm_seed))
    usersets.save_drafts(settings, name, body)
    return body
