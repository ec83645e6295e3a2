"""Plotly figures for the pages. Pure: records in, a figure out, no Streamlit."""

from __future__ import annotations

import html
from collections.abc import Collection

import plotly.graph_objects as go

from ragloupe.diagnostics.run_map import NOT_IN_RUN
from ragloupe.models import Ranking
from ragloupe.ui import colours
from ragloupe.ui.tables import ENGINES, engine_rank

STAGES = (*ENGINES, "final")  # the built-ins' axes, always drawn so two modes' charts read alike


def stages_of(hits) -> tuple[str, ...]:
    """dense, bm25, then every other engine that ranked these hits (read from them), then final."""
    others = dict.fromkeys(e for hit in hits for e in hit.per_engine if e not in ENGINES)
    return (*ENGINES, *others, "final")


def bump_chart(ranking: Ranking, gold_units: Collection[str] = (), k: int | None = None,
               height: int = 300) -> go.Figure:
    """Each of the first k hits as a line through its dense rank, bm25 rank (and any other engine's
    that ranked the hits: a plugin's, an attached one's) and final rank.

    An engine that did not list the hit leaves a gap (no point), so a line
    starting at "final" only says plainly that one engine alone put it there.
    The rank axis runs from 1 to the deepest engine rank shown, the legend
    names each line, so two modes' charts read the same way.
    """
    figure = go.Figure()
    hits = ranking.hits[:k] if k else ranking.hits
    stages = stages_of(hits)
    engines = stages[:-1]
    deepest = max([hit.rank for hit in hits] + [engine_rank(hit, e) or 0 for hit in hits
                                                  for e in engines] + [1])
    for hit in hits:
        ranks = [engine_rank(hit, engine) for engine in engines] + [hit.rank]
        gold = hit.chunk.unit in gold_units
        label = _escape(f"#{hit.rank} {hit.chunk.doc_id} p.{hit.chunk.record_id or hit.chunk.page}"
                        + (" ★ gold" if gold else ""))
        figure.add_trace(go.Scatter(
            x=list(stages), y=ranks, mode="lines+markers", name=label, connectgaps=False,
            line={"width": 3.5 if gold else 1.5, "color": colours.GOLD if gold else colours.BUMP_OTHER,
                  "dash": "solid" if gold else "dot"},
            marker={"symbol": "diamond" if gold else "circle", "size": 10 if gold else 6},
            hovertemplate=f"{label}<br>%{{x}}: rank %{{y}}<extra></extra>"))
    figure.update_yaxes(range=[deepest + 0.5, 0.5], title="rank")
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 10, "b": 10},
                         showlegend=True, legend={"font": {"size": 10}})
    return figure


def embedding_map(points: list[dict], colour_by: str, marks: dict[str, list[dict]] | None = None,
                  height: int = 620) -> go.Figure:
    """The 2-D chunk map coloured by ``colour_by``, with marked points drawn on top.

    ``marks`` maps a legend name ("query", "hits", "gold") to rows with x, y
    and label. Hover text is escaped: plotly renders a few HTML tags in
    hover labels, and chunk text is data.
    """
    figure = go.Figure()
    groups: dict[str, list[dict]] = {}
    for point in points:
        groups.setdefault(str(point[colour_by]), []).append(point)
    others = sorted(set(groups) - set(colours.FAILURE_COLOURS) - {NOT_IN_RUN})
    position = {name: i for i, name in enumerate(sorted(set(groups) - {NOT_IN_RUN}))}
    # The grey of "not in question" first, so the coloured groups are drawn over it.
    for name in sorted(groups, key=lambda n: (n != NOT_IN_RUN, n)):
        rows = groups[name]
        colour = colours.category_colour(colour_by, name, NOT_IN_RUN, others)
        marker = {"size": 5, "opacity": 0.45 if name == NOT_IN_RUN else 0.8, "color": colour}
        if colour is None:  # a document, section or quality: a colour (and shape) of its own
            marker["color"], marker["symbol"] = colours.category_mark(position[name])
        figure.add_trace(go.Scattergl(
            x=[r["x"] for r in rows], y=[r["y"] for r in rows], mode="markers",
            name=_legend(name), marker=marker,
            text=[_hover(r) for r in rows], hovertemplate="%{text}<extra></extra>"))
    styles = colours.MARKS
    for name, rows in (marks or {}).items():
        if not rows:
            continue
        figure.add_trace(go.Scatter(
            x=[r["x"] for r in rows], y=[r["y"] for r in rows],
            mode="markers+text" if name == "hits" else "markers", name=name,
            marker=styles.get(name, {"size": 12}), text=[_escape(r["label"]) for r in rows],
            textposition="top center", hovertemplate="%{text}<extra>" + name + "</extra>"))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         legend={"itemsizing": "constant"})
    figure.update_xaxes(showticklabels=False, title=None)
    figure.update_yaxes(showticklabels=False, title=None)
    return figure


def _escape(text: str) -> str:
    return html.escape(str(text), quote=False)


def _legend(name: str, limit: int = 40) -> str:
    name = _escape(name)
    return name if len(name) <= limit else name[:limit] + "…"


def _hover(row: dict) -> str:
    return (f"{_escape(row['doc_id'])} p.{row['page']} · {_escape(row['quality'])}<br>"
            f"{_escape(row['first_words'])}")


def k_sweep_chart(runs: list, height: int = 320) -> go.Figure:
    """Hit@k and Recall@k against k, one pair of lines per run."""
    figure = go.Figure()
    for run in runs:
        ks = list(run.data["ks"])
        overall = run.data["metrics"]["all"]
        for metric, dash in (("hit", "solid"), ("recall", "dot")):
            figure.add_trace(go.Scatter(
                x=ks, y=[overall[f"{metric}@{k}"]["mean"] for k in ks], mode="lines+markers",
                name=f"{_escape(run.data['mode'])} {metric}@k", line={"dash": dash}))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis_title="k", yaxis_title="share of questions", yaxis_range=[0, 1.02])
    return figure


def survival_chart(runs: list, height: int = 320) -> go.Figure:
    """Rank survival: share of questions whose first relevant unit is within rank k."""
    figure = go.Figure()
    for run in runs:
        curve = run.data["rank_survival"]
        figure.add_trace(go.Scatter(x=[p["k"] for p in curve], y=[p["share"] for p in curve],
                                    mode="lines", line={"shape": "hv"},
                                    name=_escape(run.data["mode"])))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         xaxis_title="rank k", yaxis_title="first relevant within k",
                         yaxis_range=[0, 1.02])
    return figure


def failure_chart(counts: dict[str, int], height: int = 300) -> go.Figure:
    """Queries per failure code."""
    codes = list(counts)
    fills = [colours.BAR_HIT if code == "HIT" else colours.BAR_FAILURE for code in codes]
    figure = go.Figure(go.Bar(x=codes, y=[counts[c] for c in codes], marker_color=fills,
                              text=[counts[c] for c in codes], textposition="outside"))
    figure.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                         yaxis_title="questions")
    return figure
