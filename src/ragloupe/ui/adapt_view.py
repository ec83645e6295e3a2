"""The Index page's "Adapt the model to this corpus" section: `ragloupe adapt` in a background
thread with a progress bar, and the before/after comparison when it ends; and its "Learn a query
adapter from your gold sets" section, `ragloupe adapt --queries` the same way.

A job lives in one registry per server process (st.cache_resource), keyed by the index, like
the index jobs of ui/background.py: another tab sees the run, and leaving the page does not
stop it. The decision itself (keep the adapted model or swap the old one back) is made by
ragloupe.adapt; this module only starts it and shows what it says.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from ragloupe.adapt import compare
from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.evaluate.stats import p_value_text
from ragloupe.logs import log_exception
from ragloupe.ui.cache import store_key
from ragloupe.ui.guard import app_message

# Where each stage starts and ends on the bar (training is most of the time).
# The sentence stages run only when the gold documents lack their sentence vectors for the model
# (adapt/run.py): a newly adapted model has none.
_STAGE_SPAN = {"pairs": (0.0, 0.03), "draft": (0.0, 0.03), "sentences-before": (0.03, 0.05),
               "before": (0.05, 0.08), "train": (0.08, 0.7), "reembed": (0.7, 0.85),
               "sentences-after": (0.85, 0.93), "after": (0.93, 0.97), "decide": (0.97, 0.99), "done": (1.0, 1.0)}
_STAGE_WORDS = {"pairs": "making pairs from the corpus", "draft": "drafting questions with the embedded LLM",
                "sentences-before": "encoding the gold documents' sentence vectors",
                "before": "searching the gold sets (before)",
                "train": "training", "reembed": "re-embedding the index",
                "sentences-after": "encoding the gold documents' sentence vectors with the adapted model",
                "after": "searching the gold sets (after)", "decide": "deciding", "done": "done"}

# `ragloupe adapt --queries` (adapt/query_run.py): the folds are most of the time.
_QUERY_SPAN = {"questions": (0.0, 0.05), "before": (0.05, 0.15), "folds": (0.15, 0.95), "decide": (0.95, 0.96),
               "train": (0.96, 0.99), "done": (1.0, 1.0)}
_QUERY_WORDS = {"questions": "embedding the gold questions", "before": "searching the gold sets (before)",
                "folds": "learning and testing on each fold", "decide": "deciding",
                "train": "learning the adapter from every question", "done": "done"}


@dataclass
class AdaptJob:
    """One `ragloupe adapt` (or revert) run in a thread, and how far it got."""

    revert: bool = False
    started: float = field(default_factory=time.monotonic)
    stage: str = "starting"
    detail: str = ""
    fraction: float = 0.0
    finished: bool = False
    error: str | None = None
    outcome: object | None = None  # adapt.run.AdaptOutcome (query_run.QueryAdaptOutcome), or a revert's dict
    queries: bool = False  # `ragloupe adapt --queries`

    def update(self, step) -> None:
        spans = _QUERY_SPAN if self.queries else _STAGE_SPAN
        low, high = spans.get(step.stage, (self.fraction, self.fraction))
        within = step.done / step.total if step.total else 0.0
        self.stage, self.detail = step.stage, step.detail
        if step.stage == "draft" and step.total:  # minutes of the LLM: say how far it got
            self.detail = f"{step.done}/{step.total} pages"
        if step.stage.startswith("sentences") and step.total:
            self.detail = f"{step.done} of {step.total} documents"
        self.fraction = max(self.fraction, min(low + (high - low) * within, 1.0))

    def describe(self) -> str:
        minutes, seconds = divmod(int(time.monotonic() - self.started), 60)
        words = _QUERY_WORDS if self.queries else _STAGE_WORDS
        detail = f" · {self.detail}" if self.detail and not self.queries and self.stage in (
            "train", "draft", "sentences-before", "sentences-after") else ""
        return f"{words.get(self.stage, self.stage)}{detail} · {minutes} min {seconds} s"


@st.cache_resource(show_spinner=False)
def _registry() -> tuple[dict[str, AdaptJob], threading.Lock]:
    return {}, threading.Lock()


def _start(key: str, job: AdaptJob, doing: str, run) -> AdaptJob:
    """Run ``run(job.update)`` in a thread as ``job``, registered under ``key``, or return the job
    already going under it; ``doing`` names the work in the error a bug leaves."""
    jobs, lock = _registry()
    with lock:
        going = jobs.get(key)
        if going is not None and not going.finished:
            return going
        jobs[key] = job

    def work() -> None:
        try:
            job.outcome = run(job.update)
        except RagloupeError as exc:
            job.error = app_message(exc)
        except Exception as exc:  # a bug: the traceback goes to the log, the page says where
            job.error = f"{doing} failed ({type(exc).__name__}); the details are in {log_exception(exc)}"
        finally:
            job.fraction, job.finished = 1.0, True

    threading.Thread(target=work, name="ragloupe-adapt", daemon=True).start()
    return job


def start_adapt(settings: Settings, goldsets: list, keep_untested: bool, revert: bool = False) -> AdaptJob:
    """Start adapting (or reverting) in a thread, or return the run already going on this index."""
    from ragloupe.adapt import run
    from ragloupe.workspace import Workspace

    def adapt(update):
        return run.revert(settings, update) if revert else \
            run.adapt(Workspace.open(settings), goldsets, update, keep_untested=keep_untested)

    return _start(store_key(settings), AdaptJob(revert=revert), "adapting", adapt)


def comparison_frame(comparison: dict) -> pd.DataFrame:
    """One row per gold set (then all questions): each measure before and after, and its p-value."""
    rows = []
    for name, row in comparison.items():
        line = {"gold set": name, "questions": row["n"]}
        for m in compare.MEASURES:
            label = compare.LABELS[m]
            line[f"{label} before"], line[f"{label} after"] = row["before"][m], row["after"][m]
            line[f"{label} p"] = p_value_text(row["p"][m])
        rows.append(line)
    return pd.DataFrame(rows)


def adapt_section(settings: Settings, busy: bool) -> None:
    """The section: what adapting does, the button, the progress, and the last outcome."""
    from ragloupe.evaluate.usersets import list_user_goldsets

    st.header("Adapt the model to this corpus")
    adopted = settings.sources.get("embedding_model") == "adapted"
    st.caption("Fine-tunes the embedding model on questions cut from your documents' own text "
               "(a sentence for the rest of its passage, a heading for its section, a table's row "
               "and column labels, a record's title), re-embeds the index, and keeps the new model "
               "only if your gold sets find their pages better with it (Hit@1 not lower on any "
               "set, MRR higher overall); otherwise the index is put back as it was. No gold "
               "question is trained on. Takes minutes: see docs/adapt.md.")
    if adopted:
        st.info(f"This index is embedded by an adapted model: {settings.embedding_model}")
    jobs, _lock = _registry()
    job = jobs.get(store_key(settings))
    if job is not None and not job.finished:
        _follow(job, "Adapting")
        return
    goldsets = list_user_goldsets(settings)
    st.write(f"Gold sets to decide on: {len(goldsets)}"
             + (f" ({', '.join(p.stem for p in goldsets)})" if goldsets else
                " - make one on the Gold sets page, or the model is trained but not used"))
    keep_untested = st.checkbox("Use the adapted model even without a gold set to compare on",
                                key="adapt_keep_untested") if not goldsets else False
    left, right = st.columns(2)
    if left.button("Adapt the model", key="adapt_start", disabled=busy):
        _follow(start_adapt(settings, goldsets, keep_untested), "Adapting")
        st.rerun()
    if adopted and right.button("Go back to the configured model", key="adapt_revert", disabled=busy):
        _follow(start_adapt(settings, [], False, revert=True), "Adapting")
        st.rerun()
    if job is not None and job.finished:
        _show_outcome(job)


def _follow(job: AdaptJob, doing: str) -> None:
    @st.fragment(run_every=1.0)
    def progress() -> None:
        if job.finished:
            st.rerun()
        st.progress(job.fraction, text=f"{doing}: {job.describe()}")

    progress()


def _show_outcome(job: AdaptJob) -> None:
    if job.error:
        st.error(job.error)
        return
    outcome = job.outcome
    if isinstance(outcome, dict):
        st.success(f"The index is embedded by {outcome['reverted_to']} again.")
        return
    (st.success if outcome.kept else st.warning)(("Kept: " if outcome.kept else "Not kept: ") + outcome.reason)
    from ragloupe.adapt.run import training_summary  # as start_adapt imports the run module

    training = outcome.training
    st.caption(f"Model {outcome.model}: {training_summary(training)}, on "
               + ", ".join(f"{v} {k}" for k, v in outcome.pairs.items()) + " pairs.")
    if outcome.comparison:
        st.dataframe(comparison_frame(outcome.comparison), hide_index=True, width="stretch")


def _queries_key(settings: Settings) -> str:
    return store_key(settings) + " queries"


def start_query_adapter(settings: Settings, goldsets: list, revert: bool = False) -> AdaptJob:
    """Start `ragloupe adapt --queries` (or its revert) in a thread, or return the one going on this index."""
    from ragloupe.adapt import query_run
    from ragloupe.workspace import Workspace

    def learn(update):
        return query_run.revert_queries(settings) if revert else \
            query_run.adapt_queries(Workspace.open(settings), goldsets, update)

    return _start(_queries_key(settings), AdaptJob(revert=revert, queries=True), "learning a query adapter", learn)


def query_adapter_section(settings: Settings, busy: bool) -> None:
    """The section: what learning a query adapter does, the button, the progress, the last outcome."""
    from ragloupe.evaluate.usersets import list_user_goldsets

    st.header("Learn a query adapter from your gold sets")
    own = settings.sources.get("query_adapter") == "adopted"
    st.caption("Learns a map on the question's embedding from your gold questions and the pages they "
               "name, so that dense searches nearer the passages that answer them. Each question is "
               "scored by an adapter learned without it (5 folds), against what dense searches with "
               "now; the adapter is kept for this index only if Hit@1 is not lower on any gold set and "
               "MRR is higher overall. Nothing is re-embedded. It needs many questions: in ragloupe's "
               "measurements a few dozen a document gained nothing, about 200 a document did (docs/adapt.md).")
    if own:
        st.info(f"Dense searches with this index's own query adapter: {settings.query_adapter}")
    jobs, _lock = _registry()
    job = jobs.get(_queries_key(settings))
    if job is not None and not job.finished:
        _follow(job, "Learning a query adapter")
        return
    goldsets = list_user_goldsets(settings)
    st.write(f"Gold sets to learn from: {len(goldsets)}"
             + (f" ({', '.join(p.stem for p in goldsets)})" if goldsets else " - make one on the Gold sets page"))
    left, right = st.columns(2)
    if left.button("Learn a query adapter", key="adapt_queries_start", disabled=busy or not goldsets):
        _follow(start_query_adapter(settings, goldsets), "Learning a query adapter")
        st.rerun()
    if own and right.button("Stop using this index's query adapter", key="adapt_queries_revert", disabled=busy):
        _follow(start_query_adapter(settings, [], revert=True), "Learning a query adapter")
        st.rerun()
    if job is not None and job.finished:
        _show_query_outcome(job)


def _show_query_outcome(job: AdaptJob) -> None:
    if job.error:
        st.error(job.error)
        return
    outcome = job.outcome
    if isinstance(outcome, dict):
        st.success(f"Dense searches with RAGLOUPE_QUERY_ADAPTER={outcome['reverted_to']} again.")
        return
    (st.success if outcome.kept else st.warning)(("Kept: " if outcome.kept else "Not kept: ") + outcome.reason)
    if outcome.overridden_by:
        st.warning(f"Saved for this index, but {outcome.overridden_by} wins while it is set: unset it to "
                   "search with the index's own query adapter.")
    left_out = "".join(f"; {n} left out: {why}" for why, n in outcome.skipped.items())
    st.caption(f"{outcome.questions} gold questions from {len(outcome.goldsets)} gold set(s){left_out}. Before: "
               f"RAGLOUPE_QUERY_ADAPTER={outcome.baseline}; after: each question searched with an adapter "
               f"learned from the other {outcome.folds - 1} of {outcome.folds} folds, mode {outcome.mode}, "
               "each question in its own document.")
    st.dataframe(comparison_frame(outcome.comparison), hide_index=True, width="stretch")
