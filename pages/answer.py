"""Answer: an LLM answer from the ranked context, with its citations, a groundedness
screen and, on request, a per-claim check by the LLM."""

import pandas as pd
import streamlit as st

from ragloupe.ui import state
from ragloupe.ui.answer_view import show_cited_page, show_history, show_verdict, show_withheld, verdict_table
from ragloupe.ui.background import index_notice
from ragloupe.ui.cache import current_settings, get_store, get_workspace, index_documents
from ragloupe.ui.guard import page_errors
from ragloupe.ui.sidebar import examiner
from ragloupe.ui.text import highlight_html, spans_html
from ragloupe.ui.widgets import chunk_label, chunk_metadata, encode_sentences_with_progress, run_with_elapsed

st.title("Answer")
st.caption("The model answers only from the retrieved passages and cites them. The screen "
           "checks every figure, standard and legal act of the answer against the passages; "
           "NOT_CONTRADICTED means found where cited, not proven.")

PAGE = "answer"
BACKEND_NAMES = {"ollama": "Ollama", "openai": "OpenAI-compatible server",
                 "embedded": "embedded Gemma 270M (tiny, CPU)", "none": "none (retrieval only)"}

with page_errors():
    index_notice()
    from ragloupe.diagnostics.system import llm_status
    from ragloupe.generate.conversation import Conversation
    from ragloupe.generate.evidence import citation_evidence
    from ragloupe.generate.groundedness import screen_answer, split_sentences as sentences_of
    from ragloupe.generate.llm import BACKENDS, for_the_picker, starting_backend
    from ragloupe.retrieve.search import MODES

    base = current_settings()
    documents = index_documents(base)
    reader = examiner()
    first_backend = state.value(PAGE, "backend")
    if first_backend is None:  # the first visit: probe the configured LLM once, then keep the choice
        first_backend, switched = starting_backend(base)
        st.session_state[f"_{PAGE}.switched"] = switched
    state.keep(PAGE, {"question": "", "mode": base.mode if base.mode in MODES else MODES[0],
                      "k": base.top_k, "docs": [], "gates": base.answer_gates, "backend": first_backend})
    state.restrict(PAGE, "docs", documents)
    backend = st.selectbox("LLM backend", BACKENDS, key=f"{PAGE}.backend",
                           format_func=lambda name: BACKEND_NAMES.get(name, name),
                           help="For this page only; the default is RAGLOUPE_LLM_BACKEND in .env.")
    switched = st.session_state.get(f"_{PAGE}.switched", "")
    if switched and backend == "embedded":
        st.info(switched)
    settings = base.replace(llm_backend=backend)
    reachable, message = llm_status(settings)
    if backend == "none":
        st.caption("No LLM picked: retrieval works, answers do not (pick one in \"LLM backend\").")
    else:
        (st.caption if reachable else st.warning)(f"LLM: {for_the_picker(message)}")
    gates = st.toggle("Gates before generation", key=f"{PAGE}.gates",
                      help="Answer only from passages that map to indexed pages and whose figures agree; "
                           "otherwise say which gate failed, with no LLM call (RAGLOUPE_ANSWER_GATES).")
    settings = settings.replace(answer_gates=gates)
    # One conversation per collection: nothing asked of one collection is history for another.
    conversation = st.session_state.setdefault(f"_{PAGE}.conversation.{settings.collection}",
                                               Conversation(settings))
    shown = state.result(PAGE) or {}
    shown = shown if shown.get("collection") == settings.collection else {}
    show_history(conversation.turns[:-1] if shown else conversation.turns)
    with st.form("ask"):
        question = st.text_input("Question", key=f"{PAGE}.question",
                                 help="A follow-up may refer to the conversation above.")
        mode_col, k_col, docs_col = st.columns([1, 1, 2])
        mode = mode_col.selectbox("Retrieval mode", MODES, key=f"{PAGE}.mode")
        k = k_col.number_input("Passages retrieved (k)", min_value=1, max_value=30, step=1,
                               key=f"{PAGE}.k")
        chosen_docs = docs_col.multiselect("Documents", documents, key=f"{PAGE}.docs",
                                           placeholder="all documents")
        ask_col, new_col = st.columns([1, 4])
        asked = ask_col.form_submit_button("Answer", type="primary")
        restart = new_col.form_submit_button("New conversation")

    if restart:
        conversation.clear()
        state.forget(PAGE)
        st.rerun()
    if asked and not question.strip():
        st.warning("Type a question first.")
    elif asked:
        conversation.settings, conversation.mode, conversation.k = settings, mode, int(k)
        conversation.filters = {"doc_ids": list(chosen_docs)} if chosen_docs else None
        conversation.search_kwargs = {"workspace": get_workspace(settings)}
        st.session_state.pop("claims", None)
        # Here, not in the thread below: the bar is drawn by this script run.
        encode_sentences_with_progress(conversation.search_kwargs["workspace"], [mode], chosen_docs or None)
        turn = run_with_elapsed(lambda: conversation.ask(question),
                                f"Retrieving and answering ({BACKEND_NAMES.get(backend, backend)})")
        state.result(PAGE, {"ranking": turn.ranking, "answer": turn.answer, "error": turn.error or None,
                            "standalone": turn.standalone, "collection": settings.collection})
        st.rerun()  # the history above now holds the earlier turns

    if shown.get("standalone") and shown["standalone"] != state.value(PAGE, "question") and not reader:
        st.caption(f"Searched as: {' '.join(shown['standalone'].split())}")
    if shown and shown.get("answer") is None:
        if shown.get("error"):
            st.error(shown["error"])
        else:
            st.info("The last answer was stopped before the model finished.")
        ranking = shown["ranking"]
        st.subheader(f"The {len(ranking.hits)} passages retrieved ({ranking.mode})")
        st.caption("No answer was generated; these are what the model would have been given.")
        for hit in ranking.hits:
            st.text(f"[{hit.rank}] {chunk_label(hit.chunk)} · score {hit.score:.4f}")
            st.html(highlight_html(hit.chunk.text, []))
    if shown.get("answer") is not None and shown["answer"].withheld:
        show_withheld(shown["answer"])
        shown = {}
    result = shown.get("answer")
    if result is not None:
        checked = screen_answer(result)
        st.subheader("Answer")
        st.html(highlight_html(result.text, [c.raw for c in result.citations]))
        if result.not_in_context:
            st.caption("The model says the passages do not hold the answer.")
        if not reader:
            st.caption(f"{result.model} · {result.context_tokens} of {result.budget_tokens} context "
                       f"tokens · {sum(result.timings.values()):.1f} s")
        verdict_col, share_col, cited_col = st.columns(3)
        with verdict_col:
            show_verdict("Screen verdict", checked.verdict)
        share_col.metric("Checkable sentences", f"{checked.checkable_share:.0%}",
                         help=f"{checked.n_checkable_sentences} of {checked.n_sentences}")
        cited_col.metric("Cited units", len(result.cited_units))
        if result.citation_method == "constrained decoding":
            st.warning("The model cited nothing itself: the citation was picked by constrained "
                       "decoding (the passage number the model finds most likely after its "
                       "answer). A picked citation is a guess, not evidence: the screen above "
                       "ignores it.")
        if checked.tokens and not reader:
            verdict_table([{
                "token": t.token, "kind": t.kind, "verdict": t.verdict,
                "cited passages": ", ".join(map(str, t.cited)) or "—",
                "found in passages": ", ".join(map(str, t.found_in)) or "—",
                "evidence": t.evidence} for t in checked.tokens])
        elif not checked.tokens:
            st.caption("No figure, standard or legal act to check: the screen has no opinion.")

        st.subheader("Citations")
        evidence = citation_evidence(result, checked)
        if evidence:
            picked = st.segmented_control(
                "Open a citation", list(range(len(evidence))), key="citation", default=0,
                format_func=lambda i: result.citations[evidence[i].citation].raw)
            if picked is not None:
                item = evidence[picked]
                passage = result.passages[item.passage - 1]
                show_verdict("The cited sentence's screen verdict", item.verdict)
                st.text(f"[{passage.number}] {chunk_label(passage.chunk)} · rank {passage.rank} · "
                        f"{item.finding}")
                if len(sentences_of(result.text)) > 1:  # one sentence is the answer shown above
                    st.text(f"Sentence: {item.sentence}")
                st.html(spans_html(passage.chunk.text,
                                   [(item.span.start, item.span.end)] if item.span else []))
                show_cited_page(settings, passage.chunk)
        else:
            st.caption("The answer cites no passage it was given.")
        with st.expander(f"All {len(result.passages)} passages the model saw"):
            for passage in result.passages:
                st.text(f"[{passage.number}] {chunk_label(passage.chunk)} · rank {passage.rank}")
                st.html(highlight_html(passage.chunk.text, []))
                if not reader:
                    chunk_metadata(passage.chunk)
        if result.cut and not reader:
            with st.expander(f"{len(result.cut)} retrieved chunk(s) left out for the token budget"):
                st.dataframe(pd.DataFrame([{"rank": c.rank, "unit": c.unit, "tokens": c.n_tokens,
                                            "reason": c.reason} for c in result.cut]),
                             hide_index=True)

    if result is not None and not reader:
        st.subheader("Claims")
        cannot_check = ("The embedded 270M model cannot check claims: it does not follow the "
                        "instructions that extract claims as JSON and returns nothing usable. "
                        "Claim checking needs Ollama or an OpenAI-compatible server."
                        if backend == "embedded" else None)
        if cannot_check:
            st.caption(cannot_check)
        if st.button("Check each claim with the LLM", key="check_claims",
                     disabled=not reachable or bool(cannot_check)):
            from ragloupe.generate.claims import check_claims
            from ragloupe.generate.llm import get_client

            st.session_state["claims"] = run_with_elapsed(
                lambda: check_claims(result, get_client(settings)),
                "Extracting and verifying the claims")
        report = st.session_state.get("claims")
        if report is not None:
            st.metric("Answer score (0–10)", "—" if report.score is None else f"{report.score:.2f}")
            verdict_table([{
                "claim": c.claim.text, "verdict": c.verdict, "cited": "yes" if c.claim.cited else "no",
                "source passage": c.source or "—", "evidence quote": c.quote or "—",
                "note": c.note or ""} for c in report.checks])
        else:
            st.caption("Claim checking asks the LLM twice per batch of claims; the score formula "
                       "is in ragloupe.generate.claims.")

st.divider()
with page_errors():
    from ragloupe.ui.cache import index_documents
    from ragloupe.ui.check_panel import pasted_answer_check

    pasted_answer_check(settings, get_store(settings), index_documents(settings), reachable)
