"""Named errors, each with a message a person can act on.

The CLI and the app catch RagloupeError at the top and show its message; any
other exception is a bug and is logged with its traceback to logs/, never
shown on screen.
"""

from __future__ import annotations


class RagloupeError(Exception):
    """Base class: str(error) is the one-line message for the user."""


class EncryptedPdf(RagloupeError):
    pass


class CorruptPdf(RagloupeError):
    pass


class UnsupportedFile(RagloupeError):
    pass


class ExtractionLimit(RagloupeError):
    """A PDF took too long or too much memory to extract."""


class RecordsRefused(RagloupeError):
    """A records file has blocking findings."""


class IndexBusy(RagloupeError):
    pass


class StaleIndex(RagloupeError):
    """The index was built with other settings than the ones in force."""


class StoreUnavailable(RagloupeError):
    pass


class StoreTimeout(StoreUnavailable):
    """The Chroma server took longer than chroma_timeout_s to answer (paused, overloaded)."""


class StoreUnreachable(StoreUnavailable):
    """The Chroma server cannot be reached or dropped the connection (stopped, wrong host/port)."""


class LlmUnavailable(RagloupeError):
    pass


class LlmBadOutput(RagloupeError):
    pass


class GoldSetInvalid(RagloupeError):
    pass


class RunNotFound(RagloupeError):
    pass


class SettingsInvalid(RagloupeError, ValueError):
    """A setting (environment, .env or override) has a value that cannot be used.

    Also a ValueError, so callers that wrapped bad --set values keep working."""
