"""Records from the pipeline turned into table rows for the pages. Pure, no Streamlit.

Rows hold strings where a value can be absent, so an engine that did not
list a hit shows "—" and never a 0 that reads like a rank or a score.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pandas as pd

from ragloupe.models import Hit, Ranking
from ragloupe.evaluate.stats import p_text
from ragloupe.ui.text import ABSENT, fmt_rank, fmt_score

ENGINES = ("dense", "bm25")


def engine_rank(hit: Hit, engine: str) -> int | None:
    view = hit.per_engine.get(engine)
    return None if view is None else view.rank


def engine_score(hit: Hit, engine: str) -> float | None:
    view = hit.per_engine.get(engine)
    return None if view is None or view.rank is None else view.score


def gold_ranks(ranking: Ranking, gold_units: Collection[str]) -> list[int]:
    """Final ranks of the hits that belong to a gold unit."""
    return [hit.rank for hit in ranking.hits if hit.chunk.unit in gold_units]


def fmt_estimate(estimate: dict | None) -> str:
    """'0.800 [0.700, 0.880]' from a run report's {mean, ci_low, ci_high}."""
    if not estimate:
        return ABSENT
    text = f"{estimate['mean']:.3f}"
    if estimate.get("ci_low") is not None:
        text += f" [{estimate['ci_low']:.3f}, {estimate['ci_high']:.3f}]"
    return text


def headline_metrics(ks: list[int]) -> list[str]:
    return [f"hit@{k}" for k in ks] + ["mrr"] + [f"recall@{ks[-1]}", f"ndcg@{ks[-1]}"]


def metrics_rows(runs: list, group: str = "all") -> list[dict[str, Any]]:
    """One row per run (and per group value when ``group`` is by_difficulty etc.), with CIs."""
    rows = []
    for run in runs:
        data = run.data
        names = headline_metrics(list(data["ks"]))
        blocks = {"": data["metrics"]["all"]} if group == "all" else data["metrics"][group]
        for label, block in blocks.items():
            row: dict[str, Any] = {"mode": data["mode"], "scope": data["scope"]}
            if group != "all":
                row[group.removeprefix("by_")] = label
            row["n"] = next(iter(block.values()), {}).get("n", 0) if block else 0
            row.update({name: fmt_estimate(block.get(name)) for name in names})
            rows.append(row)
    return rows


def retrieved_rows(query: dict, limit: int = 10) -> list[dict[str, Any]]:
    """What the run retrieved for one query, with each engine's rank of each unit."""
    rows = []
    for entry in query["ranked"][:limit]:
        row = {"rank": entry["rank"], "unit": entry["unit"], "gold": "★" if entry["relevant"] else "",
               "score": fmt_score(entry.get("score"), 4)}
        for engine, rank in sorted(entry.get("engines", {}).items()):
            row[f"{engine} rank"] = fmt_rank(rank)
        rows.append(row)
    return rows


def fmt_p(p_value: float | None) -> str:
    """A p-value as a reader expects it: 'p < 0.001' below a thousandth, never 'p = 0.000'."""
    if p_value is None:
        return ABSENT
    return p_text(p_value)


def run_comparison_rows(comparison) -> list[dict[str, Any]]:
    return [{"metric": name, "A": f"{m['a']:.3f}", "B": f"{m['b']:.3f}", "B − A": f"{m['diff']:+.3f}",
             "95% CI": (ABSENT if m.get("ci_low") is None
                        else f"[{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"),
             "p": fmt_p(m["p_value"]), "significant": "yes" if m["significant"] else "no"}
            for name, m in comparison.metrics.items()]


# Rows where the modes disagree: green where a mode has the row in its top k, amber where not.
AGREE_TINT, IN_TOP_TINT, OUT_TINT = "", "#dcefd5", "#fbe3c8"
# Pixel widths by what a column holds; a number column is as wide as its header, so no header is cut.
_WIDTHS = {"mark": 44, "page": 64, "doc": 150}
_HEADER_PX_PER_CHAR, _HEADER_PADDING = 8, 30


_TEXT_PX_PER_CHAR, _TEXT_PADDING = 8, 24


def fitted_columns(frame: pd.DataFrame) -> dict[str, int]:
    """Each column's width in pixels to show its header and longest value whole ("0.800 [0.700, 0.880]"
    under recall@10, a whole mode name), for st.dataframe's column_config: nothing cut mid-word."""
    return {str(name): max(64, _HEADER_PX_PER_CHAR * len(str(name)) + _HEADER_PADDING,
                           _TEXT_PX_PER_CHAR * max((len(str(v)) for v in frame[name]), default=0) + _TEXT_PADDING)
            for name in frame.columns}


def column_width(column, values=()) -> int:
    """A column's width in pixels (a TableColumn of diagnostics.comparison), wide enough for its header.
    A doc, page or section column is as wide as its longest value too, so no document id ("Grampian-20"
    for every year's report) and no section heading is cut mid-word."""
    longest = (max((len(str(v)) for v in values if v is not None), default=0)
               if column.width in ("doc", "page", "section") else 0)
    return max(_WIDTHS.get(column.width, 0), 64, _HEADER_PX_PER_CHAR * len(column.name) + _HEADER_PADDING,
               _TEXT_PX_PER_CHAR * longest + _TEXT_PADDING if longest else 0)


# Every comparison column's values start at its left edge, under its header. The grid scrolls
# sideways, so a column is often only partly in view at the grid's right edge: right-aligned figures
# were then drawn past that edge under a header in plain view, and an engine's rank column read as
# empty, which on this table means "not listed". Left-aligned, a column shows as much of its values
# as of its header.
COMPARISON_ALIGNMENT = "left"


def comparison_frame(table) -> pd.DataFrame:
    """The comparison table (diagnostics.comparison.comparison_table) as a DataFrame whose column
    names are the screen's headers: ranks as nullable integers, scores as floats, "not listed" missing
    (pd.NA / NaN), so the grid's own CSV export leaves those cells empty, as comparison_csv does."""
    frame = pd.DataFrame.from_records(list(table.records), columns=table.names)
    for name in table.named("rank") + table.named("mode"):
        frame[name] = frame[name].astype("Int64")
    for name in table.named("score"):
        frame[name] = frame[name].astype("float64")
    return frame


def comparison_styler(table):
    """The table as shown: missing values drawn "—", 3 decimals (RRF 4), each mode's final rank bold
    within its top k and grey below it, and the rows where the modes disagree highlighted (green
    where a mode has the row in its top k, amber where not)."""
    frame = comparison_frame(table)
    k = table.k
    styler = frame.style.format("{:d}", subset=table.named("rank") + table.named("mode"), na_rep=ABSENT)
    for column in table.columns:
        if column.kind == "score":
            styler = styler.format(f"{{:.{column.decimals}f}}", subset=[column.name], na_rep=ABSENT)
    final = table.named("mode")

    def per_row(row: pd.Series) -> list[str]:
        ranks = [None if pd.isna(rank) else int(rank) for rank in row]
        differs = len(set(ranks)) > 1 and any(r is not None and r <= k for r in ranks)
        styles = []
        for rank in ranks:
            in_top = rank is not None and rank <= k
            style = "font-weight: bold" if in_top else "color: #9a9a9a"
            if differs:
                style += f"; background-color: {IN_TOP_TINT if in_top else OUT_TINT}"
            styles.append(style)
        return styles

    if final:
        styler = styler.apply(per_row, axis=1, subset=final)
    return styler


def run_label(run) -> str:
    """A run named in words: 'hybrid · doc scope · Grampian-2021-2022 · k 1,3,5,10 · 50 questions ·
    30 Nov 18:42 UTC'."""
    data = run.data
    names = ", ".join(_goldset_name(g["name"]) for g in data.get("goldsets", [])) or "no gold set"
    ks = ",".join(str(k) for k in data.get("ks", []))
    when = _when(run.timings.get("started_at", ""))
    return (f"{data['mode']} · {data['scope']} scope · {names} · k {ks} · {_questions(data)} · {when}")


def _questions(data: dict) -> str:
    """'30 questions', or '3 of 5 questions scored' when some asked about documents not in the index."""
    scored = data.get("n_queries", 0)
    asked = (data.get("not_indexed") or {}).get("n_asked", scored)
    return f"{scored} questions" if asked == scored else f"{scored} of {asked} questions scored"


def _goldset_name(name: str) -> str:
    for suffix in (".eval.json", ".gold.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _when(started_at: str) -> str:
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(started_at)
    except ValueError:
        return started_at or "time unknown"
    return moment.strftime("%d %b %H:%M:%S UTC")


def parse_ks(text: str) -> tuple[int, ...] | None:
    """'1, 3,5,10' -> (1, 3, 5, 10); None when it is not whole numbers of at least 1."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) >= 1 for p in parts):
        return None
    return tuple(sorted({int(p) for p in parts}))


def audit_rows(run, k: int, only_misses: bool = True) -> list[dict[str, Any]]:
    """The run's questions judged at cutoff ``k``: first relevant rank, hit or miss, the code.

    The failure code was assigned at the run's own cutoff; at another k a
    question is a miss when its first relevant unit ranks below k (or nowhere).
    At the run's cutoff every question with a failure code is listed, FP3 too
    (the page was retrieved, the answer text was not).
    """
    failure_k = run.data["failures"]["k"]
    rows = []
    for query in run.data["queries"]:
        first = query["first_relevant_rank"]
        hit = first is not None and first <= k
        failed = not hit or (k == failure_k and query["failure"]["code"] != "HIT")
        if only_misses and not failed:
            continue
        rows.append({"query_id": query["query_id"], "goldset": _goldset_name(query["goldset"]),
                     "difficulty": query["difficulty"] or ABSENT,
                     f"hit at k={k}": "yes" if hit else "no",
                     "first relevant rank": first if first is not None else None,
                     f"code at k={failure_k}": query["failure"]["code"],
                     "question": query["question"]})
    return rows


def codes_picked(event) -> set[str]:
    """The failure codes whose bars were clicked on the chart (a plotly selection event), if any."""
    if not event:  # no chart event (AppTest, an older run)
        return set()
    points = (event.get("selection") or {}).get("points") or []  # Streamlit's event is a dict
    return {str(point["x"]) for point in points if "x" in point}


def with_codes(rows: list[dict[str, Any]], codes: set[str], failure_k: int) -> list[dict[str, Any]]:
    """The audit rows coded with one of ``codes`` at the run's cutoff (all rows when none is picked)."""
    if not codes:
        return rows
    return [row for row in rows if row.get(f"code at k={failure_k}") in codes]


def gold_rank_rows(query: dict) -> list[dict[str, Any]]:
    """Each gold unit of a question with its final rank and each engine's rank, however deep."""
    listed = {entry["unit"]: entry for entry in query.get("ranked", [])}
    deep = {entry["unit"]: entry for entry in query.get("gold", [])}
    rows = []
    for unit in query["expected_units"]:
        entry = deep.get(unit) or listed.get(unit) or {}
        row = {"gold unit": unit, "final rank": fmt_rank(entry.get("rank"))}
        engines = entry.get("engines") or {}
        for engine in [*ENGINES, *(e for e in engines if e not in ENGINES)]:  # any other engine the run read
            row[f"{engine} rank"] = fmt_rank(engines.get(engine))
        rows.append(row)
    return rows
