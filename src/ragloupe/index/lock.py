"""One indexer at a time per index directory: an advisory flock on <index_dir>/.lock.

The lock is taken non-blocking: a second indexer is refused at once with the
pid of the one that holds it, rather than queueing behind it. The kernel
drops a flock when its holder dies, even by kill -9, so a crashed indexer
never leaves a stale lock behind (the next run then repairs the index).
The lock guards the local index directory only: two machines writing to one
Chroma server are not serialised by it.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ragloupe.config import Settings
from ragloupe.errors import IndexBusy

LOCK_NAME = ".lock"
PROBE_WAIT_S = 1.0  # how long a holder that wrote no pid is waited on (see _take)


@contextmanager
def index_lock(settings: Settings) -> Iterator[Path]:
    """Hold the index lock for the duration of the block; IndexBusy if someone else has it."""
    index_dir = settings.path("index_dir")
    index_dir.mkdir(parents=True, exist_ok=True)
    path = index_dir / LOCK_NAME
    # Open without truncating: the holder's pid must stay readable until we own the lock.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _take(fd, path, index_dir)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        os.fsync(fd)
        try:
            yield path
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _take(fd: int, path: Path, index_dir: Path) -> None:
    """The exclusive lock, or IndexBusy naming the holder. A holder that wrote no pid may be
    lock_holder() looking (a page asking whether an indexer runs holds a shared lock for an
    instant), or an indexer between taking the lock and writing its pid: both are waited on
    for up to PROBE_WAIT_S before the lock is called busy."""
    deadline = time.monotonic() + PROBE_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = _read_pid(path)
            if holder or time.monotonic() >= deadline:
                who = f"pid {holder}" if holder else "another process"
                raise IndexBusy(
                    f"another indexer is running ({who}) on {index_dir}; "
                    "wait for it to finish, then run the command again") from None
            time.sleep(0.02)


def lock_holder(settings: Settings) -> int | None:
    """The pid of the indexer holding the lock right now, or None when the index is free."""
    path = settings.path("index_dir") / LOCK_NAME
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(path) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _read_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
