"""Plain reasons for what went wrong while reading a PDF: the one place that
turns a library's exception into words a person can act on.

pypdf and pdfminer raise dozens of exception types with messages written for
their developers ("DeprecationError: The filter name /A85 is deprecated and
has been removed in pypdf 7.0.0..."). A reason shown in the Chunk Explorer,
``ragloupe validate`` or an index summary must instead say what is wrong with
the file in plain words, so every extraction error passes through
``plain_reason`` before it is stored.
"""

from __future__ import annotations

import zlib

# (exception class name, words in its message) -> plain reason; first match wins.
# Matched by name so that this module needs neither pypdf nor pdfminer imported.
_BY_MESSAGE: tuple[tuple[str, str, str], ...] = (
    ("DeprecationError", "filter", "it is compressed with a filter name the PDF reader no longer accepts"),
    ("NotImplementedError", "filter", "it is compressed with a filter the PDF reader does not support"),
    ("DependencyError", "jbig2", "its content uses JBIG2 compression, which needs the jbig2dec program"),
    ("DependencyError", "", "it needs a decoder that is not installed"),
    ("LimitReachedError", "", "its content is larger than the reader's safety limits allow"),
    ("PdfStreamError", "", "its content stream is damaged"),
    ("PdfReadError", "", "its data is damaged"),
    ("PSEOF", "", "its content stream ends unexpectedly"),
    ("PSSyntaxError", "", "its content stream is damaged"),
    ("PDFSyntaxError", "", "its data is damaged"),
)
_BY_TYPE: tuple[tuple[type[BaseException], str], ...] = (
    (MemoryError, "it needs more memory than the extraction limit allows"),
    (RecursionError, "its objects are nested too deeply"),
    (zlib.error, "its compressed data is damaged"),
    (UnicodeError, "its text uses an encoding that cannot be decoded"),
    ((KeyError, TypeError, AttributeError, IndexError, ValueError, AssertionError),
     "its page objects are malformed"),
)
UNKNOWN = "it could not be read"


def plain_reason(exc: BaseException) -> str:
    """A short phrase saying why a page or file could not be read, in plain words.

    Phrased to follow "could not be read: " or "extraction failed: ".
    """
    name = type(exc).__name__
    message = str(exc).lower()
    for exc_name, words, reason in _BY_MESSAGE:
        if name == exc_name and words in message:
            return reason
    for types, reason in _BY_TYPE:
        if isinstance(exc, types):
            return reason
    return UNKNOWN

