"""Indexing over HTTP: uploads, incremental re-index jobs and their status.

POST /api/v1/docs/upload saves one file into raw_dir (only when
RAGLOUPE_API_UPLOAD=true; checked before saving: size, name, a %PDF- header
or a records validation) and starts an incremental re-index. POST
/api/v1/index starts one without an upload. Either answers 202 with a job
id; GET /api/v1/jobs/{job_id} says how it goes.

One indexing job at a time: while one runs, or while another process holds
the index lock (index/lock.py), a new one is refused with 409 and the reason.
The job itself runs pipeline.run_index under that lock, in a thread of this
server; its result or its one-line error is kept on the job.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ragloupe.api.schemas import UploadRequest
from ragloupe.config import Settings
from ragloupe.errors import (IndexBusy, RagloupeError, UnknownJob, UnsupportedFile, UploadRefused,
                             UploadTooLarge)
from ragloupe.logs import log_exception

router = APIRouter(tags=["indexing"])


@dataclass
class Job:
    job_id: str
    kind: str  # "reindex" | "upload"
    state: str = "queued"  # queued | running | done | failed
    created_at: str = ""
    finished_at: str = ""
    detail: str = ""  # what started it: the uploaded file's name
    progress: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] | None = None  # IndexSummary.as_dict() when done
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class IndexJobs:
    """The jobs this server started, newest last; at most one running."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)

    def running(self) -> Job | None:
        return next((j for j in self._jobs.values() if j.state in {"queued", "running"}), None)

    def refuse_if_busy(self) -> None:
        """IndexBusy with the reason when a job of ours or another indexer is at work."""
        from ragloupe.index.lock import lock_holder

        current = self.running()
        if current is not None:
            raise IndexBusy(f"indexing job {current.job_id} is still {current.state}; "
                            f"wait for it (GET /api/v1/jobs/{current.job_id}), then try again")
        holder = lock_holder(self.settings)
        if holder is not None:
            who = f"pid {holder}" if holder > 0 else "another process"
            raise IndexBusy(f"another indexer is running ({who}) on {self.settings.path('index_dir')}; "
                            "wait for it to finish, then try again")

    def start(self, kind: str, detail: str = "") -> Job:
        with self._lock:
            self.refuse_if_busy()
            job = Job(f"job-{next(self._ids)}-{int(time.time())}", kind, created_at=_now(), detail=detail)
            self._jobs[job.job_id] = job
        threading.Thread(target=self._run, args=(job,), name=job.job_id, daemon=True).start()
        return job

    def get(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise UnknownJob(f"no indexing job {job_id!r} on this server; GET /api/v1/jobs lists them")
        return job

    def all(self) -> list[Job]:
        return list(self._jobs.values())

    def _run(self, job: Job) -> None:
        from ragloupe.index.pipeline import run_index
        from ragloupe.workspace import save_search_copies

        job.state = "running"

        def progress(step: Any) -> None:
            job.progress = {"stage": step.stage, "done": step.done, "total": step.total}

        try:
            job.summary = run_index(None, self.settings, progress=progress,
                                    save_derived=save_search_copies).as_dict()
            job.state = "done"
        except RagloupeError as exc:
            job.state, job.error = "failed", str(exc)
        except Exception as exc:  # a bug: traceback to the log, one line on the job
            where = log_exception(exc, self.settings)
            job.state, job.error = "failed", f"internal error ({type(exc).__name__}); details in {where}"
        finally:
            job.finished_at = _now()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@router.post("/api/v1/docs/upload", status_code=202)
def upload(body: UploadRequest, request: Request) -> JSONResponse:
    """Save one .pdf / .html / .docx / .csv / .jsonl into the raw folder and start an incremental re-index."""
    # The app's own upload rules (pure code, no Streamlit): a plain name inside raw_dir, and the
    # content checked (PDF header, records validation) before anything is written.
    from ragloupe.ingest.uploads import sanitise_filename, save_upload

    resources = request.app.state.resources
    settings = resources.settings
    if not settings.api_upload:
        raise UploadRefused("upload is off on this server: start it with RAGLOUPE_API_UPLOAD=true")
    try:
        data = base64.b64decode(body.content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise UnsupportedFile("content_base64: not valid base64") from None
    if len(data) > settings.max_upload_mb * 1024 * 1024:
        raise UploadTooLarge(f"{body.filename!r} is {len(data) / 2**20:.1f} MB, over the "
                             f"{settings.max_upload_mb} MB limit (RAGLOUPE_MAX_UPLOAD_MB)")
    name = sanitise_filename(body.filename)
    resources.jobs.refuse_if_busy()  # before saving, so a refused upload leaves nothing behind
    path = save_upload(name, data, settings)
    job = resources.jobs.start("upload", detail=path.name)
    return JSONResponse({"job_id": job.job_id, "status": job.state, "saved_as": path.name,
                         "bytes": len(data), "job_url": f"/api/v1/jobs/{job.job_id}"}, status_code=202)


@router.post("/api/v1/index", status_code=202)
def reindex(request: Request) -> JSONResponse:
    """Start an incremental re-index of the folders indexed before plus the raw folder."""
    job = request.app.state.resources.jobs.start("reindex")
    return JSONResponse({"job_id": job.job_id, "status": job.state,
                         "job_url": f"/api/v1/jobs/{job.job_id}"}, status_code=202)


@router.get("/api/v1/jobs")
def jobs(request: Request) -> dict[str, Any]:
    return {"jobs": [j.as_dict() for j in request.app.state.resources.jobs.all()]}


@router.get("/api/v1/jobs/{job_id}")
def job_status(job_id: str, request: Request) -> dict[str, Any]:
    return request.app.state.resources.jobs.get(job_id).as_dict()
