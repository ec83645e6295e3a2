"""What the views say: figure colours read from their JSON against the legend, the words for
learned fusion's features, and how a p-value is written.

A colour is assigned to a meaning (ragloupe.ui.colours), never taken from a
palette's order: only gold is drawn in the gold colour, ordinary chunks are
grey, each failure code has its own colour, and gold, hits and the query
differ in shape too.
"""

from __future__ import annotations

import json

from ragloupe.models import Chunk, EngineScore, Hit, Ranking
from ragloupe.ui import colours
from ragloupe.ui.charts import bump_chart, embedding_map


def _ranking(n: int) -> Ranking:
    hits = tuple(Hit(Chunk(f"c{i}", "doc", i, 0, f"text {i}", 5, "clean"), i, 1.0 / i,
                     {"dense": EngineScore(i, 0.5), "bm25": EngineScore(n + 1 - i, 3.0)})
                 for i in range(1, n + 1))
    return Ranking("q", "hybrid", hits)


def test_bump_chart_draws_only_the_gold_lines_in_the_gold_colour_and_names_them():
    figure = json.loads(bump_chart(_ranking(6), gold_units={"doc#p3"}, k=6).to_json())
    by_name = {trace["name"]: trace for trace in figure["data"]}
    gold = [name for name, trace in by_name.items() if trace["line"]["color"] == colours.GOLD]
    assert gold == ["#3 doc p.3 ★ gold"]  # the legend names the one gold line, and only it is gold
    assert by_name["#3 doc p.3 ★ gold"]["marker"]["symbol"] == "diamond"
    others = [trace for name, trace in by_name.items() if name not in gold]
    assert len(others) == 5 and all(t["line"]["color"] != colours.GOLD and t["marker"]["symbol"] != "diamond"
                                    for t in others)
    assert "orange" in colours.BUMP_LEGEND and colours.GOLD_IN_WORDS == "orange"


def _points(codes: dict[str, int]) -> list[dict]:
    points = []
    for code, n in codes.items():
        points += [{"x": float(i), "y": float(i), "doc_id": "doc", "page": i, "quality": "clean",
                    "first_words": "w", "failure code": code, "outcome": code} for i in range(n)]
    return points


def test_failure_code_map_greys_ordinary_chunks_and_gives_each_failure_its_own_colour():
    from ragloupe.diagnostics.run_map import NOT_IN_RUN

    points = _points({NOT_IN_RUN: 50, "HIT": 3, "FP1": 2, "FP2": 2, "FP3": 1})
    marks = {"gold": [{"x": 0.0, "y": 0.0, "label": "gold"}], "hits": [{"x": 1.0, "y": 1.0, "label": "#1"}],
             "query": [{"x": 2.0, "y": 2.0, "label": "query"}]}
    figure = json.loads(embedding_map(points, "failure code", marks).to_json())
    colour = {trace["name"]: trace["marker"]["color"] for trace in figure["data"]}
    assert colour[NOT_IN_RUN] == colours.NEUTRAL  # 50 ordinary chunks: grey, not a saturated colour
    failures = [colour[code] for code in ("FP1", "FP2", "FP3")]
    assert len(set(failures)) == 3 and colours.NEUTRAL not in failures and colour["HIT"] not in failures
    # Gold is not the colour of any group of points, and gold, hits and the query differ in shape.
    assert colour["gold"] not in {colour[name] for name in (NOT_IN_RUN, "HIT", "FP1", "FP2", "FP3")}
    symbols = {trace["name"]: trace["marker"]["symbol"] for trace in figure["data"] if trace["name"] in marks}
    assert len(set(symbols.values())) == 3


def test_every_feature_the_learned_model_uses_has_plain_words_and_a_contribution_is_a_sentence():
    from ragloupe.diagnostics.feature_words import FEATURE_WORDS, contribution_words
    from ragloupe.retrieve.features import FEATURES
    from ragloupe.config import PROJECT_ROOT
    from ragloupe.retrieve.learned import from_json

    model = from_json((PROJECT_ROOT / "src/ragloupe/retrieve/learned_model.json").read_text(encoding="utf-8"))
    missing = [name for name in (*FEATURES, *model.features) if name not in FEATURE_WORDS]
    assert missing == []
    assert all(" " in FEATURE_WORDS[name] and "_" not in FEATURE_WORDS[name] for name in model.features)
    assert contribution_words(0.8213) == "raised the score by 0.821 (logit)"
    assert contribution_words(-0.31) == "lowered the score by 0.310 (logit)"


def test_a_tiny_p_value_reads_p_below_a_thousandth_never_zero():
    from ragloupe.ui.tables import fmt_p

    assert fmt_p(0.0) == "p < 0.001" and fmt_p(0.0004) == "p < 0.001"
    assert fmt_p(0.0123) == "p = 0.012"


def test_a_clicked_failure_bar_filters_the_audit_to_its_code():
    from ragloupe.ui.tables import codes_picked, with_codes

    rows = [{"query_id": "Q1", "code at k=5": "FP1"}, {"query_id": "Q2", "code at k=5": "FP2"},
            {"query_id": "Q3", "code at k=5": "FP2"}]
    event = {"selection": {"points": [{"x": "FP2", "y": 2, "curve_number": 0}]}}
    assert codes_picked(event) == {"FP2"}
    assert [r["query_id"] for r in with_codes(rows, codes_picked(event), 5)] == ["Q2", "Q3"]
    assert with_codes(rows, codes_picked({"selection": {"points": []}}), 5) == rows
