"""Where tracebacks and library warnings go: a log file, never the screen."""

from __future__ import annotations

import logging
import traceback
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ragloupe.config import PROJECT_ROOT, get_settings
from ragloupe.errors import SettingsInvalid


def log_path() -> Path:
    """RAGLOUPE_LOGS_DIR/ragloupe.log; logs/ragloupe.log when the settings themselves are
    invalid, so logging an error can never raise one of its own."""
    try:
        path = get_settings().path("logs_dir") / "ragloupe.log"
    except SettingsInvalid:
        path = PROJECT_ROOT / "logs" / "ragloupe.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _log_to_file() -> Path:
    path = log_path()
    logging.basicConfig(filename=path, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return path


def log_exception(exc: BaseException) -> Path:
    """Append exc's traceback to the log file and return the file's path."""
    path = _log_to_file()
    logging.getLogger("ragloupe").error(
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
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
