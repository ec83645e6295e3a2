"""The Answer page's parts: the conversation so far, a withheld answer, and a cited page.

Document text and model text are data: they go through st.text or the
escaping helpers of ui/text.py, never markdown.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragloupe.generate.verdicts import badge, cell_style
from ragloupe.ui.text import highlight_html
from ragloupe.ui.widgets import chunk_label


def show_verdict(label: str, verdict: str) -> None:
    """A verdict under its label, in its colour and with its meaning (generate.verdicts)."""
    st.markdown(f":gray[{label}]  \n{badge(verdict)}")


def verdict_table(rows: list[dict], column: str = "verdict") -> None:
    """A table whose verdict cells are tinted with their verdict's colour (generate.verdicts)."""
    frame = pd.DataFrame(rows)
    st.dataframe(frame.style.map(cell_style, subset=[column]), hide_index=True, width="stretch")


def show_history(turns: list) -> None:
    """Every earlier turn: the question, what was searched, the answer's text (or why there is none)."""
    if not turns:
        return
    with st.expander(f"Conversation so far ({len(turns)} earlier question{'s' if len(turns) != 1 else ''})",
                     expanded=True):
        st.caption("History only helps read the next question (a follow-up is searched as a standalone "
                   "question); an answer and its screen come from its own passages alone.")
        for number, turn in enumerate(turns, start=1):
            with st.container(border=True):
                st.text(f"Q{number}: {turn.question}")
                if turn.standalone != turn.question:
                    st.caption(f"searched as: {' '.join(turn.standalone.split())}")
                if turn.answer is not None and turn.answer.withheld:
                    st.text(f"A{number}: (withheld: {turn.answer.gates.summary()})")
                elif turn.answer is not None:
                    st.text(f"A{number}: {turn.answer.text}")
                else:
                    st.text(f"A{number}: (no answer: {turn.error})")


def show_withheld(result) -> None:
    """A gate failed: say which and why, and show the passages; no LLM was asked."""
    st.error("No answer was generated, no LLM call spent: " + result.gates.summary())
    for gate in result.gates.failed:
        for problem in gate.problems:
            st.text(f"• {problem}")
    st.subheader(f"The {len(result.passages)} passages the answer would have come from")
    for passage in result.passages:
        st.text(f"[{passage.number}] {chunk_label(passage.chunk)} · rank {passage.rank}")
        st.html(highlight_html(passage.chunk.text, []))


def show_cited_page(settings, chunk) -> None:
    """The cited page as the PDF shows it, rendered by the app from the file indexed; the file
    itself to download. A record, or a file gone or changed since indexing, says so instead."""
    from ragloupe.source_pages import SourceUnavailable, source_file

    if chunk.record_id:
        st.caption(f"Record {chunk.record_id} of {chunk.doc_id}: a record has no page to show.")
        return
    try:
        path = source_file(settings, chunk.doc_id)
        image = _rendered(str(path), chunk.page, path.stat().st_mtime_ns)
    except SourceUnavailable as exc:
        st.caption(f"The cited page cannot be shown: {exc}")
        return
    st.image(image, caption=f"{path.name}, page {chunk.page} (rendered from the indexed file)")
    st.download_button(f"Download {path.name}", data=path.read_bytes(), file_name=path.name,
                       mime="application/pdf", key=f"download-{chunk.chunk_id}")


@st.cache_data(show_spinner="Rendering the cited page…", max_entries=32)
def _rendered(path: str, page: int, stamp: int) -> bytes:
    from pathlib import Path

    from ragloupe.source_pages import render_page

    return render_page(Path(path), page)
