"""Gold-set coverage: where a gold set's questions sit in their documents, against where the
documents' own pages are, and whether a learned model leans on the difference.

A gold set written from the first thirty pages of 150-page reports measures retrieval on the
first thirty pages; a model tuned on it learns that early pages win. This audit says so.

Three dimensions, each split into strata:

- position: the tenth of its document a unit falls in (page / pages; a record's place in its file);
- section: the unit's top-level section heading (a record's top chapter), or none found;
- kind: a table page (a table chunk, a table cut out of the page, or a page whose words are
  mostly figures: accounts flattened to text) or a prose page.

A question counts once, split evenly over its gold units. Its *expected* share of a stratum
is the share of its document's indexed units in that stratum: where it would sit if
questions were spread over the document. A gold set's expected share is the mean over its
questions. A stratum is flagged when the observed share differs from the expected one by a
factor of at least ``MIN_LIFT`` and by at least ``MIN_POINTS``, and an exact two-sided
binomial test (the questions as independent draws) gives p < ``ALPHA`` after Bonferroni
correction over the dimension's strata. A gold set with fewer than ``MIN_QUESTIONS``
questions placed is described, not judged: a small stratified set is never flagged by chance.

The model warning: a learned model whose largest standardised weights are on a feature that
reads one of these dimensions (``FEATURE_READS``) while the gold set is skewed on that
dimension will have learned the gold set's construction, not relevance.

The wording dimension: per question, the share of its content words (BM25's tokens, stop words
dropped) that stand on its gold page, against the most any other page of its document holds. A
gold set whose questions copy their pages (on average at least ``WORDING_WARN_SHARE`` of a
question's content words on its gold page) measures word matching: BM25 finds such a page by its
words, and the set cannot tell a ranking that reads meaning from one that counts words. The
threshold sits between the two kinds the project ships: the benchmark, whole-report and manuals
sets average 0.66-0.79, the paraphrased sets, written with no run of three content words from the
page, 0.36-0.49 (docs/evaluation.md). A set with fewer than ``MIN_WORDING_QUESTIONS`` questions
placed is described, not judged.

Pure: layouts, gold sets and model weights in, a JSON-ready dict and sentences out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from scipy.stats import binomtest

from ragloupe.evaluate import coverage_text as W
from ragloupe.evaluate.goldset import GoldQuery, GoldSet
from ragloupe.index.lexical import tokenize
from ragloupe.models import Chunk

ALPHA = 0.01
MIN_QUESTIONS = 20
MIN_LIFT = 1.5
MIN_POINTS = 0.05
TENTHS = W.TENTHS
FIGURE_SHARE = 0.25  # a page whose words are at least this share of figures is a table page
# Wording: a gold set is warned about when its questions hold on average at least this share of
# their content words on their gold page; a question is "word-matched" when its gold page holds at
# least WORD_MATCH_SHARE of them and no other page of its document holds more.
WORDING_WARN_SHARE = 0.6
WORD_MATCH_SHARE = 0.75
MIN_WORDING_QUESTIONS = 10
NO_SECTION = W.NO_SECTION
DIMENSIONS = ("position", "section", "kind")
RULE = (f"a stratum is flagged when the gold set's share in it differs from the documents' share by a "
        f"factor of at least {MIN_LIFT} and by at least {MIN_POINTS * 100:.0f} percentage points, with an "
        f"exact two-sided binomial test p < {ALPHA} after Bonferroni correction over the dimension's "
        f"strata; gold sets with fewer than {MIN_QUESTIONS} questions placed are not judged")
TABLE_RULE = (f"a table page holds a table chunk or a table cut out of the page, or at least "
              f"{FIGURE_SHARE:.0%} of its words are figures (a table flattened to text)")

_FIGURE = re.compile(r"^[(\[£$€-]*\d[\d,.]*%?[)\]]*[.,;:]?$")
_CONT = re.compile(r"\s*\((?:cont(?:inued)?\.?|contd\.?)\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class FeatureReading:
    """What a learned-fusion feature reads of where a unit sits, and what its sign favours."""

    dimension: str
    what: str
    positive: str  # what a positive weight favours
    negative: str


# Features whose value is a function of where a unit sits (its position, section or kind),
# so a gold set skewed on that dimension can teach a model to rank by it. Lexical features
# over whole sections (section_bm25_rel) read the question against the text and are not here;
# the heading matches are, since a gold set drawn from a few sections rewards their heading words.
FEATURE_READS = {
    "page_position": FeatureReading("position", "page position", "later pages", "early pages"),
    "is_table": FeatureReading("kind", "being a table", "table chunks", "prose chunks"),
    "heading_match": FeatureReading("section", "section-heading matches",
                                    "chunks whose heading shares the question's words",
                                    "chunks whose heading does not share them"),
    "caps_heading_match": FeatureReading("section", "matches in a page's upper-case headings",
                                         "pages whose headings share the question's words",
                                         "pages whose headings do not share them"),
}


@dataclass(frozen=True)
class UnitPlace:
    """Where one unit (a page, or a record) sits in its document."""

    unit: str
    ordinal: int  # 1-based: the page number, or the record's place in its file
    section: str
    table: bool


@dataclass(frozen=True)
class DocumentLayout:
    """A document's units that can hold an answer (indexed ones), in order, and its length."""

    doc_id: str
    n_units: int  # every page (or record) of the document, indexed or not
    units: tuple[UnitPlace, ...]
    level: str = "page"
    # unit -> the BM25 tokens of its whole text (empty: the layout was made without text)
    terms: Mapping[str, frozenset] = field(default_factory=dict, compare=False, hash=False)

    def stratum(self, dimension: str, place: UnitPlace) -> str:
        if dimension == "position":
            return str(min(TENTHS - 1, (place.ordinal - 1) * TENTHS // max(self.n_units, 1)))
        if dimension == "section":
            return place.section
        return "table" if place.table else "prose"

    def shares(self, dimension: str) -> dict[str, float]:
        counts: dict[str, float] = defaultdict(float)
        for place in self.units:
            counts[self.stratum(dimension, place)] += 1.0 / len(self.units)
        return dict(counts)


@dataclass(frozen=True)
class ModelWeights:
    """A learned model's weight on each standardised feature, and what to call it."""

    label: str
    weights: Mapping[str, float]
    units: str = "page"
    trained_on: tuple[str, ...] = ()  # names of the audited gold sets it was trained on


# --- layouts from what the index holds -------------------------------------------------

def layout_from_chunks(doc_id: str, n_units: int, chunks: Iterable[Chunk],
                       table_pages: Iterable[int] = ()) -> DocumentLayout:
    """A document's layout from its chunks (section, kind, text) and the manifest's page count.

    A unit's section is its first chunk's top-level heading (" (cont)" dropped); a record's is
    its top chapter ("4" of "4.6.1") when its id is numbered, else its title.
    """
    by_unit: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        by_unit[chunk.unit].append(chunk)
    tables = set(table_pages)
    places, level = [], "page"
    for unit, parts in by_unit.items():
        parts.sort(key=lambda c: c.position)
        first = parts[0]
        if first.record_id:
            level = "record"
            section = _chapter(first.record_id) or first.section.strip() or NO_SECTION
        else:
            section = top_section(first.section)
        table = (first.page in tables and not first.record_id) or any(c.kind == "table" for c in parts) \
            or figure_share(" ".join(c.text for c in parts)) >= FIGURE_SHARE
        places.append(UnitPlace(unit, first.page, section, table))
    places.sort(key=lambda p: p.ordinal)
    terms = {unit: frozenset(tokenize(" ".join(c.text for c in parts))) for unit, parts in by_unit.items()}
    return DocumentLayout(doc_id, max([n_units, *(p.ordinal for p in places)]), tuple(places), level, terms)


def top_section(section: str) -> str:
    """'PERFORMANCE REPORT › OVERVIEW (cont)' -> 'PERFORMANCE REPORT'; '' -> NO_SECTION."""
    top = _CONT.sub("", section.split(" › ")[0]).strip()
    return top or NO_SECTION


def _chapter(record_id: str) -> str:
    head = record_id.split(".")[0].strip()
    return f"chapter {head}" if head.isdigit() else ""


def figure_share(text: str) -> float:
    """The share of a text's words that are figures (1,234 (56) 7.5% £12)."""
    words = text.split()
    return sum(1 for w in words if _FIGURE.match(w)) / len(words) if words else 0.0


# --- the audit ---------------------------------------------------------------------------

def audit(goldsets: Sequence[GoldSet], layouts: Mapping[str, DocumentLayout],
          models: Sequence[ModelWeights] = ()) -> dict:
    """The coverage section of a report: per gold set, pooled per unit level, and model warnings."""
    per_set = [audit_questions(g.name, g.queries, layouts) for g in goldsets]
    pooled = {}
    for level in ("page", "record"):
        queries = [q for g in goldsets for q in g.queries if q.level == level]
        if queries and len(goldsets) > 1:
            pooled[level] = audit_questions(f"all {level}-level gold sets", queries, layouts)
        elif queries:
            pooled[level] = next(a for a in per_set if a["level"] == level)
    n_sets = {level: sum(1 for g in goldsets if any(q.level == level for q in g.queries)) for level in pooled}
    model_rows = [model_audit(m, pooled.get(m.units), n_sets.get(m.units, 0)) for m in models]
    # Several gold sets: the pooled findings are the warnings; each set's own are in its entry.
    warnings = [s for a in (pooled.values() if len(goldsets) > 1 else per_set) for s in a["findings"]]
    # Wording is a property of how each set was written: its warning is each set's own.
    warnings += [a["wording"]["finding"] for a in per_set if a["wording"]["finding"]]
    warnings += [w for m in model_rows for w in m["warnings"]]
    return {"rule": RULE, "table_rule": TABLE_RULE, "alpha": ALPHA, "min_questions": MIN_QUESTIONS,
            "min_lift": MIN_LIFT, "min_points": MIN_POINTS, "wording_rule": WORDING_RULE, "feature_reads": {
                name: r.dimension for name, r in sorted(FEATURE_READS.items())},
            "goldsets": per_set, "pooled": pooled, "models": model_rows,
            "flagged": any(a["skewed"] for a in [*per_set, *pooled.values()]),
            "warnings": list(dict.fromkeys(warnings))}


def audit_questions(name: str, queries: Sequence[GoldQuery], layouts: Mapping[str, DocumentLayout]) -> dict:
    """Observed against expected shares on every dimension for one group of questions."""
    placed = []  # (layout, [(place, weight)])
    for query in queries:
        layout = layouts.get(query.doc_id)
        places = _gold_places(query, layout) if layout else []
        if places:
            placed.append((layout, [(p, 1.0 / len(places)) for p in places]))
    n = len(placed)
    judged = n >= MIN_QUESTIONS
    level = "record" if any(q.level == "record" for q in queries) else "page"
    dimensions = {d: _dimension(d, placed, judged, level) for d in DIMENSIONS}
    findings = [dimensions[d]["finding"] for d in DIMENSIONS if dimensions[d]["finding"]]
    findings = [f"{name}: {s}" for s in findings]
    wording = wording_of(queries, layouts)
    if wording["finding"]:
        wording["finding"] = f"{name}: {wording['finding']}"
    return {"name": name, "level": level, "n_questions": len(queries), "n_placed": n, "wording": wording,
            "n_documents": len({layout.doc_id for layout, _ in placed}),
            "judged": judged, "skewed": any(dimensions[d]["skewed"] for d in DIMENSIONS),
            "note": "" if judged else _not_judged(n, queries, layouts),
            "dimensions": dimensions, "findings": findings}


def _not_judged(n_placed: int, queries: Sequence[GoldQuery], layouts: Mapping[str, DocumentLayout]) -> str:
    """Why a group is not judged: too few questions placed, or none, as their documents are not indexed."""
    if queries and not any(q.doc_id in layouts for q in queries):  # not "too few": none can be placed
        return f"none of its {len(queries)} question(s) placed: their documents are not in this index"
    return (f"{n_placed} question(s) placed: too few to judge (at least {MIN_QUESTIONS}); shares are shown, "
            "nothing is flagged")


WORDING_RULE = (f"a gold set only tests word matching when its questions hold on average at least "
                f"{WORDING_WARN_SHARE:.0%} of their content words on their gold page (or record); a question is "
                f"word-matched when its gold page holds at least {WORD_MATCH_SHARE:.0%} of them and no other "
                f"page of its document holds more; sets with fewer than {MIN_WORDING_QUESTIONS} questions placed "
                f"are not judged")


def question_wording(query: GoldQuery, layout: DocumentLayout) -> dict | None:
    """The share of the question's content words on its gold unit (the best of them) and on the
    other unit of its document that holds the most; None when there is nothing to compare."""
    words = set(tokenize(query.question))
    gold = [u for u in query.expected_units if u in layout.terms]
    if not words or not gold or not layout.terms:
        return None
    def share(unit: str) -> float:
        return len(words & layout.terms[unit]) / len(words)
    on_gold = max(share(u) for u in gold)
    others = max((share(u) for u in layout.terms if u not in query.expected_units), default=0.0)
    return {"query_id": query.query_id, "n_words": len(words), "gold_share": on_gold, "best_other_share": others,
            "word_matched": bool(on_gold >= WORD_MATCH_SHARE and on_gold >= others)}


def wording_of(queries: Sequence[GoldQuery], layouts: Mapping[str, DocumentLayout]) -> dict:
    """The wording dimension of a group of questions: the mean shares, the word-matched share, and a
    finding when the group only tests word matching."""
    rows = [row for q in queries if q.doc_id in layouts
            for row in [question_wording(q, layouts[q.doc_id])] if row is not None]
    n = len(rows)
    mean = lambda key: sum(float(r[key]) for r in rows) / n if n else 0.0  # noqa: E731
    gold, other, matched = mean("gold_share"), mean("best_other_share"), mean("word_matched")
    judged = n >= MIN_WORDING_QUESTIONS
    only_words = judged and gold >= WORDING_WARN_SHARE
    finding = W.wording_finding(gold, other, matched, WORD_MATCH_SHARE) if only_words else ""
    return {"n_placed": n, "judged": judged, "gold_share": gold, "best_other_share": other,
            "word_matched_share": matched, "only_word_matching": only_words, "finding": finding,
            "questions": rows}


def _gold_places(query: GoldQuery, layout: DocumentLayout) -> list[UnitPlace]:
    by_unit = {p.unit: p for p in layout.units}
    return [by_unit[u] for u in query.expected_units if u in by_unit]


def _dimension(dimension: str, placed: list, judged: bool, level: str = "page") -> dict:
    """One dimension's strata (observed against expected shares), tested, and its finding in words.

    Section and kind test each stratum. Position tests every contiguous run of tenths (the
    finding is the run with the lowest p-value that passes), so "the first three tenths" is
    found whole even when one of its tenths alone is not far from expectation.
    """
    n = len(placed)
    observed: dict[str, float] = defaultdict(float)
    expected: dict[str, float] = defaultdict(float)
    for layout, places in placed:
        for place, weight in places:
            observed[layout.stratum(dimension, place)] += weight / n
        for stratum, share in layout.shares(dimension).items():
            expected[stratum] += share / n
    keys = _ordered(dimension, set(observed) | set(expected), expected)
    strata = [{"stratum": key, "label": stratum_label(dimension, key), "share": observed.get(key, 0.0),
               "expected": expected.get(key, 0.0), "questions": observed.get(key, 0.0) * n}
              for key in keys]
    if dimension == "position":
        runs = [(lo, hi) for lo in range(TENTHS) for hi in range(lo, TENTHS) if (lo, hi) != (0, TENTHS - 1)]
        tested = [_test([str(t) for t in range(lo, hi + 1)], strata, n, len(runs)) for lo, hi in runs]
    else:
        tested = [_test([s["stratum"]], strata, n, len(keys)) for s in strata]
        for stratum, test in zip(strata, tested):
            stratum.update({k: test[k] for k in ("p_value", "p_adjusted", "flag")})
    flagged = [t for t in tested if t["flag"]] if judged else []
    if dimension == "position":
        flagged = sorted(flagged, key=lambda t: (t["p_value"], len(t["strata"])))[:1]
    finding = W.finding(dimension, flagged, strata, level) if flagged else ""
    return {"strata": strata, "skewed": bool(flagged), "flagged": flagged, "finding": finding,
            "tests": len(tested)}


def _test(members: list[str], strata: list[dict], n: int, m: int) -> dict:
    """Exact two-sided binomial test of the questions in ``members`` against their expected share,
    Bonferroni-corrected over the ``m`` tests of the dimension; flagged "over", "under" or ""."""
    chosen = [s for s in strata if s["stratum"] in members]
    share = sum(s["share"] for s in chosen)
    expected = min(max(sum(s["expected"] for s in chosen), 1e-12), 1.0)
    p_value = float(binomtest(min(n, round(share * n)), n, expected).pvalue) if n else 1.0
    adjusted = min(1.0, p_value * m)
    flag = ""
    if adjusted < ALPHA and abs(share - expected) >= MIN_POINTS:
        if share >= MIN_LIFT * expected:
            flag = "over"
        elif share * MIN_LIFT <= expected:
            flag = "under"
    return {"strata": members, "share": share, "expected": expected, "p_value": p_value,
            "p_adjusted": adjusted, "flag": flag}


def _ordered(dimension: str, keys: set[str], expected: Mapping[str, float]) -> list[str]:
    if dimension == "position":
        return [str(t) for t in range(TENTHS)]
    if dimension == "kind":
        return ["table", "prose"]
    return sorted(keys, key=lambda k: (-expected.get(k, 0.0), k))


def stratum_label(dimension: str, key: str) -> str:
    if dimension == "position":
        t = int(key)
        return f"{W.ordinal(t + 1)} tenth ({t * 10}-{(t + 1) * 10}%)"
    return key


# --- the model warning -------------------------------------------------------------------

def leaning_features(weights: Mapping[str, float], top: int = 3, share_of_largest: float = 0.5) -> list[dict]:
    """The features a model leans on: its largest standardised weight, and any other of its
    ``top`` largest that is at least ``share_of_largest`` of it."""
    ranked = sorted(((name, float(w)) for name, w in weights.items() if w), key=lambda x: (-abs(x[1]), x[0]))
    if not ranked:
        return []
    largest = abs(ranked[0][1])
    return [{"feature": name, "weight": w, "rank": r} for r, (name, w) in enumerate(ranked[:top], start=1)
            if r == 1 or abs(w) >= share_of_largest * largest]


def model_audit(model: ModelWeights, pooled: Mapping | None, n_goldsets: int = 0) -> dict:
    """Which of the model's leading features read a dimension the gold sets are skewed on."""
    leaning = leaning_features(model.weights)
    warnings = []
    for lead in leaning:
        reading = FEATURE_READS.get(lead["feature"])
        lead["dimension"] = reading.dimension if reading else ""
        if reading is None or pooled is None or not pooled["judged"]:
            continue
        dimension = pooled["dimensions"][reading.dimension]
        if dimension["skewed"]:
            everything = n_goldsets and len(model.trained_on) == n_goldsets
            trained = (("this gold set" if n_goldsets == 1 else "these gold sets") if everything
                       else ", ".join(model.trained_on))
            warnings.append(W.model_warning(model.label, trained, lead, reading, reading.dimension, dimension))
    return {"label": model.label, "units": model.units, "trained_on": list(model.trained_on),
            "leaning": leaning, "warnings": warnings}
