"""Small Streamlit widgets the pages share. Document text always goes through
ragloupe.ui.text (escaped, then st.html), never into markdown."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import streamlit as st

from ragloupe.diagnostics.comparison import BUILT_IN_ENGINES, ENGINE_SCORE_NAMES
from ragloupe.errors import RagloupeError
from ragloupe.index.pipeline import encoded_sentences_line, encoding_sentences_line, filled_sentences_line
from ragloupe.models import Chunk, Hit
from ragloupe.retrieve.modes import runs_dense
from ragloupe.ui.table_view import show_chunk
from ragloupe.ui.text import fmt_change, fmt_rank, fmt_score, highlight_html, md_escape
from ragloupe.ui.why import why_ranked


def chunk_label(chunk: Chunk) -> str:
    where = f"record {chunk.record_id}" if chunk.record_id else f"p.{chunk.page}"
    return f"{chunk.doc_id} · {where}"


def chunk_text(text: str, terms: Iterable[str] = ()) -> None:
    """The full chunk text, inert, with the query's terms marked."""
    st.html(highlight_html(text, list(terms)))


def chunk_metadata(chunk: Chunk) -> None:
    """Where the chunk came from and how it was extracted, as a table (inert text)."""
    st.dataframe(
        [{"field": name, "value": str(value)} for name, value in (
            ("chroma id", chunk.chunk_id), ("document", chunk.doc_id), ("page", chunk.page),
            ("record id", chunk.record_id or "—"), ("title", chunk.title or "—"),
            ("section", chunk.section or "—"), ("quality", chunk.quality),
            ("quality reason", chunk.reason or "—"), ("extraction method", chunk.method or "—"),
            ("tokens", chunk.n_tokens), ("position on page", chunk.position),
            ("kind", chunk.kind),
            ("table rows", f"table {chunk.table_index + 1}, rows {chunk.row_start + 1}–{chunk.row_end}"
             if chunk.kind == "table" else "—"))],
        hide_index=True, width="stretch")


def hit_engines(hit: Hit) -> list[str]:
    """The engines that looked at the hit, dense and bm25 first (read from the hit, so an attached
    outside engine is named too)."""
    names = set(hit.per_engine)
    return [e for e in BUILT_IN_ENGINES if e in names] + sorted(names - set(BUILT_IN_ENGINES))


def engine_ranks_label(hit: Hit) -> str:
    """'dense engine #3 · bm25 engine —' for a collapsed hit's label."""
    return " · ".join(f"{engine} engine {fmt_rank(_view(hit.per_engine.get(engine))[0])}"
                      for engine in hit_engines(hit))


def hit_detail(hit: Hit, terms: Iterable[str], gold_units: Collection[str] = ()) -> None:
    """An expander per hit (a chunk), each engine's rank in its label: its numbers, then the full chunk."""
    gold = " ★ gold" if hit.chunk.unit in gold_units else ""
    kind = " · table" if hit.chunk.kind == "table" else ""
    with st.expander(md_escape(f"#{hit.rank} {chunk_label(hit.chunk)} chunk {hit.chunk.position}{kind} · "
                               f"{engine_ranks_label(hit)}{gold}")):
        engines = " | ".join(
            f"{engine} engine {fmt_rank(view[0])}"
            + ("" if view[0] is None else f" · {ENGINE_SCORE_NAMES.get(engine, 'score')} {fmt_score(view[1])}")
            for engine in hit_engines(hit) for view in [_view(hit.per_engine.get(engine))])
        st.text(
            f"chunk score {fmt_score(hit.score, 4)} | {engines} | fused {fmt_score(hit.fused_score, 4)} | "
            f"RRF {fmt_score(hit.rrf_score, 4)} | rerank {fmt_change(hit.rerank_change)} | "
            f"margin {fmt_score(hit.margin, 4)}\n"
            f"section: {hit.chunk.section or '—'} | quality: {hit.chunk.quality}"
            + (f" ({hit.chunk.reason})" if hit.chunk.reason else "") + f" | kind: {hit.chunk.kind}")
        why_ranked(hit)
        show_chunk(hit.chunk, terms)


def _view(view) -> tuple[int | None, float | None]:
    return (None, None) if view is None else (view.rank, view.score)


def run_with_elapsed(work, label: str):
    """Run ``work()`` in a thread and show the seconds going by; return what it returns.

    A long LLM call (the embedded model takes 40-110 s on 2 cores) then shows
    a sign of life. The "Stop waiting" button reruns the page, which ends this
    wait; the abandoned call finishes in the background and its result is
    dropped. ``work`` must not call Streamlit.
    """
    import threading
    import time

    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the page's own error handling below
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="ragloupe-wait", daemon=True)
    started = time.monotonic()
    thread.start()
    status = st.empty()
    st.button("Stop waiting", key="stop_waiting")
    while thread.is_alive():
        status.info(f"{label}… {time.monotonic() - started:.0f} s")
        thread.join(0.5)
    status.empty()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_with_progress(work, label: str = "Indexing…"):
    """Run ``work(progress_callback)`` with a live progress bar; return what it returns.

    The callback takes anything with ``done``, ``total`` and optionally
    ``stage`` and ``path`` (the indexer's Progress, the evaluator's).
    """
    bar = st.progress(0.0, text=label)

    def progress(step) -> None:
        total = max(int(getattr(step, "total", 0) or 0), 1)
        done = min(int(getattr(step, "done", 0) or 0), total)
        stage = getattr(step, "stage", "")
        path = str(getattr(step, "path", "") or "")
        name = path.rsplit("/", 1)[-1]
        bar.progress(done / total, text=f"{stage} {done}/{total} {name}".strip())

    result = work(progress)
    bar.progress(1.0, text="Done")
    return result


def index_summary(summary) -> None:
    """An IndexSummary: what changed, what was left out and why, what failed."""
    cols = st.columns(5)
    cols[0].metric("New", len(summary.new))
    cols[1].metric("Modified", len(summary.modified))
    cols[2].metric("Unchanged", len(summary.unchanged))
    cols[3].metric("Refused", len(summary.errors), help="not indexed: the reasons are below")
    cols[4].metric("Deleted", len(summary.deleted))
    cols = st.columns(4)
    cols[0].metric("Pages indexed", f"{summary.pages_indexed:,}")
    cols[1].metric("Pages excluded", f"{summary.pages_excluded:,}")
    cols[2].metric("Chunks added", f"{summary.chunks_added:,}")
    cols[3].metric("Chunks removed", f"{summary.chunks_removed:,}")
    st.caption(f"{summary.documents} documents, {summary.chunks:,} chunks in the index after the "
               f"run; {summary.timings.get('total', 0):.1f} s"
               + (" (rebuilt from scratch)" if summary.rebuilt else "")
               + (f"; repaired: {', '.join(summary.repaired)}" if summary.repaired else ""))
    if said := filled_sentences_line(summary.as_dict()):
        (st.info if summary.sentences_filled else st.warning)(said[0].upper() + said[1:] + ".")
    if summary.errors:
        st.error(f"{len(summary.errors)} file(s) not indexed")
        st.dataframe([{"file": e.path, "document": e.doc_id, "reason": e.error}
                      for e in summary.errors], hide_index=True, width="stretch")
    if summary.unindexed:
        st.warning(f"{len(summary.unindexed)} document(s) with no page indexed: nothing of them is searchable")
        st.dataframe([{"document": d["doc_id"], "pages": d["pages"],
                       "why": "; ".join(f"{n} {reason}" for reason, n in d["reasons"].items())}
                      for d in summary.unindexed], hide_index=True, width="stretch")
    if summary.excluded_reasons:
        st.subheader("Pages excluded, by reason")
        st.dataframe([{"reason": reason, "pages": n}
                      for reason, n in sorted(summary.excluded_reasons.items())],
                     hide_index=True, width="stretch")
    if summary.review_findings:
        st.subheader("Records findings to review (not blocking)")
        st.dataframe([{k: str(v) for k, v in finding.items()} for finding in summary.review_findings],
                     hide_index=True, width="stretch")


def flash(message: str, kind: str = "success") -> None:
    """Keep a message for the next run, so it survives st.rerun()."""
    st.session_state.setdefault("_flash", []).append((kind, message))


def show_flash() -> None:
    """Show (once) the messages kept by flash()."""
    for kind, message in st.session_state.pop("_flash", []):
        {"success": st.success, "error": st.error, "warning": st.warning}.get(kind, st.info)(message)


def encode_sentences_with_progress(workspace, modes: Iterable[str] = (), doc_ids: Iterable[str] | None = None,
                                   explain: bool = False) -> str:
    """Before a page searches ``doc_ids`` (default: the whole index) in ``modes``: encode the sentence
    vectors its first search would otherwise stop to encode behind a silent spinner
    (Workspace.encode_missing_sentences), with a progress bar saying what and why; returns what
    the bar says at the end. Nothing ("") when no mode runs the dense engine or none are missing."""
    if not runs_dense(modes, explain):
        return ""
    doc_ids = list(doc_ids) if doc_ids is not None else None
    missing = workspace.missing_sentences(doc_ids)
    if not missing:
        return ""
    line = encoding_sentences_line(len(missing))
    line = line[0].upper() + line[1:]
    bar = st.progress(0.0, text=md_escape(line))

    def step(event) -> None:
        if event.stage == "done":
            return
        bar.progress(min((event.done + event.part) / event.total, 1.0),
                     text=md_escape(f"{line}: {event.done + 1} of {event.total} · {event.path}"))

    said = encoded_sentences_line(workspace.encode_missing_sentences(doc_ids, progress=step))
    said = said[0].upper() + said[1:] + "."
    bar.progress(1.0, text=md_escape(said))
    return said


def evaluate_with_progress(goldsets: list, modes: list[str], ks: list[int], scope: str, settings,
                           workspace) -> list:
    """One evaluation run per mode, with a progress bar that moves per question.

    runs.evaluate() has no progress hook, but it asks its ``search_fn`` once
    per question, so a counting wrapper around search() drives the bar. ``workspace``: the
    app's (ui.cache.get_workspace).
    """
    from ragloupe.evaluate.runs import evaluate, searched_documents
    from ragloupe.retrieve.search import search

    encode_sentences_with_progress(workspace.with_settings(settings), modes, searched_documents(goldsets, scope))
    total = max(1, len(modes) * sum(len(g.queries) for g in goldsets))
    bar = st.progress(0.0, text="Evaluating…")
    asked = [0]

    def counting_search(*args, **kwargs):
        ranking = search(*args, **kwargs)
        asked[0] += 1
        bar.progress(min(asked[0] / total, 1.0),
                     text=f"{kwargs.get('mode', '')}: question {asked[0]} of {total}")
        return ranking

    try:
        reports = [evaluate(goldsets, mode=mode, ks=ks, scope=scope, search_fn=counting_search,
                            workspace=workspace.with_settings(settings))
                   for mode in modes]
    except RagloupeError:  # nothing was evaluated (no question scorable ...): no bar stuck at "Evaluating…"
        bar.empty()
        raise
    bar.progress(1.0, text=f"Done: {len(reports)} run(s) written to {settings.path('runs_dir')}")
    return reports
