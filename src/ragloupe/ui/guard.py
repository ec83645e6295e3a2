"""Turn anything a page raises into a readable message, never a traceback.

A RagloupeError carries a message a person can act on, so it is shown, with
what it says to do next put in the app's words.
Anything else is a bug: its traceback goes to the log file and the page says
where to find it. Streamlit's own control flow (st.stop, st.rerun) derives
from BaseException and passes through untouched.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import streamlit as st

from ragloupe.errors import Action, RagloupeError
from ragloupe.logs import log_exception


def bug_message(exc: BaseException, where: object) -> str:
    """The short line shown for an unexpected error."""
    return (f"Something went wrong ({type(exc).__name__}). This is a bug, not your input: "
            f"the details are in {where}. Reload the page to try again.")


# What a pipeline error tells the reader to do, in the app's words (errors.Action).
APP_WORDS: Mapping[Action, str] = {
    Action.REBUILD_INDEX: "rebuild it on the Index page",
    Action.INDEX_FIRST: "index files on the Index page first",
    Action.REINDEX: "re-index on the Index page",
    Action.INDEX_REPAIRS: "the next re-index on the Index page repairs an interrupted index",
    Action.TRAIN_LEARNED: "train one on the Tuning page (learned fusion)",
}


def app_message(exc: RagloupeError) -> str:
    """A pipeline error's message with its action put in the app's terms."""
    return exc.message(APP_WORDS)


@contextmanager
def page_errors() -> Iterator[None]:
    """Wrap a page body (or one action in it) so errors become st.error messages."""
    try:
        yield
    except RagloupeError as exc:
        st.error(app_message(exc))
    except Exception as exc:  # a bug: keep the traceback off the screen
        st.error(bug_message(exc, log_exception(exc)))

