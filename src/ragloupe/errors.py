"""Named errors, each with a message a person can act on and a kind the faces map.

Every error ragloupe raises for a person to act on is defined here. The CLI,
the app and the API catch RagloupeError at the top: the API answers the status
its kind maps to (api/app.py), the CLI and the app show the message. A message
that tells the reader what to do next names an Action instead of a command
(``ACTION`` marks the place), and each face puts the action in its own words:
`str(error)` gives the command line's ("run `ragloupe index --rebuild`"),
ui/guard.py the app's ("rebuild it on the Index page"). Any other exception
is a bug and is logged with its traceback to logs/, never shown on screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import ClassVar


class Kind(Enum):
    """What went wrong, as far as a face needs to know to answer it."""

    INVALID = "invalid"          # a request, option or setting that cannot be used as given
    REFUSED = "refused"          # a file or a run was looked at and refused
    UNSUPPORTED = "unsupported"  # a file type ragloupe does not read
    NOT_FOUND = "not_found"      # a run, document or job that does not exist
    CONFLICT = "conflict"        # the index is busy, or was built for other settings
    UNAVAILABLE = "unavailable"  # a server or a model that is not there or did not answer
    BAD_REPLY = "bad_reply"      # a server answered with something that cannot be used
    FORBIDDEN = "forbidden"      # switched off on this server
    TOO_LARGE = "too_large"      # over a configured size limit


class Action(Enum):
    """What a message can tell the reader to do next; each face words it."""

    REBUILD_INDEX = "rebuild_index"
    INDEX_FIRST = "index_first"
    REINDEX = "reindex"
    INDEX_REPAIRS = "index_repairs"
    TRAIN_LEARNED = "train_learned"


ACTION = "{action}"  # where a message puts its action's words

COMMAND_LINE_WORDS: Mapping[Action, str] = {
    Action.REBUILD_INDEX: "run `ragloupe index --rebuild`",
    Action.INDEX_FIRST: "run `ragloupe index` first",
    Action.REINDEX: "run `ragloupe index`",
    Action.INDEX_REPAIRS: "the next `ragloupe index` repairs an interrupted index",
    Action.TRAIN_LEARNED: "train one with `ragloupe tune --train-learned`",
}


class RagloupeError(Exception):
    """Base class: str(error) is the one-line message, in the command line's words."""

    kind: ClassVar[Kind] = Kind.REFUSED

    def __init__(self, message: str = "", *, action: Action | None = None):
        super().__init__(message)
        self.action = action

    def message(self, words: Mapping[Action, str] = COMMAND_LINE_WORDS) -> str:
        """The message with its action (if any) in ``words``."""
        text = str(self.args[0]) if self.args else ""
        return text.replace(ACTION, words[self.action]) if self.action else text

    def __str__(self) -> str:
        return self.message()

    def __reduce__(self):  # keep the action across processes (pickle calls cls(*args))
        return self.__class__, tuple(self.args), {"action": self.action}


# --- files --------------------------------------------------------------------------

class EncryptedPdf(RagloupeError):
    pass


class CorruptPdf(RagloupeError):
    pass


class UnsupportedFile(RagloupeError):
    kind = Kind.UNSUPPORTED


class ExtractionLimit(RagloupeError):
    """A PDF took too long or too much memory to extract."""


class RecordsRefused(RagloupeError):
    """A records file has blocking findings."""


# --- the index and its store ----------------------------------------------------------

class IndexBusy(RagloupeError):
    kind = Kind.CONFLICT


class StaleIndex(RagloupeError):
    """The index was built with other settings than the ones in force."""

    kind = Kind.CONFLICT


class StoreUnavailable(RagloupeError):
    kind = Kind.UNAVAILABLE


class StoreTimeout(StoreUnavailable):
    """The Chroma server took longer than chroma_timeout_s to answer (paused, overloaded)."""


class StoreUnreachable(StoreUnavailable):
    """The Chroma server cannot be reached or dropped the connection (stopped, wrong host/port)."""


class EmbedderUnavailable(RagloupeError):
    """The configured embedding model cannot be loaded from disk."""

    kind = Kind.UNAVAILABLE


class OnnxUnavailable(RagloupeError):
    """The ONNX backend cannot export or load the embedding model."""

    kind = Kind.UNAVAILABLE


class EmbeddingServerUnavailable(RagloupeError):
    """The embedding server cannot be reached, refused the request, or did not answer in time."""

    kind = Kind.UNAVAILABLE


class EmbeddingServerBadOutput(RagloupeError):
    """The embedding server answered, but not with one usable vector per text."""

    kind = Kind.BAD_REPLY


class DeviceUnavailable(RagloupeError):
    """RAGLOUPE_DEVICE names a device this torch cannot use."""

    kind = Kind.UNAVAILABLE


# --- settings and options ---------------------------------------------------------------

class SettingsInvalid(RagloupeError, ValueError):
    """A setting (environment, .env or override) has a value that cannot be used.

    Also a ValueError, so callers that wrapped bad --set values keep working."""

    kind = Kind.INVALID


class ChunkingSettingsInvalid(RagloupeError):
    """chunk_tokens / chunk_overlap cannot make progress for this model."""

    kind = Kind.INVALID


class ChunkingVariantInvalid(RagloupeError):
    """A --chunking value that is not a list of TOKENS/OVERLAP pairs a chunker can use."""

    kind = Kind.INVALID


class BadOption(RagloupeError):
    """A command-line option that does not fit."""

    kind = Kind.INVALID


class CheckInputInvalid(RagloupeError):
    """The answer or sources file cannot be read as described in `ragloupe check --help`."""

    kind = Kind.INVALID


class UnsafeBind(RagloupeError):
    """The server would listen beyond this machine without an API key."""

    kind = Kind.INVALID


# --- the LLM ----------------------------------------------------------------------------

class LlmUnavailable(RagloupeError):
    kind = Kind.UNAVAILABLE


class LlmBadOutput(RagloupeError):
    kind = Kind.BAD_REPLY


# --- evaluation ---------------------------------------------------------------------------

class GoldSetInvalid(RagloupeError):
    kind = Kind.INVALID


class RunNotFound(RagloupeError):
    kind = Kind.NOT_FOUND


class NothingToScore(RagloupeError):
    """No gold question's document is in the index: a run would have no figure to show."""

    kind = Kind.REFUSED


class RunsNotComparable(RagloupeError):
    """Two runs share no gold question, so there is nothing to pair."""

    kind = Kind.INVALID


class GateInvalid(RagloupeError):
    """A gate written in a way that cannot be checked."""

    kind = Kind.INVALID


class OutsideRunInvalid(RagloupeError):
    """A run file or retriever with problems: nothing of it was scored or saved.

    ``problems`` are evaluate.outside.RunProblem, every bad line (or question) with its reason.
    """

    kind = Kind.INVALID

    def __init__(self, label: str, problems=()):
        self.label, self.problems = label, list(problems)
        first = f"; first: {self.problems[0]}" if self.problems else ""
        super().__init__(f"{label}: {len(self.problems)} problem(s), nothing scored or saved{first}")

    def __reduce__(self):
        return self.__class__, (self.label, self.problems)


# --- the HTTP API -------------------------------------------------------------------------

class TooManySources(RagloupeError):
    kind = Kind.INVALID


class UnknownDocument(RagloupeError):
    kind = Kind.NOT_FOUND


class UnknownJob(RagloupeError):
    kind = Kind.NOT_FOUND


class UploadRefused(RagloupeError):
    """Uploads are switched off on this server."""

    kind = Kind.FORBIDDEN


class UploadTooLarge(RagloupeError):
    kind = Kind.TOO_LARGE


class SourceUnavailable(RagloupeError):
    """The cited document's file cannot be served: gone, changed since indexing, or not a PDF."""

    kind = Kind.NOT_FOUND


# --- collections ----------------------------------------------------------------------------

class CollectionExists(RagloupeError):
    kind = Kind.CONFLICT


# --- retrieval and tuning ---------------------------------------------------------

class InvalidSearch(RagloupeError):
    """A search was asked for with a mode, k, filter or setting that does not exist."""

    kind = Kind.INVALID


class LearnedModelMismatch(RagloupeError):
    """The learned fusion model does not fit the settings, features or file in force."""

    kind = Kind.CONFLICT


class RerankerUnavailable(RagloupeError):
    """The configured cross-encoder cannot be loaded from disk."""

    kind = Kind.UNAVAILABLE


class TuningError(RagloupeError):
    """Tuning cannot run as asked (too few documents to hold one out, an unknown space ...)."""

    kind = Kind.REFUSED


class AdaptError(RagloupeError):
    """`ragloupe adapt` cannot run as asked (an empty or stale index, a server embedding backend,
    an unknown pair kind ...)."""

    kind = Kind.REFUSED


# --- engines: plugins and outside systems attached by name ---------------------------

class AttachRefused(RagloupeError):
    """An outside system cannot be attached as given (a bad name, a missing collection, a
    dimension that does not fit the model)."""

    kind = Kind.REFUSED


class EngineNotFound(RagloupeError):
    """No engine is attached under that name."""

    kind = Kind.NOT_FOUND


class EngineUnavailable(RagloupeError):
    """An attached engine cannot be reached or read now (its server is down, its files are gone)."""

    kind = Kind.UNAVAILABLE


class EngineBadReply(RagloupeError):
    """An attached engine answered with something that is not a ranked list."""

    kind = Kind.BAD_REPLY
