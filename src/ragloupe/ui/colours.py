"""Every colour and mark the figures use, assigned here and nowhere else.

A colour is given to a meaning, never taken from a palette's order: the
bump chart's gold line is the only line in GOLD, the Embeddings map's
ordinary chunks are grey and each failure code has a colour of its own, and
the query, hits and gold marks differ in shape as well as colour. The
colours are Okabe & Ito's colour-blind-safe set (Color Universal Design,
2008), so a reader with a red-green deficiency still tells them apart.
Documents, sections and qualities, as many as the index holds, take Paul
Tol's muted scheme in their sorted order, and a shape as well past nine.
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

# Documents, sections and qualities: as many groups as the index has, so their colours are taken in
# the groups' sorted order, from a set made for that: Paul Tol's "muted" scheme (nine colours a
# colour-blind reader still tells apart; Tol, "Colour schemes", SRON technical note, 2021). Okabe-Ito
# has eight, three of them already the marks' (the query's yellow, gold's orange, the hits' black), and
# the plot's own palette gave nine documents two blues. A tenth group and beyond take the colours again
# with another marker shape (none of them the marks' star, diamond or ring), so no two groups look alike.
CATEGORY_COLOURS = ("#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677",
                    "#882255", "#AA4499")  # indigo, cyan, teal, green, olive, sand, rose, wine, purple
CATEGORY_SYMBOLS = ("circle", "square", "triangle-up", "triangle-down", "cross", "x", "pentagon", "hexagon")

# The failure-code bar chart: a hit is green, a failure vermillion.
BAR_HIT, BAR_FAILURE = GREEN, VERMILLION


def category_mark(position: int) -> tuple[str, str]:
    """The colour and marker shape of a map's ``position``-th document, section or quality (0-based,
    in sorted order): a colour of its own for the first nine, then the colours again in another shape."""
    colour = CATEGORY_COLOURS[position % len(CATEGORY_COLOURS)]
    return colour, CATEGORY_SYMBOLS[position // len(CATEGORY_COLOURS) % len(CATEGORY_SYMBOLS)]


def category_colour(colour_by: str, value: str, neutral_value: str, others: list[str]) -> str | None:
    """The fixed colour of one map group: grey for ``neutral_value``; an outcome's or a failure
    code's own colour; None for documents, sections and qualities (category_mark)."""
    if value == neutral_value:
        return NEUTRAL
    if colour_by == "outcome":
        return OUTCOME_COLOURS.get(value, DARK_GREY)
    if colour_by == "failure code":
        if value in FAILURE_COLOURS:
            return FAILURE_COLOURS[value]
        return OTHER_CODES[others.index(value) % len(OTHER_CODES)] if value in others else DARK_GREY
    return None
