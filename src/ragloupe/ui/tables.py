"""Records from the pipeline turned into table rows for the pages. Pure, no Streamlit.

Rows hold strings where a value can be absent, so an engine that did not
list a hit shows "—" and never a 0 that reads like a rank or a score.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ragloupe.models import Hit, Ranking
from ragloupe.ui.text import ABSENT, fmt_change, fmt_rank, fmt_score

ENGINES = ("dense", "bm25")


def engine_rank(hit: Hit, engine: str) -> int | None:
    view = hit.per_engine.get(engine)
    return None if view is None else view.rank


def engine_score(hit: Hit, engine: str) -> float | None:
    view = hit.per_engine.get(engine)
    return None if view is None or view.rank is None else view.score


def hit_rows(ranking: Ranking, gold_units: Collection[str] = ()) -> list[dict[str, Any]]:
    """One row per hit: where it came from, every engine's view, and whether it is gold."""
    rows = []
    for hit in ranking.hits:
        chunk = hit.chunk
        row: dict[str, Any] = {
            "rank": hit.rank,
            "gold": "★" if chunk.unit in gold_units else "",
            "doc": chunk.doc_id,
            "page": chunk.record_id or str(chunk.page),
            "section": chunk.section or ABSENT,
            "quality": chunk.quality,
            "score": fmt_score(hit.score, 4),
        }
        for engine in ENGINES:
            row[f"{engine} rank"] = fmt_rank(engine_rank(hit, engine))
            row[f"{engine} score"] = fmt_score(engine_score(hit, engine))
        row["fused"] = fmt_score(hit.fused_score, 4)
        row["rerank"] = fmt_change(hit.rerank_change)
        row["margin"] = fmt_score(hit.margin, 4)
        rows.append(row)
    return rows


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


def failed_query_rows(run) -> list[dict[str, Any]]:
    """The run's queries that did not HIT at the failure cutoff."""
    return [{"query_id": q["query_id"], "goldset": q["goldset"], "difficulty": q["difficulty"] or ABSENT,
             "code": q["failure"]["code"], "first relevant rank": fmt_rank(q["first_relevant_rank"]),
             "question": q["question"]}
            for q in run.data["queries"] if q["failure"]["code"] != "HIT"]


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


def comparison_rows(comparison) -> list[dict[str, Any]]:
    return [{"metric": name, "A": f"{m['a']:.3f}", "B": f"{m['b']:.3f}", "B − A": f"{m['diff']:+.3f}",
             "95% CI": (ABSENT if m.get("ci_low") is None
                        else f"[{m['ci_low']:+.3f}, {m['ci_high']:+.3f}]"),
             "p": f"{m['p_value']:.3f}", "significant": "yes" if m["significant"] else "no"}
            for name, m in comparison.metrics.items()]
