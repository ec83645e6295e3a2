"""The coverage audit in words: findings, model warnings and the CLI's lines. Pure."""

from __future__ import annotations

from typing import Iterable, Mapping

TENTHS = 10
NO_SECTION = "(no section heading)"

_FRACTIONS = {1: "tenth", 2: "fifth", 3: "three tenths", 4: "two fifths", 5: "half", 6: "three fifths",
              7: "seven tenths", 8: "four fifths", 9: "nine tenths"}
_COUNTS = {1: "tenth", 2: "two tenths", 3: "three tenths", 4: "four tenths", 5: "five tenths",
           6: "six tenths", 7: "seven tenths", 8: "eight tenths", 9: "nine tenths"}


def percent(share: float) -> str:
    """0.993 -> '99%'; shares a float sum left a hair off 0 or 1 read as 0% and 100%."""
    share = 0.0 if share < 1e-9 else 1.0 if share > 1 - 1e-9 else share
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 < share < 1:
        return ">99%"
    return f"{share * 100:.0f}%"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def span_words(tenths: Iterable[int]) -> str:
    """{0, 1} -> 'first fifth'; {8, 9} -> 'last fifth'; {3, 4} -> '4th-5th tenths'; runs joined by 'and'."""
    runs: list[list[int]] = []
    for t in sorted(set(tenths)):
        if runs and t == runs[-1][-1] + 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    words = []
    for run in runs:
        lo, hi = run[0], run[-1]
        if lo == 0:
            words.append(f"first {_FRACTIONS[hi + 1]}")
        elif hi == TENTHS - 1:
            words.append(f"last {_FRACTIONS[TENTHS - lo]}")
        elif lo == hi:
            words.append(f"{ordinal(lo + 1)} tenth")
        else:
            words.append(f"{ordinal(lo + 1)}-{ordinal(hi + 1)} tenths")
    return " and ".join(words)


def finding(dimension: str, flagged: list[dict], strata: list[dict], level: str = "page") -> str:
    """The sentence for a skewed dimension, from its flagged tests (about pages, or records)."""
    gold = "the gold records" if level == "record" else "the gold pages"
    return _finding(dimension, flagged, strata).replace("the gold pages", gold).replace(
        "no gold page", "no gold record" if level == "record" else "no gold page")


def _finding(dimension: str, flagged: list[dict], strata: list[dict]) -> str:
    if dimension == "position":
        return _position(flagged[0])
    if dimension == "kind":
        table = next(s for s in strata if s["stratum"] == "table")
        if table["share"] == 0:
            return f"no gold page is a table page (expected {percent(table['expected'])})"
        lead = "" if table["share"] > table["expected"] else "only "
        return f"{lead}{percent(table['share'])} of the gold pages are table pages (expected {percent(table['expected'])})"
    parts = []
    for test in sorted(flagged, key=lambda t: (t["flag"] != "over", t["p_value"]))[:3]:
        where = _in_section(test["strata"][0])
        if test["flag"] == "over":
            amount = f"{percent(test['share'])} of the gold pages"
        else:
            amount = "none" if test["share"] == 0 else f"only {percent(test['share'])}"
            amount += "" if parts else " of the gold pages"
        parts.append(f"{amount} are {where} (expected {percent(test['expected'])})")
    return "; ".join(parts)


def _in_section(section: str) -> str:
    return "on pages with no section heading" if section == NO_SECTION else f"in the section “{section}”"


def _position(test: dict) -> str:
    """'99% of the gold pages are in the first three tenths of their documents (expected 30%)'."""
    tenths = [int(t) for t in test["strata"]]
    if test["flag"] == "over":
        return (f"{percent(test['share'])} of the gold pages are in the {span_words(tenths)} of their "
                f"documents (expected {percent(test['expected'])})")
    rest = [t for t in range(TENTHS) if t not in tenths]
    if rest and len(span_words(rest).split(" and ")) == 1:  # the other side is one run: say it as a bulk
        return (f"{percent(1 - test['share'])} of the gold pages are in the {span_words(rest)} of their "
                f"documents (expected {percent(1 - test['expected'])})")
    amount = "none" if test["share"] == 0 else f"only {percent(test['share'])}"
    return (f"{amount} of the gold pages are in the {span_words(tenths)} of their documents "
            f"(expected {percent(test['expected'])})")


def the_rest(dimension: str, result: Mapping) -> str:
    """What a model that learned the skew should fail on, in words."""
    if dimension == "position":
        test = result["flagged"][0]
        tenths = [int(t) for t in test["strata"]]
        left = [t for t in range(TENTHS) if t not in tenths] if test["flag"] == "over" else tenths
        return f"the rest of a document (the {span_words(left)})"
    if dimension == "kind":
        table = next(s for s in result["strata"] if s["stratum"] == "table")
        return "table pages" if table["share"] < table["expected"] else "prose pages"
    under = [t["strata"][0] for t in result["flagged"] if t["flag"] == "under"]
    return "other sections" + (f" ({'; '.join(_short(u) for u in under[:3])})" if under else "")


def _short(section: str) -> str:
    return "pages with no section heading" if section == NO_SECTION else f"“{section}”"


def model_warning(label: str, trained: str, lead: Mapping, reading, dimension: str, result: Mapping) -> str:
    which = {1: "largest", 2: "second-largest", 3: "third-largest"}.get(lead["rank"], f"{ordinal(lead['rank'])}-largest")
    favours = reading.positive if lead["weight"] > 0 else reading.negative
    trained_on = f", trained on {trained}," if trained else ""
    return (f"{result['finding']}; {label}{trained_on} puts its {which} weight on {reading.what} "
            f"({lead['weight']:+.2f}, standardised; it favours {favours}): expect it to fail on questions "
            f"about {the_rest(dimension, result)}")


def wording_finding(gold: float, other: float, matched: float, match_share: float) -> str:
    """The sentence for a gold set whose questions use their gold pages' own words."""
    return (f"the questions use their gold pages' own words: on average {percent(gold)} of a question's "
            f"content words stand on its gold page (the other page of its document holding the most has "
            f"{percent(other)}), and {percent(matched)} of the questions have at least {percent(match_share)} of their "
            f"words on the gold page with no other page holding more; it tests word matching, not finding a "
            f"page by what the question means: add questions worded as a reader who has not seen the page "
            f"would ask them")


def render_lines(coverage: Mapping) -> list[str]:
    """The audit as plain lines for the CLI: each group's spread by tenth, then the warnings."""
    lines = ["gold-set coverage: share of the gold pages (or records) by tenth of their documents "
             "(expected share in brackets)"]
    groups = list(coverage["goldsets"])
    if len(groups) > 1:
        groups = list(coverage["pooled"].values()) + groups
    for group in groups:
        spread = " ".join(f"{percent(s['share'])}({percent(s['expected'])})"
                          for s in group["dimensions"]["position"]["strata"])
        skewed = [d for d, result in group["dimensions"].items() if result["skewed"]]
        verdict = (f"skewed on {', '.join(skewed)}" if skewed else "no skew found") if group["judged"] else group["note"]
        wording = group.get("wording") or {}
        words = (f"; words on the gold page {percent(wording['gold_share'])} (best other page "
                 f"{percent(wording['best_other_share'])})" if wording.get("n_placed") else "")
        lines.append(f"  {group['name']} ({group['n_placed']} questions): {spread} -> {verdict}{words}")
    lines += [f"  warning: {w}" for w in coverage["warnings"]]
    adapter = coverage.get("query_adapter") or {}
    if adapter.get("warning"):
        lines.append(f"  in-sample: {adapter['warning']}")
    elif adapter.get("note"):
        lines.append(f"  query adapter: {adapter['note']}")
    if warning := (coverage.get("embedding_model") or {}).get("warning"):
        lines.append(f"  in-sample: {warning}")
    return lines
