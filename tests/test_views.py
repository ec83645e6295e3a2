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


def _lab(colour: str) -> tuple[float, float, float]:
    """sRGB '#rrggbb' -> CIELAB (D65), to measure how far apart two colours look."""
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))


def _apart(a: str, b: str) -> float:
    """CIE76 colour difference: about 2 is just noticeable, above 20 two colours read as two."""
    return sum((p - q) ** 2 for p, q in zip(_lab(a), _lab(b))) ** 0.5


def test_each_document_on_the_map_has_a_mark_of_its_own_and_the_legend_names_it():
    documents = [f"report-{n:02d}" for n in range(12)]  # more documents than colours
    points = [{"x": float(i), "y": float(j), "doc_id": doc, "page": 1, "quality": "clean", "first_words": "w"}
              for i, doc in enumerate(documents) for j in range(3)]
    marks = {"gold": [{"x": 0.0, "y": 0.0, "label": "gold"}], "hits": [{"x": 1.0, "y": 1.0, "label": "#1"}],
             "query": [{"x": 2.0, "y": 2.0, "label": "query"}]}
    figure = json.loads(embedding_map(points, "doc_id", marks).to_json())
    drawn = {trace["name"]: trace["marker"] for trace in figure["data"]}
    assert sorted(set(drawn) - set(marks)) == documents  # the legend names each document
    looks = [(drawn[doc].get("color"), drawn[doc].get("symbol", "circle")) for doc in documents]
    assert len(set(looks)) == len(documents)  # no two documents look alike
    # The first nine each have a colour of their own, plainly apart from each other and from the
    # query's and gold's colours; no document takes the marks' shapes.
    first = [colour for colour, _ in looks[:9]]
    assert len(set(first)) == 9
    assert min(_apart(a, b) for i, a in enumerate(first) for b in first[i + 1:]) >= 20
    assert min(_apart(a, drawn[m]["color"]) for a in first for m in ("gold", "query")) >= 20
    assert not {symbol for _, symbol in looks} & {drawn[m]["symbol"] for m in marks}


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


def test_the_rewrite_line_says_what_was_searched_what_was_put_back_and_why_one_was_not_used():
    from ragloupe.ui.text import rewrite_line

    question = "Which duties does 2012/18/EU place on operators of DN50 lines?"
    asked = Ranking(question, "bm25+rewrite", ())
    assert rewrite_line(asked) is None  # no rewrite asked for: nothing said
    whole = Ranking(question, "bm25+rewrite", (), rewrite="operator obligations", rewrite_used=True)
    assert rewrite_line(whole) == "Rewrite used: operator obligations"
    dropped = Ranking(question, "bm25+rewrite", (), rewrite="operator obligations 2012/18/EU DN50",
                      rewrite_used=True, rewrite_restored=("2012/18/EU", "DN50"))
    assert rewrite_line(dropped) == ("Rewrite used: operator obligations 2012/18/EU DN50 "
                                     "(2012/18/EU, DN50 put back: the LLM's rewrite had dropped them)")
    refused = Ranking(question, "bm25+rewrite", (), rewrite=question, rewrite_not_used_because="identical to the question")
    assert rewrite_line(refused) == "Rewrite not used: identical to the question"
