"""Records from the pipeline turned into table rows for the pages. Pure, no Streamlit.

Rows hold strings where a value can be absent, so an engine that did not
list a hit shows "—" and never a 0 that reads like a rank or a score.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pandas as pd

from ragloupe.models import Hit, Ranking
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


def run_comparison_rows(comparison) -> list[dict[str, Any]]:
    return [{"metric": name, "A": f"{m['a']:.3f}", "B": f"{m['b']:.3f}", "B − A": f"{m['diff']:+.3f}",
             "95% CI": (ABSENT if m.get("ci_low") is None
                        else f"[{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"),
             "p": f"{m['p_value']:.3f}", "significant": "yes" if m["significant"] else "no"}
            for name, m in comparison.metrics.items()]


# What a missing rank or score becomes in the displayed table. Streamlit's grid shows a
# null as "None" whatever the format says, so the display uses values that sort where
# "not listed" belongs (below every real rank and score) and are drawn as "—".
ABSENT_RANK = 1_000_000
ABSENT_SCORE = -1e9
# Rows where the modes disagree: green where a mode has the row in its top k, amber where not.
AGREE_TINT, IN_TOP_TINT, OUT_TINT = "", "#dcefd5", "#fbe3c8"
SHARED_COLUMNS = {
    "dense rank": ("dense #", "the dense engine's best rank of this row's chunks (the same in every mode)"),
    "cosine": ("cos", "that chunk's cosine similarity to the question"),
    "bm25 rank": ("bm25 #", "the BM25 engine's best rank of this row's chunks (the same in every mode)"),
    "bm25 score": ("bm25", "that chunk's BM25 score"),
    "RRF": ("RRF", "the best weighted reciprocal-rank-fusion score of this row's chunks"),
    "learned": ("learned", "learned fusion's probability for its best chunk of this row "
                           "(— when no mode fused it with the learned model)"),
}


BUILT_IN_ENGINES = ("dense", "bm25")


def other_engines(rows: list) -> list[str]:
    """The engines besides dense and bm25 that the rows hold (plugins, attached systems), as they come."""
    return list(dict.fromkeys(engine for row in rows for engine in row.engines if engine not in BUILT_IN_ENGINES))


def comparison_columns(modes: list[str], engines: list[str] = ()) -> dict[str, tuple[str, str]]:
    """The table's number columns: name -> (header, help text). Each engine once (the built-ins, then
    ``engines``: others the rows hold), then a rank per mode."""
    columns = {name: value for name, value in SHARED_COLUMNS.items() if name not in ("RRF", "learned")}
    for engine in engines:
        columns[f"{engine} rank"] = (f"{engine} #", f"the {engine} engine's best rank of this row's chunks")
        columns[f"{engine} score"] = (engine, f"that chunk's {engine} score (the engine's own raw score)")
    columns.update({name: SHARED_COLUMNS[name] for name in ("RRF", "learned")})
    for mode in modes:
        columns[mode_column(mode)] = (f"→{mode}", f"the final rank {mode} gave it (grey: below its top k)")
    return columns


# Pixel widths that fit three modes, the doc column and the selection box in 1280 px with the sidebar open.
COLUMN_WIDTHS = {"gold": 40, "doc": 84, "page": 60, "chunk": 50, "kind": 50, "dense rank": 60, "cosine": 56,
                 "bm25 rank": 60, "bm25 score": 56, "RRF": 62, "learned": 62}


def column_width(name: str) -> int:
    """A column's width in pixels: a mode's rank column is sized to its name (→hybrid+rerank)."""
    return COLUMN_WIDTHS.get(name, max(64, 9 * len(name)))


def mode_column(mode: str) -> str:
    return f"{mode} #"


def comparison_frame(rows: list, modes: list[str], show_doc: bool = True,
                     level: str = "page") -> pd.DataFrame:
    """The comparison rows as a DataFrame: ranks as nullable integers, scores as floats.

    Missing values stay missing (pd.NA / NaN); comparison_styler() draws them as "—".
    The section comes last: the numbers are what the table is for.
    """
    records = []
    for row in rows:
        record: dict[str, Any] = {"gold": "★" if row.gold else ""}
        if show_doc:
            record["doc"] = row.doc_id
        record["page"] = row.record_id or str(row.page)
        if level == "chunk":
            record["chunk"] = row.chunk.position
            record["kind"] = row.chunk.kind  # text, or table (a table chunk)
        engines = [("dense", "dense rank", "cosine"), ("bm25", "bm25 rank", "bm25 score")]
        engines += [(name, f"{name} rank", f"{name} score") for name in other_engines(rows)]
        for engine, rank_name, score_name in engines:
            view = row.engines.get(engine)
            listed = view is not None and view.rank is not None
            record[rank_name] = view.rank if listed else None
            record[score_name] = view.score if listed else None
        record["RRF"] = row.rrf_score
        record["learned"] = row.learned_score
        for mode in modes:
            cell = row.cells.get(mode)
            record[mode_column(mode)] = cell.rank if cell else None
        record["section"] = row.section or ABSENT
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    ranks, scores = _split(modes, list(frame.columns))
    for name in ranks:
        if name in frame:
            frame[name] = frame[name].astype("Int64")
    for name in scores:
        if name in frame:
            frame[name] = frame[name].astype("float64")
    return frame


def _split(modes: list[str], columns: list[str]) -> tuple[list[str], list[str]]:
    """The rank columns and the score columns: every engine's (built-in or not), then the modes' ranks."""
    finals = [mode_column(m) for m in modes]
    ranks = [c for c in columns if c.endswith(" rank") and c not in finals]
    scores = ["cosine", *[c for c in columns if c.endswith(" score")], "RRF", "learned"]
    return ranks + finals, scores


def comparison_styler(frame: pd.DataFrame, modes: list[str], k: int):
    """The table as shown: missing values drawn "—" (and sorted last), 3 decimals (RRF 4), each
    mode's final rank bold within its top k and grey below it, and the rows where the modes
    disagree highlighted (green where a mode has the row in its top k, amber where not)."""
    shown = frame.copy()
    rank_columns, score_columns = (_present(names, shown) for names in _split(modes, list(shown.columns)))
    for name in rank_columns:
        shown[name] = shown[name].fillna(ABSENT_RANK).astype("int64")
    for name in score_columns:
        shown[name] = shown[name].fillna(ABSENT_SCORE)
    styler = shown.style.format(lambda v: ABSENT if v == ABSENT_RANK else f"{v:d}", subset=rank_columns)
    styler = styler.format(lambda v: ABSENT if v == ABSENT_SCORE else f"{v:.3f}",
                           subset=[n for n in score_columns if n != "RRF"])
    if "RRF" in shown:
        styler = styler.format(lambda v: ABSENT if v == ABSENT_SCORE else f"{v:.4f}", subset=["RRF"])
    final = _present([mode_column(m) for m in modes], shown)

    def per_row(row: pd.Series) -> list[str]:
        ranks = list(row)
        differs = len(set(ranks)) > 1 and any(r <= k for r in ranks)
        styles = []
        for rank in ranks:
            style = "font-weight: bold" if rank <= k else "color: #9a9a9a"
            if differs:
                style += f"; background-color: {IN_TOP_TINT if rank <= k else OUT_TINT}"
            styles.append(style)
        return styles

    if final:
        styler = styler.apply(per_row, axis=1, subset=final)
    return styler


def _present(names: list[str], frame: pd.DataFrame) -> list[str]:
    return [n for n in names if n in frame]


def run_label(run) -> str:
    """A run named in words: 'hybrid · doc scope · Grampian-2021-2022 · k 1,3,5,10 · 30 Nov 18:42 UTC'."""
    data = run.data
    names = ", ".join(_goldset_name(g["name"]) for g in data.get("goldsets", [])) or "no gold set"
    ks = ",".join(str(k) for k in data.get("ks", []))
    when = _when(run.timings.get("started_at", ""))
    return (f"{data['mode']} · {data['scope']} scope · {names} · k {ks} · "
            f"{data.get('n_queries', 0)} questions · {when}")


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
