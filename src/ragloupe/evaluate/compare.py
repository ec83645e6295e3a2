"""Paired comparison of two runs on the same gold questions.

Each question is answered by both runs, so the comparison is paired: per
query deltas (improved, regressed, unchanged by the rank of the first
relevant unit), the difference of each metric's mean with a paired
randomisation test (scipy permutation_test) and a paired bootstrap CI, and a
verdict in plain words. A difference is called only when p < ALPHA.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragloupe.errors import RunsNotComparable
from ragloupe.evaluate.metrics import mean_label, metric_names
from ragloupe.evaluate.runs import BOOTSTRAP_SEED, FLOAT_DIGITS, RunReport
from ragloupe.evaluate.stats import paired_bootstrap_ci, paired_permutation_p
from ragloupe.evaluate.stats import p_text

ALPHA = 0.05
HEADLINE = ("hit@1", "mrr")


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    n_paired: int
    metrics: dict  # metric -> {a, b, diff, p_value, ci_low, ci_high, significant}
    improved: list  # B better than A: [{query_id, goldset, rank_a, rank_b}]
    regressed: list
    unchanged: list
    verdicts: list[str]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"run_a": self.run_a, "run_b": self.run_b, "n_paired": self.n_paired,
                "metrics": self.metrics, "improved": self.improved, "regressed": self.regressed,
                "unchanged": self.unchanged, "verdicts": self.verdicts, "notes": self.notes}


def compare(run_a: RunReport, run_b: RunReport, alpha: float = ALPHA) -> Comparison:
    """Compare run B against run A on the questions both answered.

    "improved" means B ranked the first relevant unit higher than A did.
    Questions in only one run are left out, and the notes say how many.
    A difference is significant when its paired test gives p < ``alpha``.
    """
    queries_a = {(q["goldset"], q["query_id"]): q for q in run_a.data["queries"]}
    queries_b = {(q["goldset"], q["query_id"]): q for q in run_b.data["queries"]}
    shared = sorted(set(queries_a) & set(queries_b))
    if not shared:
        raise RunsNotComparable(f"runs {run_a.run_id} and {run_b.run_id} share no gold question")
    notes = []
    only_a, only_b = len(queries_a) - len(shared), len(queries_b) - len(shared)
    if only_a or only_b:
        notes.append(f"compared on the {len(shared)} questions in both runs "
                     f"({only_a} only in A, {only_b} only in B)")
    hashes_a = run_a.data["fingerprints"]["goldsets"]
    hashes_b = run_b.data["fingerprints"]["goldsets"]
    changed = sorted(n for n in set(hashes_a) & set(hashes_b) if hashes_a[n] != hashes_b[n])
    if changed:
        notes.append(f"gold set {', '.join(changed)} differs between the runs: labels may have changed")
    if run_a.data["scope"] != run_b.data["scope"]:
        notes.append(f"the runs have different scopes ({run_a.data['scope']} vs {run_b.data['scope']})")

    in_both = set(run_a.data["queries"][0]["metrics"]) & set(run_b.data["queries"][0]["metrics"])
    ks = sorted(set(run_a.data["ks"]) | set(run_b.data["ks"]))
    names = [n for n in metric_names(ks) if n in in_both]
    metrics = {}
    for name in names:
        a = [float(queries_a[key]["metrics"][name]) for key in shared]
        b = [float(queries_b[key]["metrics"][name]) for key in shared]
        label = mean_label(name)
        p = paired_permutation_p(b, a, seed=BOOTSTRAP_SEED)
        low, high = paired_bootstrap_ci(b, a, seed=BOOTSTRAP_SEED)
        mean_a, mean_b = sum(a) / len(a), sum(b) / len(b)
        metrics[label] = {k: (round(v, FLOAT_DIGITS) if isinstance(v, float) else v) for k, v in {
            "a": mean_a, "b": mean_b, "diff": mean_b - mean_a, "p_value": p,
            "ci_low": low, "ci_high": high, "significant": p < alpha}.items()}

    improved, regressed, unchanged = [], [], []
    for key in shared:
        rank_a = queries_a[key]["first_relevant_rank"]
        rank_b = queries_b[key]["first_relevant_rank"]
        row = {"goldset": key[0], "query_id": key[1], "rank_a": rank_a, "rank_b": rank_b}
        order_a, order_b = _order(rank_a), _order(rank_b)
        (improved if order_b < order_a else regressed if order_b > order_a else unchanged).append(row)

    # Runs are named by their mode, or by their ids when both ran the same mode.
    label_a, label_b = run_a.data["mode"], run_b.data["mode"]
    if label_a == label_b:
        label_a, label_b = run_a.run_id, run_b.run_id
    verdicts = [verdict(name, metrics[name], label_a, label_b) for name in HEADLINE if name in metrics]
    return Comparison(run_a.run_id, run_b.run_id, len(shared), metrics, improved, regressed,
                      unchanged, verdicts, notes)


def verdict(metric: str, result: dict, label_a: str, label_b: str) -> str:
    """'hybrid beats dense on Hit@1 by 0.07, p = 0.01' or 'no measurable difference ...'."""
    pretty = {"mrr": "MRR"}.get(metric, metric.replace("hit", "Hit").replace("recall", "Recall")
                                 .replace("ndcg", "nDCG"))
    p = result["p_value"]
    if not result["significant"]:
        return (f"no measurable difference on {pretty} ({label_b} {result['b']:.3f} vs {label_a} "
                f"{result['a']:.3f}, {_p(p)})")
    winner, loser = (label_b, label_a) if result["diff"] > 0 else (label_a, label_b)
    return f"{winner} beats {loser} on {pretty} by {abs(result['diff']):.2f}, {_p(p)}"


def _order(rank: int | None) -> float:
    return float("inf") if rank is None else float(rank)


def _p(p: float) -> str:
    return p_text(p)
