"""The 'mark as the right answer' form of Search & compare: a row becomes an item of a named gold set."""

from __future__ import annotations

import streamlit as st

from ragloupe.errors import RagloupeError
from ragloupe.ui.text import md_escape

KEY = "label"


def label_form(settings, question: str, row) -> None:
    """Question, answer text and gold set name for the selected row; the item is added on submit."""
    from ragloupe.diagnostics.labels import label_row
    from ragloupe.ui.cache import get_store
    from ragloupe.evaluate.usersets import list_user_goldsets

    existing = [path.stem for path in list_user_goldsets(settings)]
    st.session_state.setdefault(f"{KEY}.goldset", existing[0] if existing else "my-goldset")
    with st.form(f"{KEY}-{row.key}"):
        st.markdown("**" + md_escape(f"Mark {row.unit} as the right answer") + "**")
        name_col, by_col = st.columns([2, 1])
        goldset = name_col.text_input("Gold set", key=f"{KEY}.goldset",
                                      help="a name of yours (" + (", ".join(existing) or "none yet")
                                           + "); a new name makes a new gold set")
        by = by_col.text_input("Labelled by", key=f"{KEY}.by", placeholder="your name (optional)")
        asked = st.text_input("Question", value=question, key=f"{KEY}.question-{row.key}")
        answer = st.text_input("Answer text, as the page writes it", key=f"{KEY}.answer-{row.key}",
                               help="copy it from the chunk above; it is checked against the page")
        if not st.form_submit_button("Add to the gold set"):
            return
    try:
        entry, warnings = label_row(settings, goldset.strip(), asked, row, answer, by,
                                    store=get_store(settings))
    except RagloupeError as exc:
        st.error(md_escape(f"Not added: {exc}"))
        return
    st.success(md_escape(f"Added {entry['query_id']} to {goldset.strip()}: {entry['question']} → {row.unit}"))
    for warning in warnings:
        st.warning(md_escape(warning))
