"""Search & compare: one question, up to three retrieval modes in one table."""


import streamlit as st

from ragloupe.diagnostics.comparison import (comparison_csv, comparison_rows, comparison_table, engine_names,
                                             fusion_used, row_detail)
from ragloupe.diagnostics.labels import rank_modes
from ragloupe.diagnostics.gold import (gold_questions_by_document, gold_units, match_question,
                                       similar_questions)
from ragloupe.retrieve.query_analysis import describe
from ragloupe.ui import state
from ragloupe.ui.background import index_notice
from ragloupe.ui.cache import (cached_goldsets, current_settings, get_workspace,
                               index_documents)
from ragloupe.ui.charts import bump_chart
from ragloupe.ui.colours import BUMP_LEGEND
from ragloupe.ui.guard import page_errors
from ragloupe.ui.sidebar import examiner
from ragloupe.ui.inputs import ALL_QUALITIES, page_range_problem, search_filters
from ragloupe.ui.navigation import page_file
from ragloupe.ui.tables import COMPARISON_ALIGNMENT, column_width, comparison_styler
from ragloupe.ui.table_view import show_chunk
from ragloupe.ui.text import md_escape, query_terms, rewrite_line
from ragloupe.ui.labelling import label_form
from ragloupe.ui.why import why_ranked
from ragloupe.ui.widgets import encode_sentences_with_progress, hit_detail

PAGE = "search"
LEVELS = {"page": "a row per page (or record)", "chunk": "a row per chunk"}

st.title("Search & compare")
st.caption("One row per page (or chunk): each mode's final rank (\"hybrid mode #\"), then each "
           "engine's own rank and raw score (\"dense engine #\"), the RRF and learned scores. — means "
           "that mode or engine did not list it; a grey rank is below the mode's top k; green and amber "
           "mark the rows where the modes disagree. Click a row to open its chunk, see why it ranked "
           "there, or mark it as the right answer.")


def _use_gold_question(query) -> None:
    """Fill the form with a gold question and its document, and search at once."""
    state.put(PAGE, "question", query.question)
    state.put(PAGE, "docs", [query.doc_id])
    st.session_state["_search_pending"] = True


def _picked_gold() -> None:
    query = st.session_state.get(f"{PAGE}.gold_question")
    if query is not None:
        _use_gold_question(query)


with page_errors():
    index_notice()
    from ragloupe.retrieve.fusion import METHODS as FUSIONS
    from ragloupe.retrieve.search import MODES

    settings = current_settings()
    reader = examiner()
    # ragloupe's modes, then each plugin or attached engine as a mode of its own (ragloupe attach)
    base_modes = [mode for mode in MODES if not mode.endswith("+rewrite")] + list(
        get_workspace(settings).engines().outside())
    documents = index_documents(settings)
    state.keep(PAGE, {
        "question": "", "modes": ["dense", "bm25", "hybrid"], "k": settings.top_k,
        "level": "page", "rewrite": False, "docs": [], "page_from": 0, "page_to": 0,
        "quality": list(ALL_QUALITIES), "fusion": settings.fusion,
        "weight_dense": float(settings.weight_dense), "weight_bm25": float(settings.weight_bm25),
        "threshold": 0.0, "gold_doc": None, "gold_question": None,
        "prefer_tables": settings.prefer_tables, "table_sections": settings.prefer_tables_sections})
    state.restrict(PAGE, "docs", documents)

    goldsets = cached_goldsets(settings)
    by_document = {doc: queries for doc, queries in gold_questions_by_document(goldsets).items()
                   if doc in documents}
    with st.expander("Pick a gold question (its gold pages are starred)"):
        doc_col, question_col = st.columns([1, 3])
        gold_doc = doc_col.selectbox("Document", list(by_document), key=f"{PAGE}.gold_doc",
                                     placeholder="any document", index=None)
        offered = (by_document.get(gold_doc, []) if gold_doc
                   else [q for queries in by_document.values() for q in queries])
        if st.session_state.get(f"{PAGE}.gold_question") not in offered:
            st.session_state[f"{PAGE}.gold_question"] = None
        question_col.selectbox(f"Gold question ({len(offered)})", offered, index=None,
                               key=f"{PAGE}.gold_question", on_change=_picked_gold,
                               format_func=lambda q: f"{q.query_id} · {q.question}",
                               placeholder="choose one to search it")

    with st.form("search"):
        question = st.text_input("Question", key=f"{PAGE}.question",
                                 placeholder="e.g. What was the total capital expenditure?")
        modes_col, k_col, level_col, rewrite_col = st.columns([4, 1, 2, 3])  # the rewrite label whole at 1280 px
        modes = modes_col.multiselect("Modes (up to three)", base_modes, max_selections=3,
                                      key=f"{PAGE}.modes")
        k = k_col.number_input("k", min_value=1, max_value=50, step=1, key=f"{PAGE}.k")
        level = level_col.radio("Rows", list(LEVELS), key=f"{PAGE}.level", horizontal=True,
                                format_func=lambda name: LEVELS[name])
        rewrite = rewrite_col.toggle("Rewrite the query (LLM)", key=f"{PAGE}.rewrite",
                                     help="Appends an LLM rewrite to the question; falls back to "
                                          "the question alone when no LLM answers.")
        with st.expander("Filters"):
            chosen_docs = st.multiselect("Documents", documents, key=f"{PAGE}.docs",
                                         placeholder="all documents")
            first, last = st.columns(2)
            page_from = first.number_input("From page", min_value=0, step=1,
                                           key=f"{PAGE}.page_from", help="0: no lower bound")
            page_to = last.number_input("To page", min_value=0, step=1, key=f"{PAGE}.page_to",
                                        help="0: no upper bound")
            qualities = st.multiselect("Quality", ALL_QUALITIES, key=f"{PAGE}.quality")
        with st.expander("Fusion, tables and cut (this search only)"):
            fusion_col, dense_col, bm25_col, cut_col = st.columns(4)
            fusion = fusion_col.selectbox("Fusion", FUSIONS, key=f"{PAGE}.fusion",
                                          format_func=lambda m: {"rrf": "reciprocal rank (RRF)",
                                                                 "minmax": "min-max scores",
                                                                 "learned": "learned (model)"}.get(m, m),
                                          help="Learned fusion ranks the kinds of unit its model was "
                                               "trained on (pages and records, for the shipped one) under "
                                               "the settings it was trained with (the embedding model, "
                                               "chunking, BM25's parameters, the dense engine's query adapter and "
                                               "sentence weight); other candidates, or any search under other "
                                               "settings, are fused by min-max with the weights here, and the "
                                               "page says why.")
            weight_dense = dense_col.slider("Dense weight", 0.0, 3.0, step=0.1,
                                            key=f"{PAGE}.weight_dense")
            weight_bm25 = bm25_col.slider("BM25 weight", 0.0, 3.0, step=0.1,
                                          key=f"{PAGE}.weight_bm25")
            threshold = cut_col.slider("Keep hits scoring at least this share of the top score",
                                       0.0, 1.0, step=0.05, key=f"{PAGE}.threshold",
                                       help="0 keeps every hit. Applies to every mode.")
            tables_col, sections_col = st.columns([1, 3])
            prefer_tables = tables_col.toggle("Prefer table chunks", key=f"{PAGE}.prefer_tables",
                                              help="For a question that asks for a figure, table chunks' "
                                                   "scores times (1 + RAGLOUPE_PREFER_TABLES_BOOST).")
            table_sections = sections_col.text_input(
                "Only tables in sections matching (regular expression)", key=f"{PAGE}.table_sections",
                placeholder="empty: every section, e.g. financ|accounts",
                help="EvidenceRAG's TABLE_BOOST_ALLOWED_SECTION_PATTERNS (RAGLOUPE_PREFER_TABLES_SECTIONS).")
        submitted = st.form_submit_button("Search", type="primary", key=f"{PAGE}.submit")

    pending = st.session_state.pop("_search_pending", False)
    if submitted or pending:
        problem = page_range_problem(page_from, page_to)
        if not question.strip():
            st.warning("Type a question (or pick a gold question above).")
        elif not modes:
            st.warning("Pick at least one mode.")
        elif problem:
            st.warning(problem)
        else:
            filters = search_filters(chosen_docs, page_from, page_to, qualities)
            overrides = {"fusion": fusion, "weight_dense": weight_dense, "weight_bm25": weight_bm25,
                         "prefer_tables": prefer_tables, "prefer_tables_sections": table_sections.strip(),
                         "top_k": int(k)}
            if threshold > 0:
                overrides.update(dynamic_cut="threshold", dynamic_cut_value=threshold)
            full_modes = [f"{mode}+rewrite" if rewrite else mode for mode in modes]
            workspace = get_workspace(settings)
            # rank_modes explains: both built-in engines run in every mode.
            encode_sentences_with_progress(workspace, full_modes, filters.get("doc_ids"), explain=True)
            with st.spinner(f"Searching ({', '.join(full_modes)})…"):
                rankings = rank_modes(question, full_modes, int(k), filters, overrides, settings,
                                      workspace=workspace)
            state.result(PAGE, {"question": question, "k": int(k), "level": level, "fusion": fusion,
                                "filters": filters, "rankings": rankings, "collection": settings.collection})
            st.session_state.pop(f"{PAGE}.table", None)
        if not qualities:
            st.caption("No quality picked: pages of every quality were searched.")

    shown = state.result(PAGE)
    if shown and shown.get("collection", settings.collection) == settings.collection:
        rankings, k, level = shown["rankings"], shown["k"], shown["level"]
        modes_shown = list(rankings)
        matched = match_question(shown["question"], goldsets)
        gold = gold_units(matched)
        if matched:
            st.info(md_escape("Gold question " + ", ".join(q.query_id for q in matched)
                              + ": its gold units are starred ★ (" + ", ".join(sorted(gold)) + ")"))
        else:
            close = similar_questions(shown["question"], goldsets)
            if close:
                st.caption("Not a gold question, so nothing is starred (gold units are known "
                           "only for the gold set's own wording). Did you mean:")
                for query in close:
                    st.button(f"{query.query_id}: {query.question}", key=f"mean-{query.query_id}",
                              on_click=_use_gold_question, args=(query,))
        timing = st.columns(len(modes_shown))
        for column, mode in zip(timing, modes_shown if not reader else []):
            ranking = rankings[mode]
            column.caption(f"**{md_escape(mode)}**: {min(k, len(ranking.hits))} hits of "
                           f"{ranking.candidates} candidates · "
                           f"{1000 * ranking.timings.get('total', 0):.0f} ms")
            if rewrite_said := rewrite_line(ranking):
                column.text(rewrite_said)
            if ranking.fusion:  # what fused, and why learned fusion stood aside when it did
                column.text(f"Fusion: {ranking.fusion}")
            if ranking.query_analysis:  # the period read, and the year's report it searched
                column.text("Query analysis: " + describe(ranking.query_analysis))

        rows = comparison_rows(rankings, level=level, k=k, gold_units=gold)
        one_doc = len({row.doc_id for row in rows}) <= 1
        if one_doc and rows:
            st.caption(f"Document: {md_escape(rows[0].doc_id)}")
        fusions = {mode: fusion_used(mode, ranking, shown.get("fusion", settings.fusion))
                   for mode, ranking in rankings.items()}
        for used in fusions.values():  # said above the table, where no one can miss it
            if used.fell_back:
                st.warning(md_escape(used.warning()), icon=":material/warning:")
        engines = engine_names(rankings)
        table = comparison_table(rows, modes_shown, k, level=level, show_doc=not one_doc,
                                 engines=engines, fusions=fusions)
        pinned = {"gold", "doc", "page", "record", "chunk"}
        config = {column.name: st.column_config.Column(
                      column.name, help=column.help, pinned=column.name in pinned,
                      width=column_width(column, [record.get(column.name) for record in table.records]),
                      alignment=COMPARISON_ALIGNMENT)
                  for column in table.columns}
        st.space("medium")  # the grid's toolbar floats above its top edge: keep it off the line above
        event = None if reader else st.dataframe(
            comparison_styler(table), hide_index=True, width="stretch", column_config=config,
            key=f"{PAGE}.table", on_select="rerun", selection_mode="single-row", placeholder="—",
            height=min(38 + 35 * max(len(rows), 1), 640))
        if reader:
            st.caption("Examiner view: the engines' ranks and scores are hidden (the sidebar toggle shows them).")
        else:
            st.download_button("Download this table (CSV)", comparison_csv(table), mime="text/csv",
                               file_name="search_compare.csv", key=f"{PAGE}.csv",
                               help="The columns and values shown above; an empty cell where the table "
                                    "shows — (not listed).")
        selected = event.selection.rows if event is not None else []
        terms = query_terms(shown["question"])
        if selected and selected[0] < len(rows):
            row = rows[selected[0]]
            st.subheader(md_escape(f"{row.unit}{' ★ gold' if row.gold else ''}"))
            for line in row_detail(row, modes_shown, level=level, engines=engines):
                st.text(line)
            chunk_note = (f"chunk {row.chunk.position} of the {'record' if row.record_id else 'page'}, "
                          "the one the best-placing mode ranked highest" if level == "page"
                          else f"chunk {row.chunk.position}")
            st.text(f"Shown below: {chunk_note} | section: {row.chunk.section or '—'} | "
                    f"quality: {row.chunk.quality} | kind: {row.chunk.kind}")
            if row.learned_hit is not None:
                with st.expander("Why this rank (learned fusion's feature contributions)"):
                    why_ranked(row.learned_hit)
            show_chunk(row.chunk, terms)
            label_form(settings, shown["question"], row)
        elif rows and not reader:
            st.caption("Click a row to open its full chunk here.")

        send_col, map_col, _ = st.columns([1, 1, 4])
        carried = {"question": shown["question"], "docs": shown["filters"].get("doc_ids", [])}
        if send_col.button("Send to Answer", key="send_answer"):
            state.carry("answer", carried)
            st.switch_page(page_file("answer"))
        if map_col.button("Show on the map", key="send_map"):
            state.carry("embeddings", {**carried, "mode": modes_shown[-1].replace("+rewrite", "")})
            st.switch_page(page_file("embeddings"))

        st.subheader("Hits by mode")
        for tab, mode in zip(st.tabs(modes_shown), modes_shown):
            with tab:
                ranking = rankings[mode]
                top = ranking.hits[:k]
                for hit in top:
                    hit_detail(hit, terms, gold)
                if top and not reader:
                    st.plotly_chart(bump_chart(ranking, gold, k=k), key=f"bump-{mode}",
                                    config={"displayModeBar": False})
                    st.caption("Each line is a hit (a chunk): its dense engine rank, BM25 engine rank "
                               f"and final rank in this mode (axes the same in every mode; {BUMP_LEGEND}; "
                               "no point: that engine did not list it in its first "
                               f"{settings.candidate_window}).")
