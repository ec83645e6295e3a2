"""The Evaluation page's own-gold-set sections: your gold sets, LLM drafts, and an outside run file.

Each section reads widgets, calls evaluate/usersets.py, drafting.py or
outside.py, and lays out the result; the pipeline decides everything.
Question and answer text is data: shown in tables or escaped, never as markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import streamlit as st

from ragloupe.config import Settings
from ragloupe.errors import RagloupeError
from ragloupe.ui.text import md_escape
from ragloupe.ui.widgets import encode_sentences_with_progress

KEY = "goldsets"


def your_goldsets_section(settings: Settings) -> None:
    """List the user's gold sets; edit, delete and validate the items of one."""
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.usersets import goldsets_dir, list_user_goldsets

    st.header("Your gold sets")
    paths = list_user_goldsets(settings)
    if not paths:
        st.caption(md_escape(f"None yet in {goldsets_dir(settings)}. Mark a row as the right answer on "
                             "Search & compare, draft questions below, or `ragloupe goldset add`."))
        return
    rows = []
    for path in paths:
        try:
            rows.append({"gold set": path.stem, "questions": len(load_goldset(path).queries), "file": str(path)})
        except RagloupeError as exc:
            rows.append({"gold set": path.stem, "questions": None, "file": str(exc)})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    name = st.selectbox("Edit the items of", [p.stem for p in paths], key=f"{KEY}.edit")
    if name:
        _edit_items(settings, name)


def _edit_items(settings: Settings, name: str) -> None:
    from ragloupe.evaluate.usersets import read_goldset

    items = read_goldset(settings, name)["queries"]
    table = pd.DataFrame([{"delete": False, "id": q.get("query_id", ""),
                           "unit": _unit(q), "question": q.get("question", ""),
                           "answer": q.get("expected_answer", ""),
                           "added": f"{q.get('added_by', '?')} · {q.get('added_via', '?')} · {q.get('added_at', '')}"}
                          for q in items])
    edited = st.data_editor(table, hide_index=True, width="stretch", key=f"{KEY}.items-{name}",
                            disabled=["id", "unit", "added"])
    save_col, validate_col, _ = st.columns([1, 1, 4])
    if save_col.button("Save changes", key=f"{KEY}.save-{name}"):
        _save_items(settings, name, table, edited)
    if validate_col.button("Validate", key=f"{KEY}.validate-{name}"):
        _validate(settings, name)


def _save_items(settings: Settings, name: str, before: pd.DataFrame, after: pd.DataFrame) -> None:
    from ragloupe.evaluate.usersets import remove_items, update_item

    try:
        for old, new in zip(before.to_dict("records"), after.to_dict("records")):
            changes = {key: new[column] for key, column in (("question", "question"), ("expected_answer", "answer"))
                       if new[column] != old[column]}
            if changes and not new["delete"]:
                update_item(settings, name, new["id"], changes)
        doomed = [row["id"] for row in after.to_dict("records") if row["delete"]]
        if doomed:
            remove_items(settings, name, doomed)
    except RagloupeError as exc:
        st.error(md_escape(f"Not saved: {exc}"))
        return
    st.success(md_escape(f"Saved {name}" + (f"; deleted {', '.join(doomed)}" if doomed else "")))


def _validate(settings: Settings, name: str) -> None:
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.runs import index_snapshot
    from ragloupe.evaluate.usersets import check_goldset, goldset_path

    from ragloupe.ui.cache import get_store

    goldset = load_goldset(goldset_path(settings, name))
    snapshot = index_snapshot(settings, sorted({q.doc_id for q in goldset.queries}), get_store(settings))
    findings = check_goldset(goldset, snapshot)
    if not findings:
        st.success(f"{name}: {len(goldset.queries)} questions, no findings")
        return
    st.dataframe(pd.DataFrame([f.as_dict() for f in findings]), hide_index=True, width="stretch")


def drafts_section(settings: Settings, workspace) -> None:
    """Draft questions with the configured LLM; accept, edit or reject each offered draft
    (``workspace``: the app's, ui.cache.get_workspace)."""
    from ragloupe.evaluate.drafting import draft_for, no_llm_reason
    from ragloupe.generate.llm import get_client

    st.header("Draft questions with an LLM")
    client = get_client(settings)
    problem = no_llm_reason(client)
    if problem:
        st.info(md_escape(problem + ". Then drafts are checked before they are offered: the answer must be "
                          "on its page, and BM25 must not find twenty pages as good."))
        return
    with st.form(f"{KEY}.draft"):
        name_col, n_col = st.columns([3, 1])
        name = name_col.text_input("Gold set to draft for", value="drafted", key=f"{KEY}.draft_name")
        n = n_col.number_input("Pages or records", min_value=1, max_value=200, value=10, key=f"{KEY}.draft_n")
        clicked = st.form_submit_button(f"Draft with {client.label}")
    if clicked:
        with st.spinner("Drafting…"):
            draft_for(settings, name.strip(), int(n), workspace, client=client)
    _review_drafts(settings, name.strip(), workspace.store)


def _review_drafts(settings: Settings, name: str, store) -> None:
    from ragloupe.evaluate.runs import index_snapshot
    from ragloupe.evaluate.usersets import accept_drafts, dismiss_drafts, read_drafts

    body = read_drafts(settings, name)
    drafts = body.get("drafts", [])
    if not drafts:
        return
    meta = body["_meta"]
    st.caption(md_escape(f"{meta['offered']} of {meta['units_sampled']} drafts passed the checks "
                         f"(model {meta['model']}, prompt {meta['prompt_sha256'][:12]}, seed {meta['seed']})"))
    offered = [d for d in drafts if d["status"] == "offered"]
    table = pd.DataFrame([{"decision": "undecided", "id": d["draft_id"], "unit": d["unit"],
                           "question": d["question"], "answer": d["answer"]} for d in offered])
    if offered:
        edited = st.data_editor(table, hide_index=True, width="stretch", key=f"{KEY}.drafts-{name}",
                                disabled=["id", "unit"], column_config={"decision": st.column_config.SelectboxColumn(
                                    "decision", options=["undecided", "accept", "reject"], required=True)})
        if st.button("Apply decisions", key=f"{KEY}.apply-{name}"):
            rows = edited.to_dict("records")
            accepted = [r["id"] for r in rows if r["decision"] == "accept"]
            edits = {r["id"]: {"question": r["question"], "answer": r["answer"]} for r in rows}
            snapshot = index_snapshot(settings, sorted({d["doc_id"] for d in offered}), store)
            try:
                entries, warnings = accept_drafts(settings, name, accepted, snapshot.documents,
                                                  snapshot.unit_texts, edits=edits) if accepted else ([], [])
                dismiss_drafts(settings, name, [r["id"] for r in rows if r["decision"] == "reject"])
            except RagloupeError as exc:
                st.error(md_escape(f"Not applied: {exc}"))
                return
            st.success(md_escape(f"{name}: {len(entries)} draft(s) accepted as gold"))
            for warning in warnings:
                st.warning(md_escape(warning))
    rejected = [d for d in drafts if d["status"] == "rejected"]
    if rejected:
        with st.expander(f"{len(rejected)} draft(s) not offered, and why"):
            st.dataframe(pd.DataFrame([{"id": d["draft_id"], "unit": d["unit"], "question": d["question"],
                                        "reason": d["reason"]} for d in rejected]), hide_index=True, width="stretch")


def outside_run_section(settings: Settings, goldset_paths: Mapping[str, Path], modes: list[str],
                        workspace) -> None:
    """Score an uploaded run file from another system and compare it with ragloupe's modes."""
    st.header("Another system's run")
    st.caption("A TREC run file (qid Q0 docno rank score tag, docno doc_id#pN or a record id) or JSON "
               'Lines ({"query_id", "ranked": [...]}), scored on the gold sets like a ragloupe run.')
    with st.form(f"{KEY}.outside"):
        upload = st.file_uploader("Run file", type=["trec", "txt", "run", "jsonl", "tsv"], key=f"{KEY}.run_file")
        gold_col, mode_col = st.columns(2)
        chosen = gold_col.multiselect("Gold sets it answers", list(goldset_paths), key=f"{KEY}.run_goldsets")
        against = mode_col.multiselect("Compare with", modes, default=modes[:1], key=f"{KEY}.run_against")
        clicked = st.form_submit_button("Score the run")
    if clicked:
        if upload is None or not chosen:
            st.warning("Upload a run file and pick the gold sets its questions come from.")
            return
        _score_upload(settings, upload.name, upload.getvalue(), [goldset_paths[n] for n in chosen], against,
                      workspace)


def _score_upload(settings: Settings, name: str, raw: bytes, paths: list[Path], against: list[str],
                  workspace) -> None:
    from ragloupe.diagnostics.outside_view import score_and_compare
    from ragloupe.evaluate.goldset import load_goldsets
    from ragloupe.evaluate.runs import searched_documents
    from ragloupe.ui.tables import run_comparison_rows, metrics_rows

    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        st.error(md_escape(f"{name}: not a text file (UTF-8 expected)"))
        return
    # The modes are run on each question's own document (score_outside's scope).
    encode_sentences_with_progress(workspace.with_settings(settings), against,
                                   searched_documents(load_goldsets(paths), "doc"))
    with st.spinner("Scoring the run and ragloupe's modes…"):
        result = score_and_compare(settings, name, text, paths, against, workspace)
    if result.problems:
        st.error(md_escape(f"{name}: {len(result.problems)} problem(s); nothing was scored or saved as a run"))
        st.dataframe(pd.DataFrame([p.as_dict() for p in result.problems]), hide_index=True, width="stretch")
        return
    st.dataframe(pd.DataFrame(metrics_rows([result.report, *result.baselines])), hide_index=True, width="stretch")
    st.caption(result.report.data["failures"]["note"])
    for baseline, comparison in zip(result.baselines, result.comparisons):
        st.subheader(md_escape(f"{result.report.data['mode']} against {baseline.data['mode']}"))
        for line in comparison.verdicts:
            st.text(line)
        st.dataframe(pd.DataFrame(run_comparison_rows(comparison)), hide_index=True, width="stretch")


def _unit(item: Mapping) -> str:
    doc = item.get("doc_id", "")
    if item.get("expected_records"):
        return f"{doc}#{item['expected_records'][0]}"
    pages = item.get("expected_pages") or ["?"]
    return f"{doc}#p{pages[0]}"
