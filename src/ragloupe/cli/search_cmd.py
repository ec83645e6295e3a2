"""`ragloupe search`: one query, every engine's rank and score on every hit.

    ragloupe search "question" --mode hybrid --k 10 [--doc ID] [--json]
    ragloupe search "question" --compare dense,bm25,hybrid

The table always runs both built-in engines (``explain``), so a dense-only
ranking still shows where BM25 put each hit, and the other way round; an
engine a mode names (a plugin's, an attached one's) gets a column of its own. Chunk text is
shown as plain data: whitespace collapsed, control characters dropped, cut
to a few words.
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Sequence

from ragloupe.cli import CommandResult, add_json_flag, settings_with_overrides
from ragloupe.models import EngineScore, Hit, Ranking

ABSENT = "—"
FIRST_WORDS_CHARS = 48


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("search", help="rank chunks for a question and show every engine's view",
                            description=__doc__.splitlines()[0])
    parser.add_argument("query", help="the question")
    parser.add_argument("--mode", default=None,
                        help="dense | bm25 | hybrid | hybrid+rerank, each optionally +rewrite; or an "
                             "engine by name (`ragloupe engines`): NAME alone, or fused, e.g. hybrid+NAME "
                             "(default: RAGLOUPE_MODE)")
    parser.add_argument("--k", type=int, default=None, help="hits to show (default: RAGLOUPE_TOP_K)")
    parser.add_argument("--doc", action="append", default=[], metavar="ID",
                        help="only this document (repeat for several)")
    parser.add_argument("--pages", default=None, metavar="FIRST-LAST", help="only pages in this range")
    parser.add_argument("--quality", action="append", default=[], help="only chunks of this page quality")
    parser.add_argument("--compare", default=None, metavar="MODES",
                        help="comma-separated modes shown side by side, e.g. dense,bm25,hybrid,NAME "
                             "(an attached engine beside ragloupe's modes)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                        help="override a setting for this search, e.g. --set fusion=minmax")
    add_json_flag(parser)
    parser.set_defaults(handler=handle)


def parse_pages(text: str | None) -> tuple[int | None, int | None] | None:
    from ragloupe.retrieve.search import InvalidSearch

    if not text:
        return None
    match = re.fullmatch(r"\s*(\d*)\s*-\s*(\d*)\s*|\s*(\d+)\s*", text)
    if not match or (match.group(3) is None and not (match.group(1) or match.group(2))):
        raise InvalidSearch(f"--pages wants FIRST-LAST (e.g. 20-30), got {text!r}")
    if match.group(3):
        return int(match.group(3)), int(match.group(3))
    first, last = match.group(1), match.group(2)
    return (int(first) if first else None), (int(last) if last else None)


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.retrieve.search import InvalidSearch, ranking_to_dict, search
    from ragloupe.workspace import Workspace

    settings = settings_with_overrides(args.overrides)
    workspace = Workspace.open(settings)  # the command's: every mode compared searches through it
    filters = {"doc_ids": args.doc, "pages": parse_pages(args.pages), "quality": args.quality}
    filters = {key: value for key, value in filters.items() if value}
    # explain runs both built-in engines in every mode: dense reads the sentence vectors whatever the mode.
    encode_missing_sentences(workspace, doc_ids=filters.get("doc_ids"), explain=True)
    if args.compare:
        modes = [m.strip() for m in args.compare.split(",") if m.strip()]
        if not modes:
            raise InvalidSearch("--compare wants a comma-separated list of modes")
        rankings = [search(args.query, mode, args.k, filters, explain=True, workspace=workspace)
                    for mode in modes]
        data = {"query": args.query, "filters": filters,
                "modes": {r.mode: ranking_to_dict(r) for r in rankings}}
        return CommandResult(data, format_comparison(rankings))
    ranking = search(args.query, args.mode, args.k, filters, explain=True, workspace=workspace)
    return CommandResult(ranking_to_dict(ranking), format_ranking(ranking))


# ----------------------------------------------------------------------------
# Plain-text tables


def first_words(text: str, limit: int = FIRST_WORDS_CHARS) -> str:
    """Chunk text as one safe line: control characters dropped, whitespace collapsed, cut."""
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def _engine_cell(view: EngineScore | None, digits: int) -> str:
    if view is None or view.rank is None:
        return ABSENT
    return f"{view.rank}/{view.score:.{digits}f}"


def _num(value: float | None, digits: int = 4) -> str:
    return ABSENT if value is None else f"{value:.{digits}f}"


def _change(value: int | None) -> str:
    if value is None:
        return ABSENT
    return f"+{value}" if value > 0 else str(value)


def _period(hit: Hit) -> str:
    """The hit's document's own period, ✓ when it is the one the question names."""
    return (hit.doc_period + (" ✓" if hit.period_match == 1.0 else "")) or ABSENT


def _where(hit: Hit) -> str:
    return hit.chunk.record_id or str(hit.chunk.page)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i])
              for i in range(len(header))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(header)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines)


def _summary(ranking: Ranking) -> list[str]:
    lines = []
    if ranking.rewrite is not None or ranking.rewrite_note:
        used = "used" if ranking.rewrite_used else "not used"
        lines.append(f"rewrite ({used}): {first_words(ranking.rewrite or '', 200) or ABSENT}")
        if ranking.rewrite_note:
            lines.append(f"  {ranking.rewrite_note}")
    stages = ", ".join(f"{stage} {seconds * 1000:.0f} ms" for stage, seconds in ranking.timings.items())
    described = [f"mode {ranking.mode}"]
    if ranking.fusion:
        described.append(f"fusion {ranking.fusion}")
    if ranking.reranker:
        described.append(f"reranker {ranking.reranker}")
    if ranking.cut_at is not None:
        described.append(f"dynamic cut after {ranking.cut_at}")
    lines.append(", ".join(described) + f"; {ranking.candidates} candidates")
    if ranking.query_analysis:
        from ragloupe.retrieve.query_analysis import describe

        lines.append(f"query analysis: {describe(ranking.query_analysis)}")
    lines.append(f"timings: {stages}")
    pages = ", ".join(f"{p.unit} ({p.score:.4g})" for p in ranking.pages[:5])
    lines.append(f"top pages: {pages or ABSENT}")
    for page in ranking.pages[:5] if any(p.signals for p in ranking.pages) else ():
        # Under RAGLOUPE_UNIT_VIEW: each signal's rank/score of the unit, "—" where it did not list it.
        signals = ", ".join(f"{name} {_engine_cell(view, 3)}" for name, view in page.signals.items())
        lines.append(f"  {page.unit}: {signals}")
    return lines


def other_engines(hits) -> list[str]:
    """The engines besides dense and bm25 that ranked these hits (plugins, attached systems)."""
    return list(dict.fromkeys(e for h in hits for e in h.per_engine if e not in ("dense", "bm25")))


def format_ranking(ranking: Ranking) -> str:
    others = other_engines(ranking.hits)
    header = ["rank", "doc", "page", "section", "dense rank/sim", "bm25 rank/score",
              *(f"{e} rank/score" for e in others), "fused", "rrf", "score", "rerank", "margin", "period",
              "first words"]
    rows = [[str(h.rank), h.chunk.doc_id, _where(h), first_words(h.chunk.section, 24),
             _engine_cell(h.per_engine.get("dense"), 3), _engine_cell(h.per_engine.get("bm25"), 2),
             *(_engine_cell(h.per_engine.get(e), 3) for e in others),
             _num(h.fused_score), _num(h.rrf_score), _num(h.score), _change(h.rerank_change), _num(h.margin),
             _period(h), first_words(h.chunk.text)] for h in ranking.hits]
    if not rows:
        return "\n".join([f"no hits for {ranking.query!r}"] + _summary(ranking))
    return "\n".join([_table(header, rows), ""] + _why(ranking) + _summary(ranking))


def _why(ranking: Ranking, top: int = 3) -> list[str]:
    """Under learned fusion, each hit's three largest feature contributions to its logit."""
    lines = []
    for hit in ranking.hits:
        if hit.learned is None:
            continue
        shares = sorted(hit.learned.contributions.items(), key=lambda item: (-abs(item[1]), item[0]))[:top]
        lines.append(f"why #{hit.rank}: logit {hit.learned.logit:+.2f} = intercept {hit.learned.intercept:+.2f} "
                     + " ".join(f"{name} {value:+.2f}" for name, value in shares) + " ...")
    return lines + ([""] if lines else [])


def format_comparison(rankings: Sequence[Ranking]) -> str:
    """One row per chunk found by any mode: its rank in each mode, then each engine's view.

    Every mode runs both engines over the same window, so a chunk's engine
    ranks agree across modes, except for +rewrite modes, whose engines saw
    the rewritten text: there the first mode that gave the engine a rank wins
    (the per-mode JSON keeps every view).
    """
    rows: dict[str, dict[str, Any]] = {}
    for ranking in rankings:
        for hit in ranking.hits:
            row = rows.setdefault(hit.chunk.chunk_id, {"hit": hit, "ranks": {}, "engines": {}})
            row["ranks"][ranking.mode] = hit.rank
            for engine, view in hit.per_engine.items():
                if view.rank is not None or engine not in row["engines"]:
                    row["engines"][engine] = view
    modes = [r.mode for r in rankings]

    def order(row: dict) -> tuple:
        return tuple(row["ranks"].get(mode, 10**6) for mode in modes)

    others = other_engines([row["hit"] for row in rows.values()] + [
        h for r in rankings for h in r.hits])
    header = ["doc", "page", "section", *modes, "dense rank/sim", "bm25 rank/score",
              *(f"{e} rank/score" for e in others), "first words"]
    table_rows = []
    for row in sorted(rows.values(), key=order):
        hit = row["hit"]
        table_rows.append([
            hit.chunk.doc_id, _where(hit), first_words(hit.chunk.section, 24),
            *(str(row["ranks"][m]) if m in row["ranks"] else ABSENT for m in modes),
            _engine_cell(row["engines"].get("dense"), 3), _engine_cell(row["engines"].get("bm25"), 2),
            *(_engine_cell(row["engines"].get(e), 3) for e in others),
            first_words(hit.chunk.text)])
    parts = [f"query: {first_words(rankings[0].query, 200)}" if rankings else "", _table(header, table_rows)]
    for ranking in rankings:
        parts += ["", *_summary(ranking)]
    return "\n".join(parts)

