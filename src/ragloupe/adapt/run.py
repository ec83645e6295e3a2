"""`ragloupe adapt`: fine-tune the embedding model on the indexed corpus, re-embed the index with
it, and keep it only when the user's gold questions say it finds their pages better.

Under the index lock, in order:

1. pairs: pseudo-queries cut from the index's own chunks, with BM25 hard negatives
   (adapt/pairs.py). Only document text: no gold question is ever trained on;
2. before: the gold sets searched as the index stands, in the mode in force (their documents'
   sentence vectors encoded first when the index lacks them: stage "sentences-before");
3. train: the configured model (the bundled MiniLM by default) fine-tuned on the pairs
   (adapt/training.py) and saved under <index_dir>/models/<name>/ with training.json, its
   training record. The name hashes the corpus and every training input, so the same corpus
   and settings reuse the saved model instead of training it again;
4. re-embed: every chunk into a scratch collection with the adapted model, swapped in at once
   (index/swap.py); the manifest and <index_dir>/models/adopted.json then say which model
   embedded the index, and Settings reads the latter (config.adopted_model_file);
5. after: the same gold sets searched again, their documents' sentence vectors for the adapted
   model encoded first (stage "sentences-after", else the first searches would stop to encode
   them with nothing shown); the paired comparison and the rule in
   adapt/compare.py decide. A loss swaps the previous collection back: the index, its model
   and its files are as they were.

The whole record (training, pairs by kind, before/after table, decision, seconds per stage)
is written to <index_dir>/models/<name>.adapt.json and returned.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from ragloupe.adapt import compare, drafts, pairs as P, training
from ragloupe.config import ADAPTED_MODELS_DIR, Settings, adopted_model_file
from ragloupe.errors import AdaptError
from ragloupe.evaluate.goldset import load_goldsets
from ragloupe.evaluate.runs import searched_documents
from ragloupe.index import swap
from ragloupe.index.embedder import get_embedder, resolve_model_path
from ragloupe.index.lock import index_lock
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import save_for_searches
from ragloupe.index.remote_embedder import BACKENDS as SERVER_BACKENDS
from ragloupe.index.store import open_store
from ragloupe.retrieve.modes import runs_dense
from ragloupe.workspace import Workspace, save_search_copies

RECORD_NAME = "training.json"
FORMAT = 1  # bump when what a model name hashes changes meaning


@dataclass(frozen=True)
class AdaptProgress:
    """One step of an adaptation, for a progress bar."""

    # "pairs" | "draft" | "sentences-before" | "before" | "train" | "reembed" | "sentences-after" | "after"
    # | "decide" | "done"
    stage: str
    done: int = 0
    total: int = 0
    detail: str = ""


ProgressCallback = Callable[[AdaptProgress], None]


@dataclass
class AdaptOutcome:
    """What an adaptation did and found; ``as_dict`` is the record written beside the model."""

    model: str  # the adapted model's directory name under <index_dir>/models
    model_dir: str
    kept: bool
    reason: str
    source_model: str
    mode: str
    goldsets: list[str]
    pairs: dict[str, int]
    training: dict
    comparison: dict
    reused_model: bool = False
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def pair_rules(settings: Settings) -> P.PairRules:
    kinds = tuple(k.strip() for k in settings.adapt_pair_kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in P.KINDS]
    if unknown or not kinds:
        raise AdaptError(f"RAGLOUPE_ADAPT_PAIR_KINDS={settings.adapt_pair_kinds!r}: use some of "
                         f"{', '.join(P.KINDS)}")
    return P.PairRules(kinds=kinds, hard_negatives=settings.adapt_hard_negatives, seed=settings.adapt_seed,
                       bm25_misses_only=settings.adapt_bm25_misses_only)


def train_config(settings: Settings) -> training.TrainConfig:
    return training.TrainConfig(batch_size=settings.adapt_batch_size, max_steps=settings.adapt_max_steps,
                                max_seconds=settings.adapt_max_seconds,
                                learning_rate=settings.adapt_learning_rate, seed=settings.adapt_seed,
                                max_seq_length=settings.adapt_max_tokens,
                                threads=settings.encoder_threads(), merge_weight=settings.adapt_merge_weight)


def source_model(settings: Settings) -> str:
    """The model adaptation starts from: the configured one, not a model adopted earlier."""
    if settings.sources.get("embedding_model") == "adapted":
        return json.loads(adopted_model_file(settings).read_text(encoding="utf-8"))["source_model"]
    return settings.embedding_model


def adapt(workspace: Workspace, goldsets: Sequence[str | Path], progress: ProgressCallback | None = None,
          keep_untested: bool = False) -> AdaptOutcome:
    """Adapt the model of the index the face's ``workspace`` is open on (see the module docstring).

    ``goldsets``: the gold set files the decision is made on (evaluate/goldset.py formats).
    With none, the model is trained and saved but not kept unless ``keep_untested``.
    """
    settings = workspace.settings
    say = progress or (lambda step: None)
    seconds: dict[str, float] = {}
    if settings.embedding_backend in SERVER_BACKENDS:
        raise AdaptError(f"adapt fine-tunes a local model; RAGLOUPE_EMBEDDING_BACKEND="
                         f"{settings.embedding_backend} encodes on a server")
    rules, config = pair_rules(settings), train_config(settings)
    with index_lock(settings):
        store = workspace.store
        swap.finish_interrupted(store)
        manifest = _usable_manifest(settings)
        mark = time.perf_counter()
        say(AdaptProgress("pairs"))
        chunks = list(workspace.chunks())
        drafted = []
        if "drafted" in rules.kinds:  # minutes of the embedded LLM, once per corpus content
            drafted = drafts.for_corpus(settings, chunks, store.fingerprint(),
                                        lambda done, total: say(AdaptProgress("draft", done, total)))
        made = P.make_pairs(chunks, workspace.lexical(), rules, drafted)
        seconds["pairs"] = _since(mark)

        mark = time.perf_counter()
        gold_documents = searched_documents(load_goldsets(goldsets), "doc") if goldsets else []
        _encode_sentences(workspace, gold_documents, "sentences-before", say)
        say(AdaptProgress("before", detail=f"{len(goldsets)} gold set(s)"))
        before = _scores(goldsets, settings, workspace)
        seconds["before"] = _since(mark)

        source = source_model(settings)
        name = model_name(store.fingerprint(), source, rules, config)
        model_dir = settings.path("index_dir") / ADAPTED_MODELS_DIR / name
        mark = time.perf_counter()
        reused = (model_dir / RECORD_NAME).is_file()
        record = _read_record(model_dir) if reused else \
            _train_and_save(source, made, rules, config, model_dir, say, store.fingerprint())
        seconds["train"] = _since(mark)
        outcome = AdaptOutcome(
            model=name, model_dir=str(model_dir), kept=False, reason="", source_model=source,
            mode=settings.mode, goldsets=[str(g) for g in goldsets], pairs=P.count_by_kind(made),
            training=record, comparison={}, reused_model=reused, seconds=seconds)
        if not goldsets and not keep_untested:
            outcome.reason = ("no gold set to compare on: the adapted model is saved, not used "
                              "(give gold sets, or --keep-untested to use it anyway)")
            _write_outcome(model_dir.with_name(f"{name}.adapt.json"), outcome)
            say(AdaptProgress("done", detail=outcome.reason))
            return outcome

        adapted_settings = settings.replace(embedding_model=str(model_dir))
        mark = time.perf_counter()
        embedder = get_embedder(adapted_settings)
        scratch = swap.reembed(store, embedder, settings,
                               lambda done, total: say(AdaptProgress("reembed", done, total)))
        previous = _read_adopted(settings)
        displaced = swap.swap_in(store, scratch, adapted_settings, [embedder.backend],
                                 {"model": name, "source_model": source})
        seconds["reembed"] = _since(mark)

        mark = time.perf_counter()
        adapted = workspace.sibling(adapted_settings, store=store, embedder=embedder)
        _encode_sentences(adapted, gold_documents, "sentences-after", say)
        say(AdaptProgress("after", detail=f"{len(goldsets)} gold set(s)"))
        after = _scores(goldsets, adapted_settings, adapted)
        seconds["after"] = _since(mark)

        table = compare.compare(before, after)
        decision = compare.decide(table)
        if not before and keep_untested:
            decision = compare.Decision(True, "no gold set to compare on: kept as asked (--keep-untested)")
        say(AdaptProgress("decide", detail=decision.reason))
        if decision.keep_adapted:
            swap.drop_displaced(store, displaced)
        else:
            back = swap.swap_in(store, displaced, settings, manifest.encoded_with or ["onnx"], previous)
            swap.drop_displaced(store, back)
        _refresh_saved(store, settings if not decision.keep_adapted else adapted_settings)
        outcome.kept, outcome.reason, outcome.comparison = decision.keep_adapted, decision.reason, table
        _write_outcome(model_dir.with_name(f"{name}.adapt.json"), outcome)
    say(AdaptProgress("done", detail=decision.reason))
    return outcome


def training_summary(record: dict) -> str:
    """One sentence on how the model was made, for the CLI and the Index page: the steps, and the
    share of fine-tuned weights it keeps when it was averaged with its source model."""
    said = (f"{record.get('steps', 0)} training steps ({record.get('epochs', 0)} epochs, stopped by "
            f"{record.get('stopped_by', '-')}) in {record.get('seconds', 0)} s")
    weight = record.get("settings", {}).get("merge_weight", 1.0)
    if record.get("merged_from") and weight < 1.0:
        said += (f", then averaged weight by weight: {weight:.0%} the fine-tuned model "
                 f"({record['merged_from']}), {1 - weight:.0%} {record.get('source_model', 'the source model')}")
    return said


def model_name(corpus_fingerprint: str, source: str, rules: P.PairRules, config: training.TrainConfig) -> str:
    """The adapted model's directory name: the same corpus, source model and settings, the same name.
    (A merge weight of 1, the model as trained, and the pair filter off are left out of the key:
    names made before those settings existed stay valid.)"""
    trained = {k: v for k, v in config.as_dict().items()
               if k != "threads" and not (k == "merge_weight" and v == 1.0)}
    pairs = {k: v for k, v in rules.__dict__.items() if not (k == "bm25_misses_only" and not v)}
    key = json.dumps([FORMAT, corpus_fingerprint, source, pairs, trained], sort_keys=True, default=list)
    return f"adapted-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


# --- the stages --------------------------------------------------------------------

def _usable_manifest(settings: Settings) -> Manifest:
    """The index's manifest, when it holds something adaptable in a settled state."""
    manifest = Manifest.load(settings)
    if not manifest.complete():
        raise AdaptError("the index is empty: index documents first (`ragloupe index PATH`)")
    if manifest.pending():
        raise AdaptError("the index has an interrupted run: run `ragloupe index` first to repair it")
    if reason := manifest.stale_reason(settings):
        raise AdaptError(f"{reason}; rebuild it (`ragloupe index --rebuild`) before adapting")
    return manifest


def _scores(goldsets: Sequence[str | Path], settings: Settings, workspace) -> dict:
    """Per gold set, each question's Hit@1, Hit@3 and reciprocal rank, scoped to its document."""
    if not goldsets:
        return {}
    from ragloupe.evaluate.runs import evaluate

    report = evaluate(list(goldsets), mode=settings.mode, scope="doc", write=False, workspace=workspace)
    return compare.per_set_scores(report.data)


def _train_and_save(source: str, made: list[P.Pair], rules: P.PairRules, config: training.TrainConfig,
                    model_dir: Path, say: ProgressCallback, corpus_fingerprint: str) -> dict:
    """Fine-tune the source model and save it with its training record (staged, then renamed).
    With a merge weight below 1, the model as trained is saved under its own name first (or
    reused from there), and the saved one is its average with the source model."""
    from sentence_transformers import SentenceTransformer

    if config.merge_weight < 1.0:
        as_trained = replace(config, merge_weight=1.0)
        trained_dir = model_dir.with_name(model_name(corpus_fingerprint, source, rules, as_trained))
        record = _read_record(trained_dir) if (trained_dir / RECORD_NAME).is_file() else \
            _train_and_save(source, made, rules, as_trained, trained_dir, say, corpus_fingerprint)
        model = SentenceTransformer(str(trained_dir), device="cpu")
        training.merge_weights(model, SentenceTransformer(resolve_model_path(source), device="cpu"),
                               config.merge_weight)
        record = {**record, "settings": config.as_dict(), "merged_from": trained_dir.name,
                  "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        _save(model, record, model_dir)
        return record

    model = SentenceTransformer(resolve_model_path(source), device="cpu")
    result = training.fine_tune(model, made, config,
                                lambda step, total, loss: say(AdaptProgress("train", step, total, f"loss {loss:.3f}")))
    record = {
        "format": FORMAT, "source_model": source, "trained_on": "document text only: pseudo-queries cut "
        "from the indexed chunks (no gold question is read)",
        "pairs": P.count_by_kind(made), "pair_rules": {**rules.__dict__, "kinds": list(rules.kinds)},
        "settings": config.as_dict(), "steps": result.steps, "epochs": result.epochs,
        "stopped_by": result.stopped_by, "loss_curve": result.losses, "seconds": result.seconds,
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    _save(model, record, model_dir)
    return record


def _save(model, record: dict, model_dir: Path) -> None:
    """The model and its record, staged beside ``model_dir`` and renamed into place."""
    staging = model_dir.with_name(f".{model_dir.name}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    model.save(str(staging))
    (staging / RECORD_NAME).write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    shutil.rmtree(model_dir, ignore_errors=True)
    staging.rename(model_dir)


def _read_record(model_dir: Path) -> dict:
    return json.loads((model_dir / RECORD_NAME).read_text(encoding="utf-8"))


def _encode_sentences(workspace, doc_ids: Sequence[str], stage: str, say: ProgressCallback) -> None:
    """The gold documents' sentence vectors for the workspace's model, encoded and saved ahead of
    their searches when the mode in force reads them and they are missing, as a stage of its own:
    one step as each document starts, and one when all are done."""
    if not doc_ids or not runs_dense([workspace.settings.mode]):
        return

    def step(event) -> None:
        if event.stage == "done" or event.part == 0:
            say(AdaptProgress(stage, event.done, event.total, event.path if event.stage != "done" else ""))

    workspace.encode_missing_sentences(doc_ids, progress=step)


def _read_adopted(settings: Settings) -> dict | None:
    try:
        return json.loads(adopted_model_file(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _refresh_saved(store, settings: Settings) -> None:
    """Save the BM25 and the derived views for the index as it now stands (index/pipeline.py does
    the same after a run): a failure only means the first search builds them."""
    try:
        save_for_searches(store, settings, save_search_copies)
    except OSError:
        pass


def _write_outcome(path: Path, outcome: AdaptOutcome) -> None:
    path.write_text(json.dumps(outcome.as_dict(), indent=1, sort_keys=True, default=str), encoding="utf-8")


def _since(mark: float) -> float:
    return round(time.perf_counter() - mark, 1)


def revert(settings: Settings, progress: ProgressCallback | None = None) -> dict:
    """Go back to the configured model: re-embed the index with it (the same swap) and remove the
    adopted-model record. The adapted model's files stay under <index_dir>/models."""
    say = progress or (lambda step: None)
    with index_lock(settings):
        store = open_store(settings)
        swap.finish_interrupted(store)
        _usable_manifest(settings)
        if settings.sources.get("embedding_model") != "adapted":
            raise AdaptError("the index is not embedded by an adapted model: nothing to revert")
        source_settings = settings.replace(embedding_model=source_model(settings))
        embedder = get_embedder(source_settings)
        scratch = swap.reembed(store, embedder, settings,
                               lambda done, total: say(AdaptProgress("reembed", done, total)))
        displaced = swap.swap_in(store, scratch, source_settings, [embedder.backend], None)
        swap.drop_displaced(store, displaced)
        _refresh_saved(store, source_settings)
    say(AdaptProgress("done", detail="reverted"))
    return {"reverted_to": source_settings.embedding_model, "chunks": store.count()}
