"""Where tracebacks go: a log file, never the screen."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

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


def log_exception(exc: BaseException) -> Path:
    """Append exc's traceback to the log file and return the file's path."""
    path = log_path()
    logging.basicConfig(filename=path, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("ragloupe").error(
        "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    return path
