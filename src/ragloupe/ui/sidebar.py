"""The sidebar controls every page shares: which collection, and who is looking.

Drawn by the entry script on every run, so the choice holds across pages.
current_settings() (ui/cache.py) applies the collection chosen here;
pages ask ``examiner()`` before they draw diagnostics (engine ranks,
scores, timings, the screen's token table): an examiner, reading answers
as a reader would, sees the answer, its citations and the cited pages.
"""

from __future__ import annotations

import streamlit as st

COLLECTION_KEY = "_collection"
EXAMINER_KEY = "_examiner"


def chosen_collection() -> str | None:
    return st.session_state.get(COLLECTION_KEY)


def examiner() -> bool:
    """True when the examiner view is on: diagnostics hidden."""
    return bool(st.session_state.get(EXAMINER_KEY, False))


def sidebar_controls() -> None:
    from ragloupe.collections import collection_names
    from ragloupe.config import get_settings

    settings = get_settings()
    names = collection_names(settings)
    if st.session_state.get(COLLECTION_KEY) not in names:
        st.session_state[COLLECTION_KEY] = settings.collection
    st.sidebar.selectbox("Collection", names, key=COLLECTION_KEY,
                         help="Each collection is an index of its own, with its own documents, runs and "
                              "gold sets (`ragloupe collections list`; RAGLOUPE_COLLECTION is the default).")
    st.sidebar.toggle("Examiner view", key=EXAMINER_KEY,
                      help="Hide the diagnostics (engine ranks, scores, timings, the screen's token table) "
                           "and read answers as a reader would; off shows everything, for an engineer.")
