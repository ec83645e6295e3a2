"""Where tracebacks and library warnings go (a log file, never the screen), and the log of
every LLM call."""

from __future__ import annotations

import json
import logging
import threading
import traceback
import warnings
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from ragloupe.config import PROJECT_ROOT, Settings, get_settings
from ragloupe.errors import SettingsInvalid

_log_lock = threading.Lock()


def log_path(settings: Settings | None = None) -> Path:
    """RAGLOUPE_LOGS_DIR/ragloupe.log (of ``settings`` when given); logs/ragloupe.log when the
    settings themselves are invalid, so logging an error can never raise one of its own."""
    try:
        path = (settings or get_settings()).path("logs_dir") / "ragloupe.log"
    except SettingsInvalid:
        path = PROJECT_ROOT / "logs" / "ragloupe.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _log_to_file() -> Path:
    path = log_path()
    logging.basicConfig(filename=path, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return path


def log_exception(exc: BaseException, settings: Settings | None = None) -> Path:
    """Append exc's traceback to the log file and return the file's path.

    Written directly rather than through logging.basicConfig, which only
    takes its first file: a server with its own logs_dir must log there.
    """
    path = log_path(settings)
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    with _log_lock, open(path, "a", encoding="utf-8") as handle:
        handle.write(f"{stamp} ERROR ragloupe: {text}\n")
    return path


@contextmanager
def warnings_to_log() -> Iterator[None]:
    """While a command runs, Python warnings (a library's FutureWarning or
    DeprecationWarning) go to the log file: they are for whoever upgrades the
    libraries, not for the person running the command, and on stderr they
    tear through the progress bar."""
    def to_log(message, category, filename, lineno, file=None, line=None):
        _log_to_file()
        logging.getLogger("py.warnings").warning(
            warnings.formatwarning(message, category, filename, lineno, line).strip())

    with warnings.catch_warnings():
        warnings.showwarning = to_log
        yield


# ----------------------------------------------------------------------------
# LLM calls, one JSON line each, for Run info and anyone with `jq`

LLM_CALLS_FILE = "llm_calls.jsonl"
_llm_log_lock = threading.Lock()


def llm_calls_path(settings: Settings | None = None) -> Path:
    return (settings or get_settings()).path("logs_dir") / LLM_CALLS_FILE


def log_llm_call(record: dict[str, Any], settings: Settings | None = None) -> None:
    """Append one LLM call (backend, model, prompt size, duration, outcome) as a JSON line.

    Logging must never cost the caller its answer: a log that cannot be
    written is skipped.
    """
    path = llm_calls_path(settings)
    line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _llm_log_lock, open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
    except OSError:
        pass


def read_llm_calls(settings: Settings | None = None, limit: int = 200) -> list[dict[str, Any]]:
    """The last ``limit`` LLM calls logged, newest first (unreadable lines are skipped)."""
    path = llm_calls_path(settings)
    if not path.is_file():
        return []
    records: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle.readlines()[-limit:]:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append(record)
    return records[::-1]
