"""Indexing in a background thread, so the app is up at once and every tab sees the progress.

`make run` starts the app before the demo corpus is indexed: the entry point
starts an index job when the index is empty, and the Index page runs its
re-indexes as jobs too. A job lives in one registry per server process
(st.cache_resource), keyed by the index it writes, so a second browser tab
sees the job another tab started instead of starting its own, and leaving
the Index page does not stop a run. The indexer's own lock still guards
against a second process (the CLI) writing the same index.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.logs import log_exception
from ragloupe.ui.cache import current_settings, store_key
from ragloupe.ui.guard import app_message


# How a run's bar is shared out: hashing the files (planning), then per file reading it (text, OCR,
# tables: done when its embedding starts), embedding it (moves slice by slice) and writing it; then
# one file's share per unchanged document whose sentence vectors the run encodes after the files.
PLANNING_SHARE = 0.05
READ_SHARE, EMBED_SHARE = 0.3, 0.6


@dataclass
class IndexJob:
    """One indexing run in a thread, and how far it got."""

    paths: list[str] | None
    rebuild: bool = False
    started: float = field(default_factory=time.monotonic)
    stage: str = "starting"
    path: str = ""
    done: int = 0
    total: int = 0
    fraction: float = 0.0  # of the whole run; never goes back
    file_part: float = 0.0  # of the current file's embedding (or document's sentences)
    files: int = 0  # the run's files to read
    later: int = 0  # the unchanged documents whose sentence vectors it encodes after them
    finished: bool = False
    error: str | None = None
    summary: object | None = None

    def update(self, step) -> None:
        """The indexer's progress callback: the planning share, then files done plus the share of the
        current file (reading it, embedding it slice by slice, writing it), then the documents whose
        sentence vectors are encoded after the files, each a file's share; so the bar moves from the
        start instead of sitting at 0% while the files are hashed and the first one is read."""
        if step.stage == "hash":
            self.stage = "planning"
            if step.total:
                self._advance(PLANNING_SHARE * (int(step.done) + 1) / int(step.total))
            return
        self.stage, self.path = step.stage, str(step.path or "")
        self.done, self.total = int(step.done), int(step.total)
        self.file_part = float(getattr(step, "part", 0.0) or 0.0)
        if step.stage == "done":
            self.fraction = 1.0
            return
        within_file = {"ingest": 0.0, "embed": READ_SHARE + EMBED_SHARE * self.file_part,
                       "write": READ_SHARE + EMBED_SHARE}
        if step.stage in within_file:
            self.files, self.later = self.total, int(getattr(step, "later", 0) or 0)
            units, of = self.done + within_file[step.stage], self.total + self.later
        elif step.stage == "sentences":
            units, of = self.files + self.done + self.file_part, self.files + self.total
        else:
            return
        if of:
            self._advance(min(PLANNING_SHARE + (1 - PLANNING_SHARE) * units / of, 0.99))

    def _advance(self, fraction: float) -> None:
        self.fraction = max(self.fraction, fraction)  # never goes back

    def describe(self) -> str:
        """'embed 2 of 3 · Grampian-2021-2022.pdf · 37% of this file · 1 min 10 s', or for an unchanged
        document: 'encoding sentence vectors of document 1 of 4 · notes · 1 min 12 s'."""
        elapsed = time.monotonic() - self.started
        if self.finished:
            return f"finished in {_duration(elapsed)}"
        if not self.total:
            return f"{self.stage} · {_duration(elapsed)}"
        position = f"{min(self.done + 1, self.total)} of {self.total}"
        if self.stage == "sentences":
            parts = [f"encoding sentence vectors of document {position}"]
        else:
            words = {"ingest": "reading", "embed": "embedding", "write": "writing"}
            parts = [f"{words.get(self.stage, self.stage)} file {position}"]
        if self.path:
            parts.append(Path(self.path).name)
        if self.stage == "embed":
            parts.append(f"{self.file_part:.0%} of this file embedded")
        elif self.stage == "sentences" and self.file_part:
            parts.append(f"{self.file_part:.0%} of its sentences encoded")
        parts.append(_duration(elapsed))
        return " · ".join(parts)


def _duration(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


@st.cache_resource(show_spinner=False)
def _registry() -> tuple[dict[str, IndexJob], threading.Lock]:
    return {}, threading.Lock()


def current_job(settings: Settings | None = None) -> IndexJob | None:
    """The job of this index started in this server process (running or finished), if any."""
    jobs, _lock = _registry()
    return jobs.get(store_key(settings or current_settings()))


def running_job(settings: Settings | None = None) -> IndexJob | None:
    job = current_job(settings)
    return job if job is not None and not job.finished else None


def start_job(settings: Settings, paths: list[str] | None, rebuild: bool = False) -> IndexJob:
    """Start indexing ``paths`` in a thread, or return the job already running on this index."""
    from ragloupe.index.pipeline import run_index
    from ragloupe.workspace import save_search_copies

    jobs, lock = _registry()
    key = store_key(settings)
    with lock:
        job = jobs.get(key)
        if job is not None and not job.finished:
            return job
        job = IndexJob(paths, rebuild)
        jobs[key] = job

    def work() -> None:
        try:
            job.summary = run_index(paths, settings, rebuild=rebuild, progress=job.update,
                                    save_derived=save_search_copies)
        except RagloupeError as exc:
            job.error = app_message(exc)
        except Exception as exc:  # a bug: the traceback goes to the log, the page says where
            job.error = (f"indexing failed ({type(exc).__name__}); the details are in "
                         f"{log_exception(exc)}")
        finally:
            job.fraction = 1.0
            job.finished = True

    threading.Thread(target=work, name="ragloupe-index", daemon=True).start()
    return job


def forget_job(settings: Settings) -> None:
    """Drop a finished job's record (its summary no longer describes the index)."""
    jobs, lock = _registry()
    with lock:
        job = jobs.get(store_key(settings))
        if job is not None and job.finished:
            del jobs[store_key(settings)]


def wait_for_job(job: IndexJob) -> None:
    """Follow a job from the page that started it: a bar that moves within each file.

    Leaving the page ends this wait, not the job: it goes on in its thread and
    every page shows its progress.
    """
    bar = st.progress(job.fraction, text=f"Indexing: {job.describe()}")
    while not job.finished:
        time.sleep(0.4)
        bar.progress(job.fraction, text=f"Indexing: {job.describe()}")


def index_is_empty(settings: Settings) -> bool:
    from ragloupe.index.manifest import Manifest

    try:
        return not Manifest.load(settings).complete()
    except RagloupeError:
        return False  # a broken manifest is for the Index page to report, not to overwrite


def start_first_run_index(paths: list[str]) -> None:
    """On a fresh clone: index the demo corpus in the background when the index is empty.

    Asked once per server process; a later empty index (the user cleared it)
    is left empty.
    """
    jobs, lock = _registry()
    settings = current_settings()
    with lock:
        if "_first_run_checked" in jobs:
            return
        jobs["_first_run_checked"] = IndexJob(None, finished=True)
    existing = [p for p in paths if Path(p).exists()]
    if existing and index_is_empty(settings):
        start_job(settings, existing)


def show_job(job: IndexJob) -> None:
    """A progress bar that follows the job within each file, redrawn every second until it ends."""

    @st.fragment(run_every=1.0)
    def progress() -> None:
        if job.finished:
            st.rerun()  # the whole page, now that the index is there
        st.progress(job.fraction, text=f"Indexing: {job.describe()}")

    progress()


def index_notice() -> None:
    """For a page that needs the index: while it is being built, say so and stop the page."""
    from ragloupe.index.lock import lock_holder

    settings = current_settings()
    job = running_job(settings)
    if job is not None:
        st.info("The index is being built (a first start indexes the demo corpus: about 5 "
                "minutes on 2 cores). This page opens by itself when it is done; the Index and "
                "Run info pages work meanwhile.")
        show_job(job)
        st.stop()
    holder = lock_holder(settings)
    if holder:
        who = f"process {holder}" if holder > 0 else "another process"
        st.info(f"Another indexer ({who}) is writing this index: results may change when it "
                "finishes.")
