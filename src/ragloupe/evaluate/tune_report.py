"""The body of a `ragloupe tune` report: figures per family, the out-of-fold selection, the decision.

Deterministic: the same scores give the same dict, byte for byte once written
(schema ragloupe.tune/1; timings are kept apart by runs.Report). tune() adds
the gold-set coverage audit's section (evaluate/coverage_sources.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from ragloupe.config import Settings
from ragloupe.errors import RunNotFound
from ragloupe.evaluate import metrics as M
from ragloupe.evaluate.goldset import GoldSet
from ragloupe.evaluate.runs import BOOTSTRAP_SEED, FLOAT_DIGITS, Report, read_report
from ragloupe.evaluate.stats import p_text
from ragloupe.evaluate.tune_folds import (HIT1, KS, METRICS, RR, Fold, FoldResult, TuneQuestion,
                                          in_sample_best, objective_per_query, out_of_fold, paired)
from ragloupe.evaluate.tune_rule import judge, select_default
from ragloupe.evaluate.tune_space import CHUNKING_KNOBS, Config

SCHEMA = "ragloupe.tune/1"
SELECTION = ("worst family: per fold, the configuration whose lowest family mean of the objective on the "
             "training questions is highest (ties: the settings in force, then the first listed)")
SCRATCH_NOTE = ("a chunking other than the index's is scored on a scratch index of the gold sets' documents "
                "only: dense search in the document scope is unaffected, but BM25's document frequencies (and, "
                "in the whole-index scope, the other documents a question competes with) differ from the "
                "main index's")


@dataclass(frozen=True)
class TuneReport(Report):
    """A written tuning run."""


@dataclass(frozen=True)
class Scored:
    """Everything a report is built from."""

    sets: Sequence[GoldSet]
    questions: Sequence[TuneQuestion]
    configs: Sequence[Config]
    scores: np.ndarray  # [config, question, metric]
    folds: Sequence[Fold]
    picks: Sequence[FoldResult]
    scope: str
    space: str
    settings: Settings
    replay_check: dict
    variants: Sequence[dict] | None = None
    in_force: Any = None  # tune_trainer.InForce when the settings in force use a learned model
    # The confirmation family (--confirm): every configuration's metrics on its questions, never chosen on.
    confirm_scores: np.ndarray | None = None  # [config, question, metric]
    confirm_families: Sequence[str] = ()
    # Configurations whose query adapter was retrained in the folds (evaluate/tune_adapter.py).
    adapter_retrained: Sequence[int] = ()

    @property
    def families(self) -> list[str]:
        return [tq.family for tq in self.questions]


def figures(matrix: np.ndarray) -> dict:
    """Hit@k and MRR with bootstrap CIs, and the objective, of per-question metric rows."""
    rows = [{name: float(value) for name, value in zip(METRICS, row)} for row in matrix]
    estimates = M.aggregate(rows, KS, seed=BOOTSTRAP_SEED)
    out = {name: estimates[name].as_dict(FLOAT_DIGITS) for name in ("hit@1", "hit@3", "hit@5", "hit@10", "mrr")}
    out["objective"] = round(float(objective_per_query(matrix).mean()), FLOAT_DIGITS) if len(matrix) else 0.0
    return out


def bm25_index(configs: Sequence[Config], settings: Settings) -> int:
    return _index_of(configs, Config.of("bm25", settings, query_analysis=False, period_boost=0.0,
                                        lexical_rerank=False))


def build_report(run: Scored) -> dict:
    """The deterministic body of a tuning report.

    ``scores`` of a learned configuration are leave-one-group-out figures
    (each question scored by a model that never saw its group), so its
    "in-sample" figure is never a fit to the questions it is scored on.
    ``in_force`` (settings in force that use learned fusion) replaces the
    settings-in-force row with what search() does under them.
    """
    configs, scores = run.configs, run.scores
    oof = out_of_fold(scores, run.folds, run.picks)
    best = in_sample_best(objective_per_query(scores), run.families)
    current_scores = run.in_force.scores if run.in_force is not None else scores[0]
    bm25 = bm25_index(configs, run.settings)
    in_sample, oof_figures = figures(scores[best]), figures(oof)
    gap = {name: round(in_sample[name]["mean"] - oof_figures[name]["mean"], FLOAT_DIGITS)
           for name in ("hit@1", "hit@3", "mrr")}
    gap["objective"] = round(in_sample["objective"] - oof_figures["objective"], FLOAT_DIGITS)
    versus = {"current": paired(oof, current_scores), "bm25": paired(oof, scores[bm25])}
    rule = select_default(configs, scores, run.families, best, bm25, run.confirm_scores, run.confirm_families)
    chosen = rule["chosen"]["index"]
    confirm = run.confirm_scores
    in_force_rung = judge(0, configs[0], current_scores, scores[bm25], run.families,
                          None if confirm is None else confirm[0], None if confirm is None else confirm[bm25],
                          run.confirm_families)
    versus_chosen = versus["current"] if chosen == best else paired(scores[chosen], current_scores)
    return _rounded({
        **_header(run), "selection": SELECTION,
        "in_sample_best": {"index": best, "label": configs[best].label(), "config": configs[best].as_dict(),
                           "figures": in_sample, "note": "chosen and scored on the same questions: optimistic"},
        "out_of_fold": {"figures": oof_figures, "folds": _fold_rows(run)},
        "optimism_gap": gap,
        "current": {"label": configs[0].label(), "config": configs[0].as_dict(),
                    "figures": figures(current_scores),
                    **({"note": run.in_force.note} if run.in_force is not None else {})},
        "bm25_alone": {"label": configs[bm25].label(), "figures": figures(scores[bm25])},
        "versus": versus,
        "families": family_rows(run, oof, current_scores, scores[bm25], rule),
        "default_rule": rule,
        "confirmation": confirmation_rows(run, chosen, bm25),
        "decision": (decision := apply_decision(configs[chosen], configs[0], versus_chosen, rule=rule,
                                                in_force=in_force_rung)),
        "default": selected_default(configs, chosen, rule, decision),
        "replay_check": run.replay_check,
        "chunking": _chunking(run),
        "configs": _config_rows(run),
        "queries": [{"goldset": tq.query.goldset, "query_id": tq.query.query_id, "group": tq.group,
                     "family": tq.family, "oof_hit@1": float(oof[i, HIT1]), "oof_rr": float(oof[i, RR]),
                     "current_hit@1": float(current_scores[i, HIT1]), "current_rr": float(current_scores[i, RR])}
                    for i, tq in enumerate(run.questions)],
    })


def _header(run: Scored) -> dict:
    return {
        "schema": SCHEMA, "scope": run.scope, "space": run.space, "ks": list(KS),
        "objective": "mean over questions of (Hit@1 + reciprocal rank cut at 10) / 2",
        "procedure": ("nested leave-one-group-out: per fold the configuration best on the training "
                      "groups is scored on the held-out group; held-out questions concatenated"),
        "goldsets": [{"name": g.name, "sha256": g.sha256, "queries": len(g.queries)} for g in run.sets],
        "fingerprints": {"goldsets": {g.name: g.sha256 for g in run.sets},
                         "index_settings": run.settings.index_fingerprint()},
        "groups": {f.held_out: int(len(f.test)) for f in run.folds},
        "n_questions": len(run.questions), "n_configs": len(run.configs),
        "fixed_settings": {k: v for k, v in sorted(run.settings.as_dict().items())
                           if k in ("top_k", "dynamic_cut", "dynamic_cut_value", "rerank_window",
                                    "bm25_backend", "embedding_model")}}


def family_rows(run: Scored, oof: np.ndarray, current: np.ndarray, bm25: np.ndarray, rule: dict | None = None
                ) -> dict:
    """Per family: its questions' out-of-fold figures, the settings in force and BM25 alone, the paired
    test, and the default rule's verdict on it (the default it lands on against BM25 alone)."""
    labels = np.asarray(run.families)
    out = {}
    for name in sorted(set(run.families)):
        rows = np.flatnonzero(labels == name)
        out[name] = {"n_questions": int(len(rows)),
                     "groups": sorted({run.questions[i].group for i in rows}),
                     "out_of_fold": figures(oof[rows]), "current": figures(current[rows]),
                     "bm25_alone": figures(bm25[rows]), "versus_bm25": paired(oof[rows], bm25[rows])}
        if rule is not None:
            out[name]["default_rule"] = {"default": rule["chosen"]["label"],
                                         **rule["chosen"]["families"][name]}
    return out


def confirmation_rows(run: Scored, chosen: int, bm25: int) -> dict:
    """Per confirmation family: the default the rule lands on and BM25 alone, with the paired test
    ({} without a confirmation family). These questions gate; nothing is chosen on them."""
    if run.confirm_scores is None:
        return {}
    labels = np.asarray(run.confirm_families)
    out = {}
    for name in sorted(set(run.confirm_families)):
        rows = np.flatnonzero(labels == name)
        default, base = run.confirm_scores[chosen][rows], run.confirm_scores[bm25][rows]
        out[name] = {"n_questions": int(len(rows)), "default": figures(default), "bm25_alone": figures(base),
                     "versus_bm25": paired(default, base)}
    return out


def _fold_rows(run: Scored) -> list[dict]:
    scores, configs = run.scores, run.configs
    return [{"held_out": p.held_out, "chosen": p.chosen, "label": configs[p.chosen].label(),
             "chunking": configs[p.chosen].chunking,
             "train_objective": float(p.train_objective[p.chosen]),
             "held_out_objective": float(p.held_out_objective[p.chosen]),
             "held_out_hit@1": float(scores[p.chosen][f.test, HIT1].mean()),
             "held_out_mrr": float(scores[p.chosen][f.test, RR].mean())}
            for f, p in zip(run.folds, run.picks)]


def _config_rows(run: Scored) -> list[dict]:
    """How each configuration fared as a candidate: mean over folds of its training (worst-family)
    objective and its held-out objective (the plot of the gap per configuration)."""
    objective = objective_per_query(run.scores)
    train_mean = np.mean([p.train_objective for p in run.picks], axis=0)
    held_mean = np.mean([p.held_out_objective for p in run.picks], axis=0)
    labels = np.asarray(run.families)
    names = sorted(set(run.families))
    return [{"index": c, "label": cfg.label(), "config": cfg.as_dict(),
             "in_sample_objective": float(objective[c].mean()), "train_objective": float(train_mean[c]),
             "held_out_objective": float(held_mean[c]),
             "family_objective": {n: float(objective[c, labels == n].mean()) for n in names},
             "hit@1": float(run.scores[c, :, HIT1].mean()), "mrr": float(run.scores[c, :, RR].mean()),
             "chosen_in_folds": [p.held_out for p in run.picks if p.chosen == c], "learned": cfg.learned,
             "adapter_retrained": c in run.adapter_retrained}
            for c, cfg in enumerate(run.configs)]


def _chunking(run: Scored) -> dict:
    configs = run.configs
    variants = list(run.variants) if run.variants else [{"chunking": configs[0].chunking, "index": "main",
                                                         "configs": [0, len(configs)]}]
    return {"in_force": configs[0].chunking, "note": SCRATCH_NOTE if len(variants) > 1 else "",
            "chosen_in_folds": {p.held_out: configs[p.chosen].chunking for p in run.picks},
            "variants": [{**v, **per_variant(run, range(*v["configs"]))} for v in variants]}


def per_variant(run: Scored, members: Iterable[int]) -> dict:
    """One chunking's figures: its in-sample best, the settings in force on it, and the
    out-of-fold figure of the procedure had it chosen among this chunking's configurations only
    (each fold's choice read from the same training figures the full selection used)."""
    scores, configs = run.scores, run.configs
    members = np.asarray(list(members))

    def brief(c: int, matrix: np.ndarray) -> dict:
        return {"index": int(c), "label": configs[c].label(),
                "objective": float(objective_per_query(matrix).mean()),
                "hit@1": float(matrix[:, HIT1].mean()), "mrr": float(matrix[:, RR].mean())}

    best = int(members[in_sample_best(objective_per_query(scores[members]), run.families)])
    oof = np.zeros(scores.shape[1:])
    chosen = []
    for fold, pick in zip(run.folds, run.picks):
        c = int(members[int(np.argmax(pick.train_objective[members]))])
        oof[fold.test] = scores[c][fold.test]
        chosen.append({"held_out": fold.held_out, "chosen": c, "label": configs[c].label()})
    first = int(members[0])
    note = ({"note": "learned fusion trained inside the folds on this chunking's candidates (out-of-fold); "
                     "the report's settings-in-force row runs the configured model instead"}
            if configs[first].learned else {})
    return {"n_configs": int(len(members)), "in_sample_best": brief(best, scores[best]),
            "settings_in_force": {**brief(first, scores[first]), **note},
            "out_of_fold": {"objective": float(objective_per_query(oof).mean()),
                            "hit@1": float(oof[:, HIT1].mean()), "mrr": float(oof[:, RR].mean()),
                            "folds": chosen}}


def _index_of(configs: Sequence[Config], wanted: Config) -> int:
    for i, config in enumerate(configs):
        if config == wanted:
            return i
    for i, config in enumerate(configs):
        if config.mode == wanted.mode:
            return i
    return 0


def apply_decision(chosen: Config, current: Config, versus_current: dict, rule: dict | None = None,
                   in_force: dict | None = None) -> dict:
    """Whether --apply may write the chosen settings, and why, in a sentence.

    With the default rule (tune_rule.py): nothing is applied unless a confirmation family
    gated the choice; settings in force that fail the rule give way to the rule's default
    without a paired win (the rule already says they lose to BM25 somewhere); otherwise the
    default must beat the settings in force with the paired test.
    """
    test = versus_current["objective"]
    if chosen == current:
        return {"apply": False, "reason": "the procedure chooses the settings in force: nothing to change"}
    rebuild = chosen.chunking != current.chunking
    if rule is not None and not rule["confirmed"]:
        return {"apply": False, "rebuild": rebuild,
                "reason": (f"the default rule lands on {chosen.label()}, provisionally: no confirmation family "
                           "was named (--confirm), so nothing is applied")}
    if in_force is not None and not in_force["passes"]:
        return {"apply": True, "rebuild": rebuild,
                "reason": (f"the settings in force fail the default rule ({'; '.join(in_force['failed'])}): "
                           f"{chosen.label()} passes it"
                           + (f"; chunking {current.chunking} -> {chosen.chunking} needs `ragloupe index --rebuild`"
                              if rebuild else ""))}
    if test["significant_win"]:
        return {"apply": True, "rebuild": rebuild,
                "reason": (f"out-of-fold objective {test['candidate']:.3f} beats the settings in force "
                           f"({test['baseline']:.3f}) by {test['diff']:+.3f}, paired test {p_text(test['p_value'])}"
                           + (f"; chunking {current.chunking} -> {chosen.chunking} needs `ragloupe index --rebuild`"
                              if rebuild else ""))}
    return {"apply": False,
            "reason": (f"out-of-fold objective {test['candidate']:.3f} vs {test['baseline']:.3f} for the "
                       f"settings in force (diff {test['diff']:+.3f}, {p_text(test['p_value'])}): "
                       "not a significant win, the settings stay as they are")}


def selected_default(configs: Sequence[Config], chosen: int, rule: dict, decision: dict) -> dict:
    """What tuning leaves as the default, and why in a phrase: the rule's default when --apply would
    write it (or it is the settings in force); otherwise the settings in force, which either wait for
    a confirmation family or pass the rule and are not beaten by the rule's default (settings in
    force that fail a confirmed rule always give way: apply_decision)."""
    if chosen == 0:
        why = ("the settings in force: the default rule accepts them" if rule["confirmed"] else
               "the settings in force: the rule's choice, provisional without a confirmation family")
        return _default(configs, 0, why)
    if decision["apply"]:
        return _default(configs, chosen, "the default rule's, applied with --apply")
    if not rule["confirmed"]:
        why = (f"the settings in force stay: the rule's {configs[chosen].label()} is provisional without a "
               "confirmation family")
    else:
        why = (f"the settings in force stay: they pass the default rule, and the rule's "
               f"{configs[chosen].label()} does not beat them")
    return _default(configs, 0, why)


def _default(configs: Sequence[Config], index: int, why: str) -> dict:
    return {"index": index, "label": configs[index].label(), "config": configs[index].as_dict(), "why": why}


def chosen_config(data: dict) -> dict:
    """The configuration tuning leaves as the default (what --apply writes when it writes); in older
    reports the default rule's, or before it the in-sample best."""
    if data.get("default"):
        return data["default"]["config"]
    return _rule_choice(data)


def _rule_choice(data: dict) -> dict:
    rule = data.get("default_rule")
    return rule["chosen"]["config"] if rule else data["in_sample_best"]["config"]


def rebuild_note(data: dict) -> str:
    """What the user must do after applying (or before trying) the default rule's chunking when the
    index was not cut with it; "" when nothing."""
    chosen, current = _rule_choice(data), data.get("current", {}).get("config", {})
    if not all(name in chosen and name in current for name in CHUNKING_KNOBS):
        return ""
    if all(chosen[name] == current[name] for name in CHUNKING_KNOBS):
        return ""
    note = (f"\nthe chunking changed ({current['chunk_tokens']}/{current['chunk_overlap']} -> "
            f"{chosen['chunk_tokens']}/{chosen['chunk_overlap']}): the index needs a rebuild, "
            "run `ragloupe index --rebuild` before searching with these settings")
    if chosen.get("fusion") == "learned":
        note += ("\nlearned fusion's shipped model was trained for another chunking and falls back to "
                 "min-max until one is trained for this one: after the rebuild run `ragloupe tune "
                 "--train-learned` and set RAGLOUPE_LEARNED_MODEL to the file it writes")
    return note


def load_tune(path: Path) -> TuneReport:
    run_id, data, timings = read_report(Path(path), SCHEMA, "tuning")
    return TuneReport(run_id, data, timings, Path(path))


def latest_tune(settings: Settings, scope: str | None = None) -> TuneReport | None:
    """The most recent tuning report under runs_dir (of one scope when given), or None."""
    runs_dir = settings.path("runs_dir")
    found = []
    for path in sorted(runs_dir.glob("tune-*.json")) if runs_dir.is_dir() else []:
        try:
            report = load_tune(path)
        except RunNotFound:
            continue
        if scope is None or report.data.get("scope") == scope:
            found.append(report)
    found.sort(key=lambda r: (r.timings.get("started_at", ""), r.run_id))
    return found[-1] if found else None


def _rounded(value: Any) -> Any:
    """Floats rounded to FLOAT_DIGITS everywhere, tuples as lists: one spelling per value."""
    if isinstance(value, (float, np.floating)):
        return round(float(value), FLOAT_DIGITS) + 0.0
    if isinstance(value, dict):
        return {str(k): _rounded(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_rounded(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, Path):
        return str(value)
    return value
