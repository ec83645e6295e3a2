"""What every attached engine shares: its attachment, and ragloupe's index units it names hits by."""

from __future__ import annotations

import threading

from ragloupe.attached.attachments import Attachment
from ragloupe.attached.outside_hits import IndexUnits
from ragloupe.config import Settings


class AttachedEngine:
    """An outside system behind the engine protocol (retrieve/engines.py); opened on first search."""

    score_meaning = "the outside system's own score (1/rank where it gives none)"

    def __init__(self, attachment: Attachment, settings: Settings):
        self.attachment = attachment
        self.name = attachment.name
        self.settings = settings
        self._lock = threading.Lock()
        self._units: tuple[tuple | None, IndexUnits | None] = (None, None)

    def index_units(self, workspace) -> IndexUnits:
        """The units of ragloupe's index (record owners, unit texts), once per content of its store."""
        key = workspace.content_key()
        with self._lock:
            held_key, held = self._units
        if held_key == key and held is not None:
            return held
        units = IndexUnits.of(workspace.chunks(key))
        with self._lock:
            self._units = (key, units)
        return units
