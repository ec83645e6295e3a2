"""A p-value is written one way everywhere: 'p < 0.001' below a thousandth, never 'p = 0.000'."""

import re

from ragloupe.config import PROJECT_ROOT
from ragloupe.evaluate.stats import p_text, p_value_text
from ragloupe.ui.tables import fmt_p, run_comparison_rows


def test_a_tiny_p_reads_below_a_thousandth_and_a_larger_one_to_three_decimals():
    assert p_text(0.0) == "p < 0.001" and p_text(0.0004) == "p < 0.001"
    assert p_text(0.0123) == "p = 0.012" and p_text(0.5) == "p = 0.500"
    assert p_value_text(0.0) == "< 0.001" and p_value_text(0.04) == "0.040"
    assert fmt_p(0.0) == "p < 0.001"


def test_the_evaluation_pages_comparison_shows_no_p_of_zero():
    class Compared:  # what run_comparison_rows reads of a Comparison: its metrics
        metrics = {"hit@1": {"a": 0.5, "b": 0.9, "diff": 0.4, "ci_low": 0.3, "ci_high": 0.5,
                             "p_value": 0.0, "significant": True}}

    (row,) = run_comparison_rows(Compared())
    assert row["p"] == "p < 0.001"


def test_no_module_formats_a_p_value_on_its_own():
    """Every p shown goes through evaluate.stats.p_text / p_value_text, so none can print 'p = 0.000'."""
    own = re.compile(r"p_value['\"]?\]?\s*:\s*[>+]?\d*\.\d+f|p = \{[^}]*:\.\d+f\}")
    offenders = [f"{path.relative_to(PROJECT_ROOT)}: {line.strip()}"
                 for folder in ("src", "pages", "app") for path in (PROJECT_ROOT / folder).rglob("*.py")
                 for line in path.read_text().splitlines() if own.search(line)]
    assert offenders == []
