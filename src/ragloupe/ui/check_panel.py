"""The Answer page's "check an answer you paste" panel: an answer from anywhere, checked
against sources pasted or picked from the index, with generate.check.

Pasted sources are separated by a line holding only "---". Picked sources
are the indexed chunks of the chosen pages (or records) of one document, one
source each, numbered after the pasted ones. Text from documents and from
the person is shown as text, never as markdown or HTML.
"""

from __future__ import annotations

import re

import streamlit as st

from ragloupe.config import Settings
from ragloupe.ui.answer_view import show_verdict, verdict_table

SEPARATOR = re.compile(r"^\s*---\s*$", re.MULTILINE)


def pasted_sources(text: str) -> list[str]:
    """The sources in a pasted block, split at lines of '---'; blank ones dropped."""
    return [part.strip() for part in SEPARATOR.split(text or "") if part.strip()]


def parse_pages(text: str) -> list[int]:
    """'28, 30-31' -> [28, 30, 31]; anything else in the box is ignored."""
    pages: list[int] = []
    for lo, hi in re.findall(r"(\d+)\s*(?:-\s*(\d+))?", text or ""):
        first, last = int(lo), int(hi or lo)
        pages.extend(range(first, min(last, first + 200) + 1))
    return sorted(set(pages))


def picked_sources(store, doc_id: str, pages: list[int]) -> list:
    """Each indexed chunk of the chosen pages of ``doc_id`` as a check Source, in reading order."""
    from ragloupe.generate.check import Source

    if not doc_id or not pages:
        return []
    chunks = store.all_chunks(where={"$and": [{"doc_id": doc_id}, {"page": {"$in": pages}}]})
    return [Source(text=c.text, title=f"{c.doc_id}, {'record ' + c.record_id if c.record_id else f'page {c.page}'}",
                   doc_id=c.doc_id, page=c.page, record_id=c.record_id) for c in chunks]


# What the panel offers for the claims: the keys are Settings.check_verifier values (or none).
CLAIM_VERIFIERS = {"llm": "the LLM", "model-free": "no model (figures and words matched)", "none": "not at all"}


def pasted_answer_check(settings: Settings, store, documents: list[str], llm_ready: bool) -> None:
    """The panel: inputs, the Check button, and the result kept in session state."""
    from ragloupe.generate.check import check

    st.subheader("Check an answer you paste")
    st.caption("An answer from any system, checked against sources you paste or pick from the index. "
               "Write [1], [2] ... in the answer to cite the sources by number; an answer without "
               "citations is checked against all of them.")
    with st.form("check_pasted"):
        answer_text = st.text_area("Answer", key="paste_answer", height=120)
        sources_text = st.text_area("Sources (separate them with a line of ---)", key="paste_sources", height=160)
        doc_col, pages_col = st.columns(2)
        doc_id = doc_col.selectbox("…or pick pages from a document", [""] + documents, key="paste_doc",
                                   format_func=lambda d: d or "(none)")
        pages_text = pages_col.text_input("Pages or records (e.g. 28, 30-31)", key="paste_pages")
        verifiers = list(CLAIM_VERIFIERS) if llm_ready else [v for v in CLAIM_VERIFIERS if v != "llm"]
        verifier = st.radio("Check each claim with", verifiers, key="paste_verifier", horizontal=True,
                            format_func=CLAIM_VERIFIERS.get,
                            help="The model-free verifier matches each sentence's figures and words in the "
                                 "sources; no model judges its meaning." +
                                 ("" if llm_ready else " No LLM is configured or reachable."))
        submitted = st.form_submit_button("Check the answer")
    if submitted:
        from ragloupe.generate.check import Source

        sources = [Source(text=t, title=f"pasted {n}") for n, t in enumerate(pasted_sources(sources_text), start=1)]
        sources += picked_sources(store, doc_id, parse_pages(pages_text))
        if not answer_text.strip() or not sources:
            st.warning("Paste an answer and at least one source (or pick pages of a document).")
            st.session_state.pop("paste_result", None)
        else:
            with st.spinner("Checking…"):
                chosen = settings.replace(check_verifier=verifier) if verifier != "none" else settings
                st.session_state["paste_result"] = check(answer_text, sources, chosen, claims=verifier != "none")
    result = st.session_state.get("paste_result")
    if result is not None:
        show_result(result)


def show_result(result) -> None:
    screen = result.screen
    verdict_col, share_col, score_col = st.columns(3)
    with verdict_col:
        show_verdict("Screen verdict", screen.verdict)
    share_col.metric("Checkable sentences", f"{screen.checkable_share:.0%}",
                     help=f"{screen.n_checkable_sentences} of {screen.n_sentences}")
    score = result.answer_score
    score_col.metric("Claim score (0–10)", "—" if score is None else f"{score:.2f}")
    st.text(f"{len(result.sources)} sources · citations: {result.citation_mode}")
    if screen.tokens:
        verdict_table([{"token": t.token, "verdict": t.verdict,
                        "found in sources": ", ".join(map(str, t.found_in)) or "—",
                        "evidence": t.evidence} for t in screen.tokens])
    else:
        st.caption("No figure, standard or legal act to check: the screen has no opinion.")
    if result.claims_status != "checked":
        st.info(f"Claims not checked: {result.claims_reason}")
        return
    verdict_table([{
        "claim": c.claim.text, "verdict": c.verdict, "source": c.source or "—",
        "evidence": (c.evidence_span.method if c.evidence_span else "not found"),
        "quote": c.quote or "—", "rationale": c.rationale or c.note or "—",
        "model confidence": "—" if c.confidence is None else f"{c.confidence:.2f}"} for c in result.claims])
    parts = result.score
    st.caption(f"score = 10 × max(0, (S + 0.4 U − 2 C) / n) × (1 − penalty): S {parts['supported']}, "
               f"U {parts['unverified']}, C {parts['contradicted']}, n {parts['claims']}, "
               f"penalty {parts['penalty'] if parts['penalty'] is not None else '—'}")
