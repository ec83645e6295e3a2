"""Turn anything a page raises into a readable message, never a traceback.

A RagloupeError carries a message a person can act on, so it is shown as is.
Anything else is a bug: its traceback goes to the log file and the page says
where to find it. Streamlit's own control flow (st.stop, st.rerun) derives
from BaseException and passes through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ragloupe.errors import RagloupeError
from ragloupe.logs import log_exception


def bug_message(exc: BaseException, where: object) -> str:
    """The short line shown for an unexpected error."""
    return (f"Something went wrong ({type(exc).__name__}). This is a bug, not your input: "
            f"the details are in {where}. Reload the page to try again.")


# Pipeline errors speak to the command line; in the app the same advice names the page.
_APP_WORDS = (
    (re.compile(r"run `ragloupe index --rebuild`"), "rebuild it on the Index page"),
    (re.compile(r"run `ragloupe index[^`]*` first"), "index files on the Index page first"),
    (re.compile(r"`ragloupe index[^`]*`"), "the Index page"),
    (re.compile(r" ?\(run with --answers\)"), " (that needs an evaluation with answers)"),
    (re.compile(r"--k takes"), "k takes"),
)


def app_message(message: str) -> str:
    """A pipeline error's message with command-line advice put in the app's terms."""
    for pattern, words in _APP_WORDS:
        message = pattern.sub(words, message)
    return message


@contextmanager
def page_errors() -> Iterator[None]:
    """Wrap a page body (or one action in it) so errors become st.error messages."""
    try:
        yield
    except RagloupeError as exc:
        st.error(app_message(str(exc)))
    except Exception as exc:  # a bug: keep the traceback off the screen
        st.error(bug_message(exc, log_exception(exc)))

