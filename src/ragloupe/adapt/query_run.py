"""`ragloupe adapt --queries`: learn a query adapter for this index from the user's own gold
questions, and keep it only when questions it did not learn from find their pages better with it.

The shipped adapter (retrieve/query_adapter.py) learned the bundled model's question-to-page map
from ragloupe's gold sets; on documents it never read it carries little (docs/retrieval.md). This
learns the map for the user's documents and model, in seconds, without re-embedding anything:

1. questions: every question of the gold sets whose document is in the index, embedded by the
   index's model (its own vector, no adapter);
2. before: each searched in the mode in force with the baseline adapter: the one configured
   (shipped, off or a file), never one this command adopted earlier, which learned from them;
3. out of fold: the questions dealt into ``FOLDS`` folds (seeded); for each fold an adapter is
   trained on the other folds' questions (adapt/query_training.py, starting from and held near
   the baseline's matrix) and the fold's questions searched with it, so every question is scored
   by an adapter that never read it. The folds split questions, not writers: questions written by
   one person share a wording, and new questions by others may gain less;
4. decide: adapt/compare.py's rule (Hit@1 not lower on any gold set, MRR over all questions higher);
5. kept: one adapter trained on every question, saved as <index_dir>/models/query-adapter-<hash>.npz
   and named in <index_dir>/models/query_adapter.json, which Settings reads while
   RAGLOUPE_QUERY_ADAPTER is left unset (config._with_adopted_query_adapter). Not kept: the
   baseline stays, and an adapter adopted by an earlier run is no longer used (the index follows
   the last decision; the earlier one was not what this run compared against).

The record (questions, folds, the before/after table, the decision, seconds) is written beside
it as query-adapter-<hash>.adapt.json and returned.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import numpy as np

from ragloupe.adapt import compare, query_training as QT
from ragloupe.adapt.run import AdaptProgress, ProgressCallback
from ragloupe.config import ADAPTED_MODELS_DIR, Settings, adopted_query_adapter_file
from ragloupe.errors import AdaptError
from ragloupe.evaluate.goldset import GoldSet, load_goldsets
from ragloupe.retrieve import query_adapter
from ragloupe.workspace import Workspace

FOLDS = 5
MIN_QUESTIONS = 10  # two a fold: fewer cannot both teach an adapter and test it
NEW = "the learned query adapter"


@dataclass
class QueryAdaptOutcome:
    """What `ragloupe adapt --queries` did and found; ``as_dict`` is the record written beside the adapter."""

    kept: bool
    reason: str
    adapter_file: str  # the adapter saved when kept, else ""
    baseline: str  # what the questions were searched with before: shipped, off or a file
    mode: str
    goldsets: list[str]
    questions: int
    skipped: dict[str, int]  # questions left out, by why
    folds: int
    comparison: dict
    seconds: dict[str, float] = field(default_factory=dict)
    # When kept but a setting that outlives this run names another adapter: that setting, which wins.
    overridden_by: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def adapt_queries(workspace: Workspace, goldsets: Sequence[str | Path], progress: ProgressCallback | None = None,
                  reg: float = QT.REG) -> QueryAdaptOutcome:
    """Learn, test and (when it wins) adopt a query adapter for the index ``workspace`` is open on.
    ``reg``: how near the baseline the adapter is held (a benchmark's choice; the product's is QT.REG)."""
    say = progress or (lambda step: None)
    settings = workspace.settings
    seconds: dict[str, float] = {}
    mark = time.perf_counter()
    say(AdaptProgress("questions"))
    sets, skipped = _indexed_questions(workspace, goldsets)
    questions = [q for g in sets for q in g.queries]
    if len(questions) < MIN_QUESTIONS:
        raise AdaptError(f"{len(questions)} gold question(s) on indexed documents: a query adapter needs at "
                         f"least {MIN_QUESTIONS} to learn from some and test on the others")
    baseline = baseline_choice(settings)
    base_settings = settings.replace(query_adapter=baseline)
    base_workspace = workspace.with_settings(base_settings)
    workspace.check_embedded_by()  # the questions' vectors are set against the index's
    vectors = np.asarray([workspace.query_vector(q.question) for q in questions], dtype=np.float32)
    start, _ = base_workspace.query_adapter(None, vectors.shape[1])
    start_matrix = None if start is None else start.matrix
    docs = {d: QT.doc_units(workspace, d) for d in sorted({q.doc_id for q in questions})}
    seconds["questions"] = _since(mark)

    mark = time.perf_counter()
    say(AdaptProgress("before", detail=f"{len(questions)} questions"))
    before = _scores(base_workspace, sets)
    seconds["before"] = _since(mark)

    mark = time.perf_counter()
    fold_of = _deal(len(questions), FOLDS, settings.adapt_seed)
    after: dict[tuple[str, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ragloupe-query-adapter-") as scratch:
        for fold in range(FOLDS):
            say(AdaptProgress("folds", fold, FOLDS))
            rows = [i for i in range(len(questions)) if fold_of[i] != fold]
            matrix = _train([questions[i] for i in rows], vectors[rows], docs, settings, start_matrix, reg)
            path = Path(scratch) / f"fold{fold}.npz"
            query_adapter.save(path, matrix, settings.embedding_model, {"questions": len(rows)})
            held_out = {(questions[i].goldset, questions[i].query_id) for i in range(len(questions))
                        if fold_of[i] == fold}
            fold_sets = [replace(g, queries=tuple(q for q in g.queries if (q.goldset, q.query_id) in held_out))
                         for g in sets]
            fold_workspace = workspace.with_settings(settings.replace(query_adapter=str(path)))
            after.update(_scores(fold_workspace, [g for g in fold_sets if g.queries]))
    say(AdaptProgress("folds", FOLDS, FOLDS))
    seconds["folds"] = _since(mark)

    table = compare.compare(*_by_set(sets, before, after))
    decision = compare.decide(table, new=NEW, current=f"RAGLOUPE_QUERY_ADAPTER={baseline}")
    adopted = adopted_query_adapter_file(settings)
    if not decision.keep_adapted and adopted.is_file():  # the index follows this run's decision
        adopted.unlink()
        decision = replace(decision, reason=decision.reason + "; the index's earlier query adapter is no longer used")
    say(AdaptProgress("decide", detail=decision.reason))
    outcome = QueryAdaptOutcome(
        kept=decision.keep_adapted, reason=decision.reason, adapter_file="", baseline=baseline,
        mode=settings.mode, goldsets=[g.path for g in sets], questions=len(questions), skipped=skipped,
        folds=FOLDS, comparison=table, seconds=seconds)
    models = settings.path("index_dir") / ADAPTED_MODELS_DIR
    name = adapter_name(workspace, questions, baseline, start_matrix, reg)
    if decision.keep_adapted:
        mark = time.perf_counter()
        say(AdaptProgress("train", detail=f"{len(questions)} questions"))
        matrix = _train(questions, vectors, docs, settings, start_matrix, reg)
        path = models / f"{name}.npz"
        query_adapter.save(path, matrix, settings.embedding_model, {
            "questions": len(questions), "gold_sets": outcome.goldsets, "reg": reg, "steps": QT.STEPS,
            "temperature": QT.TEMPERATURE, "sentence_weight": settings.dense_sentence_weight,
            "refines": baseline if start is not None else None, "trained_by": "ragloupe adapt --queries",
            "question_digests": sorted({query_adapter.question_digest(q.question) for q in questions}),
            "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        _write_json(adopted, {
            "file": path.name, "model": settings.embedding_model, "questions": len(questions),
            "gold_sets": outcome.goldsets, "adopted_at": datetime.now(timezone.utc).isoformat(timespec="seconds")})
        outcome.adapter_file = str(path)
        if settings.sources.get("query_adapter") in ("environment", ".env"):
            outcome.overridden_by = (f"RAGLOUPE_QUERY_ADAPTER={settings.query_adapter} (from the "
                                     f"{settings.sources['query_adapter']})")
        seconds["train"] = _since(mark)
    _write_json(models / f"{name}.adapt.json", outcome.as_dict())
    say(AdaptProgress("done", detail=decision.reason))
    return outcome


def revert_queries(settings: Settings) -> dict:
    """Stop using the adapter `ragloupe adapt --queries` adopted for this index (its file stays)."""
    adopted = adopted_query_adapter_file(settings)
    if not adopted.is_file():
        raise AdaptError("this index has no query adapter of its own: nothing to revert")
    adopted.unlink()
    return {"reverted_to": baseline_choice(settings)}


def baseline_choice(settings: Settings) -> str:
    """What dense searches with when this index has no adapter of its own: the configured choice,
    or the default one when the current choice is the index's own (which learned from the questions)."""
    if settings.sources.get("query_adapter") == "adopted":
        return Settings.__dataclass_fields__["query_adapter"].default
    return settings.query_adapter


def adapter_name(workspace: Workspace, questions, baseline: str, start: np.ndarray | None, reg: float) -> str:
    """query-adapter-<hash>: the index's content, the model, the baseline and the questions."""
    key = json.dumps([str(workspace.store.fingerprint()), workspace.settings.embedding_model, baseline,
                      None if start is None else hashlib.sha256(np.ascontiguousarray(start)).hexdigest(),
                      [(q.goldset, q.query_id, q.question, q.expected_units) for q in questions],
                      [reg, QT.STEPS, QT.TEMPERATURE, workspace.settings.dense_sentence_weight]],
                     sort_keys=True, default=list)
    return f"query-adapter-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


# --- the stages --------------------------------------------------------------------

def _indexed_questions(workspace: Workspace, goldsets) -> tuple[list[GoldSet], dict[str, int]]:
    """The gold sets with only the questions whose document the index holds, and how many were left out."""
    indexed = set(workspace.chunk_table().by_doc)
    sets, skipped = [], {"document not in this index": 0}
    for goldset in load_goldsets(goldsets):
        kept = tuple(q for q in goldset.queries if q.doc_id in indexed)
        skipped["document not in this index"] += len(goldset.queries) - len(kept)
        if kept:
            sets.append(replace(goldset, queries=kept))
    return sets, {k: v for k, v in skipped.items() if v}


def _deal(n: int, folds: int, seed: int) -> list[int]:
    """Each question's fold: a seeded shuffle dealt round the folds, so folds differ in size by one at most."""
    order = np.random.default_rng(seed).permutation(n)
    fold_of = [0] * n
    for position, i in enumerate(order):
        fold_of[int(i)] = position % folds
    return fold_of


def _train(questions, vectors: np.ndarray, docs, settings: Settings, start: np.ndarray | None,
           reg: float) -> np.ndarray:
    parts = QT.batches(questions, vectors, docs)
    if not parts:
        raise AdaptError("no gold question's expected page holds a chunk of the index: nothing to learn from")
    return QT.train(parts, settings.dense_sentence_weight, reg=reg, start=start)


def _scores(workspace: Workspace, sets: Sequence[GoldSet]) -> dict[tuple[str, str], dict[str, float]]:
    """Each question's Hit@1, Hit@3 and reciprocal rank in the mode in force, in its own document."""
    from ragloupe.evaluate.runs import evaluate  # the evaluation imports the retrieval stack

    report = evaluate(list(sets), mode=workspace.settings.mode, scope="doc", write=False, workspace=workspace)
    return {(q["goldset"], q["query_id"]): {m: float(q["metrics"][m]) for m in compare.MEASURES}
            for q in report.data["queries"]}


def _by_set(sets: Sequence[GoldSet], before: dict, after: dict) -> tuple[dict, dict]:
    """before and after as compare.compare reads them: per gold set, the questions in the same order."""
    keys = {g.name: [(q.goldset, q.query_id) for q in g.queries] for g in sets}
    return ({name: [before[k] for k in ks] for name, ks in keys.items()},
            {name: [after[k] for k in ks] for name, ks in keys.items()})


def _write_json(path: Path, data: dict) -> None:
    """Write by rename: a reader sees the old file or the new one, never half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(data, indent=1, sort_keys=True, default=str), encoding="utf-8")
    scratch.replace(path)


def _since(mark: float) -> float:
    return round(time.perf_counter() - mark, 1)
