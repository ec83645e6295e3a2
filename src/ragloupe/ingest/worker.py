"""The PDF extraction child process: pypdf, pdfminer, OCR and table detection under a
time and a memory limit.

One pathological PDF (a decompression bomb, a content stream pypdf chews on
for minutes) must cost a one-line refusal, not the batch, so pypdf never runs
in the caller's process. It runs in a long-lived child, a fresh interpreter
started with ``subprocess`` (not a fork: the caller may hold torch or Chroma
threads, and multiprocessing's spawn would re-run the caller's main script).

- Memory: the child caps its own address space (RLIMIT_AS) at start-up. A
  file that hits the cap gets a MemoryError inside the child, which reports
  it and exits, so the next file starts a fresh child with its full budget.
- Time: the parent waits at most ``timeout_s`` for each answer, then kills
  the child; the next file starts a fresh one.
- Parent death: the child watches its parent (``_watch_parent``) and exits
  within about a second of it dying, even in the middle of a file, so that a
  killed indexer leaves no orphan chewing on a PDF.
- Cost: a child's start-up (Python and the pypdf import, about 0.2 s) is paid
  once per batch, not once per file.

The protocol is one JSON line each way: the parent writes the request (the path
and the extraction options, see pdf.extract_message), the child
answers {"ok": {...}} or {"error": "reason"}, with "fatal": true when it exits
after answering.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    import resource  # POSIX only; without it there is no memory limit, only the time limit
except ImportError:
    resource = None

# The child imports ragloupe from the same place as this process, installed or not.
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_CHILD_CODE = (f"import sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); "
               "from ragloupe.ingest.worker import serve; serve()")


class WorkerTimeout(Exception):
    """The child did not answer within the time limit (it has been killed)."""


class WorkerDied(Exception):
    """The child ended without answering; str() says how, as far as is known."""


# --------------------------------------------------------------- in the child

# How often the child checks that its parent is still alive, in seconds.
_WATCH_INTERVAL_S = 0.5


def _parent_gone(parent_pid: int, stdin_fd: int) -> bool:
    """True when the process that started this child has ended: the child was
    re-parented (to init or a subreaper), or the write end of its stdin pipe
    closed (POLLHUP), which the parent's death also causes."""
    if os.getppid() != parent_pid:
        return True
    if hasattr(selectors, "PollSelector"):
        import select

        poller = select.poll()
        poller.register(stdin_fd, select.POLLHUP)
        return any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL)
                   for _, event in poller.poll(0))
    return False


def _watch_parent(parent_pid: int, stdin_fd: int) -> None:
    """Exit this process at once when the parent is gone.

    A thread, not PR_SET_PDEATHSIG: that signal fires when the *thread* that
    started the child ends, and the app starts it from short-lived script
    threads. The thread gets the interpreter lock between pypdf's bytecodes,
    so it also ends a child that is busy extracting.
    """
    while not _parent_gone(parent_pid, stdin_fd):
        time.sleep(_WATCH_INTERVAL_S)
    os._exit(0)


def serve() -> None:
    """Child main loop: read a request per line, answer one JSON line per request."""
    import logging
    import warnings

    from ragloupe.ingest.pdf import extract_message

    memory_mb = int(sys.argv[1])
    parent_pid = int(sys.argv[2]) if len(sys.argv) > 2 else os.getppid()
    threading.Thread(target=_watch_parent, args=(parent_pid, sys.stdin.fileno()),
                     name="watch-parent", daemon=True).start()
    if memory_mb > 0 and resource is not None:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        try:
            resource.setrlimit(resource.RLIMIT_AS, (memory_mb * 1024 * 1024, hard))
        except (ValueError, OSError):  # macOS refuses RLIMIT_AS; the time limit still holds
            pass
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns on stderr by default
    warnings.simplefilter("ignore")
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not break the one-line-per-answer protocol
    for line in sys.stdin.buffer:
        message = extract_message(json.loads(line), memory_mb)
        # ASCII JSON: lone surrogates from a broken font map travel as escapes.
        out.write(json.dumps(message).encode("ascii") + b"\n")
        out.flush()
        if message.get("fatal"):  # after a MemoryError the heap is not to be trusted
            return


# --------------------------------------------------------------- in the parent

class ExtractionWorker:
    """A handle on the child process; restarted whenever it dies or is killed."""

    def __init__(self, memory_mb: int):
        self.memory_mb = memory_mb
        self._child: subprocess.Popen | None = None
        self._stderr = None
        self._buffer = b""

    def _start(self) -> subprocess.Popen:
        self.close()  # release what is left of a previous child
        self._stderr = tempfile.TemporaryFile()
        self._buffer = b""
        self._child = subprocess.Popen(
            [sys.executable, "-c", _CHILD_CODE, str(self.memory_mb), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            close_fds=True)
        return self._child

    def request(self, path: str, timeout_s: float) -> dict:
        """Send one path, wait for its answer; WorkerTimeout / WorkerDied otherwise.

        A child that was already running may have died since its last answer
        (killed from outside, say); then the path is sent once more to a
        fresh child, so that only a file that kills a fresh child is refused.
        """
        reused = self._child is not None and self._child.poll() is None
        try:
            return self._ask(self._child if reused else self._start(), path, timeout_s)
        except WorkerDied:
            if not reused:
                raise
        return self._ask(self._start(), path, timeout_s)

    def _ask(self, child: subprocess.Popen, path: str, timeout_s: float) -> dict:
        try:
            child.stdin.write(json.dumps(path).encode("ascii") + b"\n")
            child.stdin.flush()
            message = json.loads(self._read_line(child, time.monotonic() + timeout_s))
        except BrokenPipeError:
            raise WorkerDied(self._death()) from None
        except WorkerTimeout:
            self.close()
            raise
        if message.get("fatal"):  # the child exits after this answer; wait for it here
            self.close()
        return message

    def _read_line(self, child: subprocess.Popen, deadline: float) -> bytes:
        fd = child.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise WorkerTimeout()
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise WorkerDied(self._death())
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _death(self) -> str:
        """How the child ended: its exit status and the last line it wrote to stderr."""
        child = self._child
        try:
            status = child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            status = child.wait()
        self._stderr.seek(0)
        lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        self.close()
        return f"status {status}" + (f": {lines[-1]}" if lines else "")

    def close(self) -> None:
        """Stop the child (killed: it may be stuck in pypdf) and forget it."""
        child, self._child = self._child, None
        if child is None:
            return
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout, self._stderr):
            try:
                stream.close()
            except OSError:  # a pipe to a dead child may fail to flush; it is closed anyway
                pass
        self._stderr = None


_LOCK = threading.Lock()  # one request at a time: the app may ingest from several threads
_WORKER: ExtractionWorker | None = None


def extract_in_child(path: str, timeout_s: float, memory_mb: int) -> dict:
    """The child's answer for one file, from the shared worker (restarted as needed)."""
    global _WORKER
    with _LOCK:
        if _WORKER is None or _WORKER.memory_mb != memory_mb:
            if _WORKER is not None:
                _WORKER.close()
            _WORKER = ExtractionWorker(memory_mb)
        return _WORKER.request(path, timeout_s)


def child_pid() -> int | None:
    """The running extraction child's process id, or None (for diagnostics and tests)."""
    with _LOCK:
        child = _WORKER._child if _WORKER is not None else None
        return child.pid if child is not None and child.poll() is None else None


@atexit.register
def shutdown() -> None:
    """Stop the extraction child; the next PDF starts a new one."""
    with _LOCK:
        if _WORKER is not None:
            _WORKER.close()
