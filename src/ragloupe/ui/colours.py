"""Every colour and mark the figures use, assigned here and nowhere else.

A colour is given to a meaning, never taken from a palette's order: the
bump chart's gold line is the only line in GOLD, the Embeddings map's
ordinary chunks are grey and each failure code has a colour of its own, and
the query, hits and gold marks differ in shape as well as colour. The
colours are Okabe & Ito's colour-blind-safe set (Color Universal Design,
2008), so a reader with a red-green deficiency still tells them apart.
Pure data: tests read it to check a figure's JSON against its legend.
"""

from __future__ import annotations

# Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple.
BLACK, ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
GREY = "#BBBBBB"  # what is there but not in question: ordinary chunks, lines that are not gold
DARK_GREY = "#777777"

# The bump chart: the gold hits' lines and nothing else in GOLD; every other line grey-blue.
GOLD = ORANGE
GOLD_IN_WORDS = "orange"  # what the legend and captions call GOLD
BUMP_LEGEND = ("thick orange line with diamonds: a gold hit (the only orange lines); "
               "dotted grey-blue: the other hits")
BUMP_OTHER = "#8DA0B3"

# The Embeddings map's marks: a fixed colour AND a fixed shape each.
MARKS = {
    "query": {"symbol": "star", "size": 20, "color": YELLOW, "line": {"width": 1.5, "color": BLACK}},
    "hits": {"symbol": "circle-open", "size": 14, "color": BLACK, "line": {"width": 2}},
    "gold": {"symbol": "diamond", "size": 13, "color": GOLD, "line": {"width": 1.5, "color": BLACK}},
}

# Colour by outcome / failure code: chunks that are not a gold unit of the run stay grey.
OUTCOME_COLOURS = {"hit at 1": GREEN, "in the top k": SKY_BLUE, "missed": VERMILLION}
FAILURE_COLOURS = {"HIT": GREEN, "FP1": VERMILLION, "FP2": PURPLE, "FP3": BLUE}
OTHER_CODES = (SKY_BLUE, YELLOW, BLUE, PURPLE)  # codes not named above, in sorted order
NEUTRAL = GREY

# The failure-code bar chart: a hit is green, a failure vermillion.
BAR_HIT, BAR_FAILURE = GREEN, VERMILLION


def category_colour(colour_by: str, value: str, neutral_value: str, others: list[str]) -> str | None:
    """The fixed colour of one map group: grey for ``neutral_value``; an outcome's or a failure
    code's own colour; None (the plot's own palette) for documents, sections and qualities."""
    if value == neutral_value:
        return NEUTRAL
    if colour_by == "outcome":
        return OUTCOME_COLOURS.get(value, DARK_GREY)
    if colour_by == "failure code":
        if value in FAILURE_COLOURS:
            return FAILURE_COLOURS[value]
        return OTHER_CODES[others.index(value) % len(OTHER_CODES)] if value in others else DARK_GREY
    return None
