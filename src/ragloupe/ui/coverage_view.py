"""The Evaluation page's Gold-set coverage section: where the chosen gold sets' pages sit in
their documents beside where the documents' pages are, and the audit's warnings.

The audit is evaluate/coverage.py, the one `ragloupe eval` and `ragloupe tune` print; it needs
no search, so it is shown for the gold sets chosen in the form before any run. Section
headings come from the documents: they are shown in tables and as plain text, never markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from ragloupe.config import Settings
from ragloupe.evaluate.coverage_text import percent
from ragloupe.ui.text import md_escape

SECTIONS_SHOWN = 8


def groups_of(coverage: Mapping) -> list[Mapping]:
    """The pooled group first when several gold sets are audited, then each gold set."""
    groups = list(coverage["goldsets"])
    return (list(coverage["pooled"].values()) + groups) if len(groups) > 1 else groups


def position_rows(coverage: Mapping) -> list[dict]:
    """One row per tenth of the documents: each group's gold share and expected share, as text."""
    groups = groups_of(coverage)
    rows = []
    for t, stratum in enumerate(groups[0]["dimensions"]["position"]["strata"]):
        row = {"tenth of the document": stratum["label"]}
        for group in groups:
            cell = group["dimensions"]["position"]["strata"][t]
            row[f"{group['name']}: gold"] = percent(cell["share"])
            row[f"{group['name']}: expected"] = percent(cell["expected"])
        rows.append(row)
    return rows


def stratum_rows(coverage: Mapping, dimension: str, limit: int = SECTIONS_SHOWN) -> list[dict]:
    """Each group's strata of a dimension (its largest sections first), with the test's verdict."""
    rows = []
    for group in groups_of(coverage):
        for stratum in group["dimensions"][dimension]["strata"][:limit]:
            rows.append({"gold set": group["name"], dimension: stratum["label"],
                         "gold": percent(stratum["share"]), "expected": percent(stratum["expected"]),
                         "flag": {"over": "more than expected", "under": "fewer than expected"}.get(
                             stratum.get("flag", ""), "")})
    return rows


def position_chart(coverage: Mapping, height: int = 300) -> go.Figure:
    """Bars: the first group's share of gold pages per tenth; a line: the documents' own share."""
    group = groups_of(coverage)[0]
    strata = group["dimensions"]["position"]["strata"]
    labels = [s["label"].split(" (")[0] for s in strata]
    figure = go.Figure()
    figure.add_trace(go.Bar(x=labels, y=[s["share"] for s in strata], name="gold pages",
                            hovertemplate="%{x}: %{y:.0%} of the gold pages<extra></extra>"))
    figure.add_trace(go.Scatter(x=labels, y=[s["expected"] for s in strata], mode="lines+markers",
                                name="the documents' pages (expected)",
                                hovertemplate="%{x}: %{y:.0%} of the pages<extra></extra>"))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         title={"text": f"{group['name']}: where the gold pages sit", "font": {"size": 13}},
                         yaxis={"tickformat": ".0%", "title": "share"}, xaxis_title="tenth of the document")
    return figure


def show_in_sample(coverage: Mapping) -> None:
    """The audit's notes that the query adapter learned from these questions, when it did (and, in a
    tuning report, that tune retrained it in its folds), and that the embedding model was fine-tuned
    on them: shown by the results they qualify."""
    adapter = coverage.get("query_adapter") or {}
    if in_sample := adapter.get("warning"):
        st.warning(md_escape(in_sample[0].upper() + in_sample[1:] + "."))
    elif retrained := adapter.get("note"):  # tune's: the adapter was retrained in its folds
        st.info(md_escape(retrained[0].upper() + retrained[1:] + "."))
    if model := (coverage.get("embedding_model") or {}).get("warning"):
        st.warning(md_escape(model[0].upper() + model[1:] + "."))


def show_coverage(coverage: Mapping) -> None:
    """Lay out one coverage audit: warnings as plain text, the position chart and the tables (the
    in-sample note stands beside the figures it qualifies: show_in_sample)."""
    if coverage["warnings"]:
        st.warning("The gold sets do not cover their documents evenly: figures measured on them hold for "
                   "the parts they cover. What the audit found:")
        for warning in coverage["warnings"]:
            st.text(warning)
    elif any(g["judged"] for g in groups_of(coverage)):
        st.success("No skew found: the gold pages sit where the documents' pages are, within the test's margin.")
    for group in groups_of(coverage):
        if not group["judged"]:
            st.caption(f"{group['name']}: {group['note']}")
    st.plotly_chart(position_chart(coverage), key="coverage_position")
    st.subheader("By tenth of the document")
    st.dataframe(position_rows(coverage), hide_index=True, width="stretch")
    st.subheader("By section")
    st.dataframe(stratum_rows(coverage, "section"), hide_index=True, width="stretch")
    st.subheader("Table or prose page")
    st.dataframe(stratum_rows(coverage, "kind"), hide_index=True, width="stretch")
    st.caption(f"Rule: {coverage['rule']}. Table pages: {coverage['table_rule']}.")


def coverage_section(settings: Settings, goldset_paths: Sequence[Path], store) -> None:
    """The audit of the gold sets chosen in the form, against the index (no search needed)."""
    from ragloupe.diagnostics.gold import load_goldsets
    from ragloupe.evaluate.coverage_sources import coverage_report

    st.header("Gold-set coverage")
    st.caption("Where the chosen gold sets' pages sit in their documents (by tenth, section, table or prose "
               "page) beside where the documents' own pages are, and whether the learned model in force "
               "leans on the difference. `ragloupe eval` prints the same audit.")
    goldsets, _ = load_goldsets(goldset_paths)
    if not goldsets:
        st.caption("Choose a gold set above to see its coverage.")
        return
    show_coverage(coverage_report(goldsets, settings, store, settings.mode))
