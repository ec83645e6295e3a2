"""Arithmetic the groundedness screen accepts for a figure no passage writes (DERIVED).

Two kinds of operands, each tried at the precision the figure is written with:

- the sentence's own figures (sentence_derivation): a sum, difference, ratio or
  percentage of two other figures of the same sentence that are themselves in a
  passage it cites, in the same unit ("exceeded by £4.8 million (£10.2 million
  against a target of £5.4 million)"). A handful of pairs, so a made-up figure
  almost never matches by chance;
- the figures of one cited passage (passage_derivation): "Zone A extends 300 m
  and zone B extends 200 m" -> "the total extent is 500 m". A page of accounts
  holds a hundred figures, so ten thousand pairs, and a made-up figure equals
  one of their sums by chance. So, like the rounding rule, it is decided per
  passage: arithmetic_chance is the share of the figures written at the claim's
  precision in its decade (for 500 m: 100 m ... 999 m) that equal some sum,
  difference or ratio of the passage's figures, and the derivation is accepted
  only where that share is at most MAX_ARITHMETIC_CHANCE. Passage figures are
  read as written, and also (both operands alike) in thousands under a "£000"
  note: more readings only make the chance larger. Bare small integers and
  years are no operands, as they are no checkable figures ("17,703 = 17,700 + 3"
  would explain every one-digit slip of a figure next to a footnote number).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from itertools import permutations
from typing import Any, Sequence

import numpy as np

from ragloupe.numbers import Quantity, is_year

# The largest share of random figures (same precision, same decade) that some arithmetic over a
# passage's figures would explain, for that arithmetic to count as evidence. Set by issue 22 at 2%,
# the same ceiling benchmarks/screen_adversarial.py holds made-up figures to.
MAX_ARITHMETIC_CHANCE = 0.02
NEGLIGIBLE_OPERAND = 0.01  # see passage_arithmetic


def same_unit(claim: Quantity, claim_unit: str, other: Quantity, other_unit: str) -> bool:
    """Units must agree: "£1.3m" is not "1.3 mm", "£47.3m" not "47.3 years", "10 m" not "10 mm".

    Percentages are compared with percentages (numbers.same_quantity); two
    currencies must be the same one; a bare figure may stand for money (a
    table under a "£000" header writes none).
    """
    if claim.percent or other.percent:
        return claim.percent and other.percent
    if claim.currency and other.currency and claim.currency != other.currency:
        return False
    return claim_unit == other_unit


def decimals(raw: str) -> int:
    match = re.search(r"\d\.(\d+)", raw)
    return len(match.group(1)) if match else 0


def close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= max(tolerance, 1e-9 * max(abs(a), abs(b)))


def claim_step(claim: Quantity) -> float:
    """What the figure's last written digit stands for: 500 m -> 1 m, £4.8m -> £0.1m, 12.5% -> 0.1."""
    return 10 ** -decimals(claim.raw) * (1.0 if claim.percent else claim.scale)


# ----------------------------------------------------------------------------
# The sentence's own figures


def sentence_derivation(token: Any, operands: Sequence[Any]) -> str | None:
    """'£4.8 million = £10.2 million − £5.4 million' when the figure (a groundedness.Checkable)
    is a sum, difference, ratio or percentage of two ``operands`` (other figures of its
    sentence, each in a passage the sentence cites), at the precision it is written with."""
    claim = token.quantity
    if claim is None:
        return None
    targets = [(claim.scaled, claim_step(claim))]
    if claim.scale != 1.0 and not claim.percent:  # '£12,987 (£000)' from 1,311,111 − 1,298,124 as written
        targets.append((claim.value, 10 ** -decimals(claim.raw)))
    for a, b in permutations(operands, 2):
        for name, value in combinations(token, a, b):
            if any(close(value, target, step / 2) for target, step in targets):
                return f"{token.raw} = {name.format(a=a.raw, b=b.raw)}, both stated in its sentence and cited"
    return None


def combinations(token: Any, a: Any, b: Any) -> list[tuple[str, float]]:
    """The arithmetic tried for ``token`` over two figures whose units agree with it:
    a sum or difference in the same unit (percentage points included); a share
    or change in percent of two figures of one unit; a ratio for a bare figure."""
    claim, x, y = token.quantity, a.quantity, b.quantity
    assert claim is not None and x is not None and y is not None
    if not same_unit(x, a.unit, y, b.unit):
        return []
    out: list[tuple[str, float]] = []
    if same_unit(claim, token.unit, x, a.unit):
        out += [("{a} + {b}", x.scaled + y.scaled), ("{a} − {b}", x.scaled - y.scaled)]
    if claim.percent and not x.percent and y.scaled:
        out += [("{a} / {b} × 100", x.scaled / y.scaled * 100),
                ("({a} − {b}) / {b} × 100", (x.scaled - y.scaled) / y.scaled * 100)]
    if _bare(token) and y.scaled:
        out.append(("{a} / {b}", x.scaled / y.scaled))
    return [(name, value) for name, value in out if value > 0]


def _bare(token: Any) -> bool:
    claim = token.quantity
    return not (claim.percent or claim.currency or token.unit or claim.scale != 1.0)


# ----------------------------------------------------------------------------
# The figures of one passage


@dataclass(frozen=True)
class PassageArithmetic:
    """Every value the arithmetic of one passage yields for a claim, and how each was got."""

    values: np.ndarray  # float, one per (pair, operation)
    # (first index into values, label, the figures as written, operand rows, operand columns)
    blocks: tuple[tuple[int, str, tuple[str, ...], np.ndarray, np.ndarray], ...]

    def name(self, index: int) -> str:
        """'300 m + 200 m': how values[index] was computed (formatted only when asked)."""
        first, label, raws, rows, cols = next(b for b in reversed(self.blocks) if b[0] <= index)
        return label.format(a=raws[rows[index - first]], b=raws[cols[index - first]])


def passage_derivation(token: Any, facts: Any) -> str | None:
    """'500 m = 300 m + 200 m, in passage [1] ...' when the figure equals a sum, difference or
    ratio of two figures of the passage (groundedness' per-passage facts) and the passage is
    sparse enough that a random figure of that precision would so match at most
    MAX_ARITHMETIC_CHANCE of the time."""
    claim = token.quantity
    if claim is None or claim.scaled <= 0:
        return None
    arithmetic = passage_arithmetic(token, facts)
    if arithmetic.values.size == 0:
        return None
    step = claim_step(claim)
    hits = np.flatnonzero(np.abs(arithmetic.values - claim.scaled) <= step / 2 + 1e-9 * claim.scaled)
    if hits.size == 0:
        return None
    chance = arithmetic_chance(claim.scaled, step, arithmetic.values)
    if chance > MAX_ARITHMETIC_CHANCE:
        return None
    return (f"{token.raw} = {arithmetic.name(int(hits[0]))}, both in passage [{facts.number}]; "
            f"{chance:.1%} of figures written this precisely would equal some arithmetic of its figures")


def arithmetic_chance(value: float, step: float, values: np.ndarray) -> float:
    """The share of the figures written at ``step`` in ``value``'s decade that one of ``values``
    rounds to: how likely a made-up figure at that precision is to be 'derived' by chance."""
    if value <= 0 or step <= 0:
        return 1.0
    low = 10 ** math.floor(math.log10(value))
    high = low * 10
    inside = values[(values >= low - step / 2) & (values < high)]
    cells = np.unique(np.round(inside / step))
    return float(len(cells)) / max(1.0, (high - low) / step)


def passage_arithmetic(token: Any, facts: Any) -> PassageArithmetic:
    """Sums and differences of the passage's figures in the claim's unit, shares and changes in
    percent for a percentage, ratios for a bare figure: the operations sentence_derivation tries."""
    claim = token.quantity
    groups: dict[tuple, list[tuple[int, str, float]]] = {}
    for figure, (q, unit) in enumerate(zip(facts.quantities, facts.units)):
        if not unit and (is_year(q) or not q.distinctive):
            continue  # "2021", "3", "14": not figures the screen checks, so not operands either
        written = f"{q.raw} {unit}" if unit and not q.percent else q.raw
        groups.setdefault(("as written", q.percent, q.currency, unit), []).append((figure, written, q.scaled))
        if facts.thousands and q.scale == 1.0 and not q.percent:
            # under a "£000" note a bare figure may be thousands; both operands are then read so
            groups.setdefault(("thousands", q.percent, q.currency, unit), []).append((figure, written, q.value * 1e3))
    values: list[np.ndarray] = []
    blocks: list = []
    size = 0
    for (_, percent, currency, unit), figures in groups.items():
        rep = Quantity("", 0, 0, 1.0, 1.0, currency, percent)
        ids = np.array([figure for figure, _, _ in figures])
        raws = tuple(raw for _, raw, _ in figures)
        x = np.array([v for _, _, v in figures], dtype=float)
        for label, grid in _operations(token, claim, rep, unit, x):
            # a figure is not paired with itself; only finite positive results count
            keep = np.isfinite(grid) & (grid > 0) & (ids[:, None] != ids[None, :])
            rows, cols = np.nonzero(keep)
            values.append(grid[rows, cols])
            blocks.append((size, label, raws, rows, cols))
            size += len(rows)
    if not size:
        return PassageArithmetic(np.zeros(0), ())
    return PassageArithmetic(np.concatenate(values), tuple(blocks))


def _operations(token: Any, claim: Quantity, rep: Quantity, unit: str, x: np.ndarray):
    """(label, n×n matrix of a∘b) for the operations that fit the claim and this group's unit."""
    a, b = x[:, None], x[None, :]
    if same_unit(claim, token.unit, rep, unit):
        # A sum or difference with an operand under 1% of the other is the other figure nudged:
        # it would explain every slip in a last digit ("461,043 = 461,044 − 1.1"), so it is not tried.
        comparable = np.minimum(np.abs(a), np.abs(b)) >= NEGLIGIBLE_OPERAND * np.maximum(np.abs(a), np.abs(b))
        yield "{a} + {b}", np.where(comparable, a + b, np.nan)
        yield "{a} − {b}", np.where(comparable, a - b, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        if claim.percent and not rep.percent:
            yield "{a} / {b} × 100", a / b * 100
            yield "({a} − {b}) / {b} × 100", (a - b) / b * 100
        if _bare(token):
            yield "{a} / {b}", a / b

