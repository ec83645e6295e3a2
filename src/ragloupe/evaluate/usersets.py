"""The user's own gold sets: named files in the shipped format, with who, what and when per item.

A gold set made in the workbench (a row marked in Search & compare, an
accepted LLM draft, `ragloupe goldset add`) is a JSON file
``<goldsets_dir>/<name>.json`` in the shipped format (``{"_meta", "queries"}``,
``expected_pages`` for a page, ``expected_records`` for a record), so
``load_goldset``, evaluation, the failure audit and tuning read it like the
shipped ones. Each item also keeps ``added_by``, ``added_at`` and
``added_via`` (and ``edited_by``/``edited_at`` once changed).

An item is checked against what the index holds before it is written: its
document must be indexed and its page or record must exist. A refusal is a
GoldSetInvalid with one line; nothing of it is written. Files are written to
a temporary name and renamed, so a reader never sees half a gold set.
"""

from __future__ import annotations

import getpass
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ragloupe.config import Settings
from ragloupe.errors import GoldSetInvalid
from ragloupe.evaluate.goldset import DocumentInfo
from ragloupe.models import unit_id
from ragloupe.numbers import key_quantities, match_answer

USER_FORMAT = "ragloupe.goldset/1"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_ID = re.compile(r"^U_(\d+)$")


@dataclass(frozen=True)
class NewItem:
    """What a person labels: the question, the unit that answers it, the answer text."""

    question: str
    doc_id: str
    page: int | None = None
    record_id: str = ""
    answer: str = ""
    by: str = ""  # who; empty: the account running ragloupe
    via: str = "cli"  # "search & compare" | "cli" | "draft" | "evaluation"
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. the drafting model and prompt hash

    @property
    def unit(self) -> str:
        return unit_id(self.doc_id, self.page or 0, self.record_id)


def goldsets_dir(settings: Settings) -> Path:
    """Where the user's gold sets live: Settings.goldsets_dir, or runs_dir/goldsets."""
    return settings.path("goldsets_dir") if settings.goldsets_dir else settings.path("runs_dir") / "goldsets"


def goldset_path(settings: Settings, name: str) -> Path:
    """The file of the gold set ``name``; GoldSetInvalid for a name that is not a plain file name."""
    if not _NAME.match(name or ""):
        raise GoldSetInvalid(f"gold set name {name!r}: use letters, digits, '.', '_' or '-' "
                             "(up to 80, starting with a letter or digit)")
    return goldsets_dir(settings) / f"{name}.json"


def list_user_goldsets(settings: Settings) -> list[Path]:
    """The user's gold set files, sorted by name."""
    root = goldsets_dir(settings)
    return sorted(root.glob("*.json")) if root.is_dir() else []


def resolve_goldset(ref: str, settings: Settings) -> Path:
    """A gold set given as a path, or as the name of one of the user's gold sets."""
    path = Path(ref)
    if path.is_file():
        return path
    if _NAME.match(ref):
        candidate = goldsets_dir(settings) / f"{ref}.json"
        if candidate.is_file():
            return candidate
    raise GoldSetInvalid(f"no gold set {ref!r}: not a file, nor one of yours "
                         "(`ragloupe goldset list` names them)")


def read_goldset(settings: Settings, name: str, create: bool = False, by: str = "") -> dict:
    """The raw content of a user gold set; a new empty one when ``create`` and it does not exist."""
    path = goldset_path(settings, name)
    if not path.is_file():
        if not create:
            raise GoldSetInvalid(f"no gold set {name!r} in {goldsets_dir(settings)}")
        return {"_meta": {"format": USER_FORMAT, "name": name, "created_by": by or _account(),
                          "created_at": _now(), "description": "made in ragloupe"}, "queries": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GoldSetInvalid(f"{path.name}: not a readable gold set ({type(exc).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        raise GoldSetInvalid(f"{path.name}: not a gold set in the shipped format (no 'queries' list)")
    return data


def add_item(settings: Settings, name: str, item: NewItem, documents: Mapping[str, DocumentInfo],
             unit_text: str | None = None) -> tuple[dict, list[str]]:
    """Append ``item`` to the gold set ``name`` (made when new); (the stored entry, warnings).

    Refused (GoldSetInvalid, nothing written) when the question is empty or
    already in the set, or the unit is not in the index. A warning, not a
    refusal, when the answer text is not found in ``unit_text``.
    """
    problem = item_problem(item, documents)
    if problem:
        raise GoldSetInvalid(problem)
    data = read_goldset(settings, name, create=True, by=item.by)
    wanted = _normal(item.question)
    for existing in data["queries"]:
        if _normal(str(existing.get("question", ""))) == wanted:
            raise GoldSetInvalid(f"{name} already asks this question ({existing.get('query_id')})")
    entry = _entry(item, _next_id(data["queries"]))
    data["queries"].append(entry)
    drafted = {k: item.extra[k] for k in ("model", "prompt_sha256", "seed") if k in item.extra}
    if drafted and drafted not in data["_meta"].setdefault("drafted_with", []):
        data["_meta"]["drafted_with"].append(drafted)
    _write(goldset_path(settings, name), data)
    return entry, answer_warnings(item.answer, unit_text, item.unit)


def update_item(settings: Settings, name: str, query_id: str, changes: Mapping[str, Any],
                by: str = "") -> dict:
    """Change the question or answer of one item, recording who changed it and when."""
    allowed = {"question", "expected_answer"}
    unknown = sorted(set(changes) - allowed)
    if unknown:
        raise GoldSetInvalid(f"only the question and the answer of an item can be edited, not {unknown[0]}")
    data = read_goldset(settings, name)
    entry = _find(data, name, query_id)
    if "question" in changes and not str(changes["question"]).strip():
        raise GoldSetInvalid(f"{query_id}: the question cannot be empty")
    for key, value in changes.items():
        entry[key] = str(value).strip()
    if "expected_answer" in changes:
        entry["answer_type"] = answer_type(entry["expected_answer"])
    entry["edited_by"], entry["edited_at"] = by or _account(), _now()
    _write(goldset_path(settings, name), data)
    return entry


def remove_items(settings: Settings, name: str, query_ids: list[str]) -> list[str]:
    """Remove the items with these ids; GoldSetInvalid (nothing removed) when one is not there."""
    data = read_goldset(settings, name)
    for query_id in query_ids:
        _find(data, name, query_id)
    data["queries"] = [q for q in data["queries"] if q.get("query_id") not in set(query_ids)]
    _write(goldset_path(settings, name), data)
    return list(query_ids)


def delete_goldset(settings: Settings, name: str) -> Path:
    path = goldset_path(settings, name)
    if not path.is_file():
        raise GoldSetInvalid(f"no gold set {name!r} in {goldsets_dir(settings)}")
    path.unlink()
    return path


def item_problem(item: NewItem, documents: Mapping[str, DocumentInfo]) -> str:
    """Why ``item`` cannot be a gold item against this index, or "" when it can."""
    if not item.question.strip():
        return "the question is empty"
    info = documents.get(item.doc_id)
    if info is None:
        return f"document {item.doc_id!r} is not in the index"
    if bool(item.page) == bool(item.record_id):
        return "name either a page or a record as the answer's unit"
    if item.page is not None and not 1 <= int(item.page) <= info.n_pages:
        return f"{item.doc_id} has pages 1-{info.n_pages}, not page {item.page}"
    if item.record_id and item.record_id not in info.record_ids:
        return f"record {item.record_id!r} is not in {item.doc_id}"
    return ""


def answer_warnings(answer: str, unit_text: str | None, unit: str) -> list[str]:
    """A warning when the answer text is given but not found on its unit."""
    if not answer.strip() or unit_text is None:
        return []
    if match_answer(answer, unit_text, answer_type(answer)).status == "found":
        return []
    return [f"the answer {answer!r} is not found in the indexed text of {unit}: "
            "check it, or the label audit will flag the item"]


def answer_type(answer: str) -> str:
    """'number' when the answer is a figure, 'text' otherwise ('' with no answer)."""
    if not answer.strip():
        return ""
    return "number" if key_quantities(answer) else "text"


def _entry(item: NewItem, query_id: str) -> dict:
    entry: dict[str, Any] = {"query_id": query_id, "question": item.question.strip(), "doc_id": item.doc_id}
    if item.record_id:
        entry["expected_records"] = [item.record_id]
    else:
        entry["expected_pages"] = [int(item.page)]
    entry.update({"expected_answer": item.answer.strip(), "answer_type": answer_type(item.answer),
                  "added_by": item.by or _account(), "added_at": _now(), "added_via": item.via})
    entry.update({k: v for k, v in item.extra.items() if k not in entry})
    return entry


def _next_id(queries: list[dict]) -> str:
    numbers = [int(m.group(1)) for q in queries if (m := _ID.match(str(q.get("query_id", ""))))]
    return f"U_{max(numbers, default=0) + 1:03d}"


def _find(data: dict, name: str, query_id: str) -> dict:
    for entry in data["queries"]:
        if entry.get("query_id") == query_id:
            return entry
    raise GoldSetInvalid(f"{name} has no item {query_id!r}")


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def _normal(question: str) -> str:
    return re.sub(r"\s+", " ", question.casefold()).strip().rstrip(" ?.!")


def _account() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container without a passwd entry)
        return "unknown"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def check_goldset(goldset, snapshot) -> list:
    """Every finding of a gold set against the index: load-time, index-time, and (warnings) items
    whose answer text is not on their unit. ``snapshot`` is runs.index_snapshot of its documents."""
    from ragloupe.evaluate.goldset import GoldFinding, all_findings

    findings = all_findings([goldset], snapshot.documents)
    for query in goldset.queries:
        for unit in query.expected_units[:1]:
            text = snapshot.unit_texts.get(unit)
            for warning in answer_warnings(query.expected_answer, text, unit):
                findings.append(GoldFinding(goldset.name, "answer_not_on_unit", f"{query.query_id}: {warning}",
                                            query.query_id, severity="warning"))
    return findings


# --- drafts (offered by drafting.py, not gold until accepted) ----------------------

def drafts_path(settings: Settings, name: str) -> Path:
    return goldsets_dir(settings) / "drafts" / goldset_path(settings, name).name


def save_drafts(settings: Settings, name: str, body: dict) -> Path:
    path = drafts_path(settings, name)
    _write(path, body)
    return path


def read_drafts(settings: Settings, name: str) -> dict:
    """The drafts of gold set ``name``: {"_meta", "drafts"}; empty when none were made."""
    path = drafts_path(settings, name)
    if not path.is_file():
        return {"_meta": {}, "drafts": []}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GoldSetInvalid(f"{path.name}: the drafts file is not readable ({type(exc).__name__})") from None


def accept_drafts(settings: Settings, name: str, draft_ids: list[str], documents: Mapping[str, DocumentInfo],
                  unit_texts: Mapping[str, str], edits: Mapping[str, Mapping[str, str]] | None = None,
                  by: str = "") -> tuple[list[dict], list[str]]:
    """Make offered drafts gold items (with edits: {draft_id: {question, answer}}); (entries, warnings).

    Only an offered draft can be accepted: one a check rejected never becomes gold.
    """
    body = read_drafts(settings, name)
    meta = body.get("_meta", {})
    drafts = {d["draft_id"]: d for d in body.get("drafts", [])}
    for draft_id in draft_ids:
        if drafts.get(draft_id, {}).get("status") != "offered":
            raise GoldSetInvalid(f"{draft_id} is not an offered draft of {name}")
    entries, warnings = [], []
    for draft_id in draft_ids:
        draft, edit = drafts[draft_id], (edits or {}).get(draft_id, {})
        question, answer = edit.get("question", draft["question"]), edit.get("answer", draft["answer"])
        item = NewItem(question, draft["doc_id"], page=None if draft["record_id"] else draft["page"],
                       record_id=draft["record_id"], answer=answer, by=by, via="draft",
                       extra={"model": meta.get("model", ""), "prompt_sha256": meta.get("prompt_sha256", ""),
                              "seed": meta.get("seed"), "draft_id": draft_id,
                              "edited": (question, answer) != (draft["question"], draft["answer"])})
        entry, more = add_item(settings, name, item, documents, unit_texts.get(item.unit))
        draft["status"], draft["query_id"] = "accepted", entry["query_id"]
        entries.append(entry)
        warnings += more
        save_drafts(settings, name, body)
    return entries, warnings


def dismiss_drafts(settings: Settings, name: str, draft_ids: list[str]) -> None:
    """The user rejects offered drafts: they stay in the file as dismissed, never gold."""
    body = read_drafts(settings, name)
    for draft in body.get("drafts", []):
        if draft["draft_id"] in draft_ids and draft["status"] == "offered":
            draft["status"] = "dismissed"
    save_drafts(settings, name, body)
