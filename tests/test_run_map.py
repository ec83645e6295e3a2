"""The Embeddings map's run colouring: each gold unit's outcome and failure code, the worst one winning."""

from ragloupe.diagnostics.run_map import NOT_IN_RUN, colour_points, unit_outcomes


def _query(query_id, units, first, code):
    return {"query_id": query_id, "expected_units": units, "first_relevant_rank": first,
            "failure": {"code": code}}


def test_outcomes_are_hit_at_1_in_the_top_k_or_missed_and_a_miss_is_never_hidden():
    run = {"queries": [_query("a", ["d#p1"], 1, "HIT"), _query("b", ["d#p2"], 4, "FP2"),
                       _query("c", ["d#p3", "d#p1"], None, "FP1"), _query("e", ["d#p5"], 9, "FP2")]}
    outcomes = unit_outcomes(run, k=5)
    assert {u: o["outcome"] for u, o in outcomes.items()} == {
        "d#p1": "missed", "d#p2": "in the top k", "d#p3": "missed", "d#p5": "missed"}
    assert outcomes["d#p1"]["code"] == "FP1" and outcomes["d#p1"]["query_id"] == "c"


def test_map_points_of_other_units_say_they_are_not_in_the_run():
    points = [{"unit": "d#p2", "x": 0.0}, {"unit": "d#p9", "x": 1.0}]
    coloured = colour_points(points, unit_outcomes({"queries": [_query("b", ["d#p2"], 2, "FP2")]}, k=3))
    assert [(p["outcome"], p["failure code"]) for p in coloured] == [("in the top k", "FP2"),
                                                                       (NOT_IN_RUN, NOT_IN_RUN)]
