"""What the coverage audit (coverage.py) reads: each gold document's layout from the index,
and the learned model a run uses. The reading edge; coverage.py itself is pure."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ragloupe.config import Settings
from ragloupe.evaluate import coverage as C
from ragloupe.evaluate.goldset import GoldSet

FLOAT_DIGITS = 4  # as run reports round (evaluate/runs.py)


def document_layouts(settings: Settings, doc_ids: Iterable[str], store) -> dict[str, C.DocumentLayout]:
    """The layout of every document of ``doc_ids`` the index holds (manifest pages, chunks)."""
    from ragloupe.index.manifest import Manifest

    manifest = Manifest.load(settings)
    layouts = {}
    for doc_id in sorted(set(doc_ids)):
        entry = manifest.documents.get(doc_id)
        if entry is None or entry.state != "complete":
            continue
        chunks = store.all_chunks(where={"doc_id": doc_id})
        if chunks:
            layouts[doc_id] = C.layout_from_chunks(doc_id, len(entry.pages), chunks,
                                                   [p.page for p in entry.pages if p.tables])
    return layouts


def model_in_force(settings: Settings, mode: str, goldsets: Sequence[GoldSet]) -> list[C.ModelWeights]:
    """The learned model search() fuses with under ``mode`` and ``settings`` (none when it does not,
    or when the model does not fit the settings and search() falls back)."""
    from ragloupe.retrieve import learned
    from ragloupe.retrieve.search import parse_mode

    if settings.fusion != "learned" or not parse_mode(mode).learnable:
        return []
    try:
        model = learned.read(settings)
    except learned.LearnedModelMismatch:
        return []
    if learned.mismatches(model, settings):  # search() stands it aside for the fallback fusion
        return []
    return [model_weights(f"the learned model in force ({learned.model_path(settings).name})", model, goldsets)]


def model_weights(label: str, model, goldsets: Sequence[GoldSet]) -> C.ModelWeights:
    """A learned model's weights for the audit, with the audited gold sets it was trained on."""
    from ragloupe.retrieve import learned

    trained = set(model.fingerprint.get("goldsets", {}).values())
    return C.ModelWeights(label, learned.feature_weights(model), model.units,
                          tuple(g.name for g in goldsets if g.sha256 in trained))


def coverage_report(goldsets: Sequence[GoldSet], settings: Settings, store, mode: str | None = None,
                    models: Sequence[C.ModelWeights] = (), adapter_retrained: bool = False) -> dict:
    """The coverage section of a run or tuning report; ``mode`` adds the model in force under it.
    ``adapter_retrained``: tune retrained the query adapter in its folds (evaluate/tune_adapter.py)."""
    layouts = document_layouts(settings, (q.doc_id for g in goldsets for q in g.queries), store)
    in_force = model_in_force(settings, mode, goldsets) if mode else []
    report = C.audit(goldsets, layouts, [*in_force, *models])
    # Not a coverage finding: shown beside them, under its own words (coverage_text, coverage_view).
    report["query_adapter"] = adapter_in_sample(settings, mode, goldsets, adapter_retrained)
    report["embedding_model"] = model_in_sample(settings, mode, goldsets)
    return _rounded(report)


def adapter_in_sample(settings: Settings, mode: str | None, goldsets: Sequence[GoldSet],
                      retrained: bool = False) -> dict:
    """How many of the gold questions the query adapter dense searches with learned from (none
    when ``mode`` runs no dense engine of ours): their figures are in-sample, and say so, unless
    ``retrained`` (tune scored them with adapters retrained without the held-out document's)."""
    from ragloupe.retrieve import query_adapter
    from ragloupe.retrieve.modes import runs_dense

    questions = [q.question for g in goldsets for q in g.queries]
    adapter = query_adapter.in_force(settings)[0] if mode and runs_dense([mode]) else None
    n = query_adapter.learned_from(adapter, questions) if adapter else 0
    warning = note = ""
    if n and retrained:
        note = (f"{n} of these {len(questions)} questions are among those the {adapter.source} query adapter "
                "learned from, so tune scored every configuration that searches with it by an adapter of its "
                "recipe retrained in each fold, without the held-out document's questions")
    elif n:
        warning = (f"{n} of these {len(questions)} questions are among those the {adapter.source} query adapter "
                   "learned from: dense and the default score them in-sample, higher than a new question "
                   "would be (RAGLOUPE_QUERY_ADAPTER=off scores them without it)")
    return {"source": adapter.source if adapter else None, "learned_from": n, "questions": len(questions),
            "warning": warning, "note": note}


def model_in_sample(settings: Settings, mode: str | None, goldsets: Sequence[GoldSet]) -> dict:
    """How many of the gold questions the default embedding model (config.TUNED_MODEL) was
    fine-tuned on, when it is the model in force or the one `ragloupe adapt` started from, and
    ``mode`` runs dense: their figures are in-sample, and say so. Tune cannot retrain the model in
    its folds (a fold's training takes a quarter of an hour), so its figures on them are too."""
    from ragloupe.config import BUNDLED_MODEL, TUNED_MODEL, adapted_average
    from ragloupe.index import tuned_model
    from ragloupe.retrieve.modes import runs_dense
    from ragloupe.retrieve.query_adapter import question_digest

    questions = [q.question for g in goldsets for q in g.queries]
    average = adapted_average(settings) if mode and runs_dense([mode]) else None
    tuned = average is not None and TUNED_MODEL in (settings.embedding_model, average[0])
    n = sum(question_digest(q) in tuned_model.questions_read() for q in questions) if tuned else 0
    model = TUNED_MODEL.removeprefix("bundled:")
    whose = (f"the embedding model {model}" if settings.embedding_model == TUNED_MODEL
             else f"{model}, the model this index's model was adapted from,")
    warning = (f"{n} of these {len(questions)} questions are among the gold questions {whose} was fine-tuned "
               "on: dense and the default score them in-sample, higher than a new question would be (an index "
               f"built with RAGLOUPE_EMBEDDING_MODEL={BUNDLED_MODEL} scores them without it)") if n else ""
    return {"model": settings.embedding_model if tuned else None, "learned_from": n,
            "questions": len(questions), "warning": warning}


def _rounded(value: Any) -> Any:
    """Floats to FLOAT_DIGITS, tuples as lists: the report's own spelling, so the section reads
    back from a report file as it was built."""
    if isinstance(value, float):
        return round(value, FLOAT_DIGITS) + 0.0
    if isinstance(value, Mapping):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    return value


def fitted_model(trainer, n_questions: int, goldsets: Sequence[GoldSet]) -> C.ModelWeights:
    """The learned configuration tune selects, fitted on all its questions: the model it would ship."""
    import numpy as np

    model = trainer.fit(np.arange(n_questions), {g.name: g.sha256 for g in goldsets})
    return model_weights(f"the learned model tune selects (fitted on all {n_questions} questions)",
                         model, goldsets)
