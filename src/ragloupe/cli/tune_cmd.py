"""`ragloupe tune`: choose retrieval settings out-of-fold and say how much of the win is selection luck.

    ragloupe tune [GOLDSET ...] [--scope doc|all] [--space small|full] [--set NAME=VALUE]
                  [--chunking TOKENS/OVERLAP,...] [--apply [--env-file PATH]] [--json]
    ragloupe tune [GOLDSET ...] [--confirm PATH ...] ...
    ragloupe tune [GOLDSET ...] --train-learned [--out PATH]

With no GOLDSET, every shipped tuning gold set (the Grampian benchmark and
whole-report sets, the Natech records, the manuals; never a *.holdout.json);
questions about documents the index does not hold are left out, and the
report says so. Each document (or chapter group, for records) is held out in
turn: the configuration whose worst gold-set family does best on the others
is scored on it, and every family's out-of-fold figure is reported. The report gives the in-sample best, the out-of-fold
figure of the whole procedure with 95% bootstrap CIs, the gap between them,
and a paired test against the settings in force; it is written under
RAGLOUPE_RUNS_DIR.

The default rule (evaluate/tune_rule.py): the configuration chosen is the
default only when its Hit@1 is at least BM25 alone's on every family
out-of-fold and on every confirmation family (--confirm: gold sets written
after the features were frozen, scored but never chosen on); otherwise the
best configuration of a simpler kind is judged the same way, down to BM25
alone. --apply writes the rule's default to .env only when a confirmation
family gated it, and then only when it beats the settings in force with the
paired test or the settings in force fail the rule.

--chunking 128/32,384/96 also scores every configuration on those chunkings,
each on a scratch index of the gold sets' documents under
RAGLOUPE_RUNS_DIR/tune-indexes/ (built once, reused while its sources are
unchanged; the main index is never written to). Applying another chunking
means rebuilding the index (`ragloupe index --rebuild`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ragloupe.cli import CommandResult, add_json_flag
from ragloupe.config import PROJECT_ROOT
from ragloupe.evaluate.coverage_text import render_lines
from ragloupe.evaluate.not_indexed import tune_left_out_lines
from ragloupe.evaluate.stats import p_text
from ragloupe.evaluate.tune_rule import family_verdict_lines


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("tune", help="choose retrieval settings with out-of-fold selection",
                            description=__doc__.splitlines()[0])
    parser.add_argument("goldsets", nargs="*", metavar="GOLDSET",
                        help="gold-set JSON files (default: the shipped Grampian gold sets)")
    parser.add_argument("--scope", choices=("doc", "all"), default="doc",
                        help="doc: each question searches its own document; all: the whole index")
    parser.add_argument("--space", choices=("small", "core", "full", "in-force"), default="full",
                        help="configurations tried: small (a handful), core (a dozen contenders), full (hundreds), "
                             "or in-force (the settings in force against BM25 alone: the default rule's verdict "
                             "on them)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="overrides",
                        help="override a setting the configurations do not fix, e.g. --set top_k=5")
    parser.add_argument("--chunking", default=None, metavar="TOKENS/OVERLAP,...",
                        help="chunking variants to score besides the one in force, e.g. 128/32,384/96; "
                             "each is indexed once into a scratch index of the gold sets' documents")
    parser.add_argument("--confirm", nargs="+", default=[], metavar="PATH",
                        help="confirmation gold sets (files, or folders of *.json): they gate the default, "
                             "nothing is chosen on them")
    parser.add_argument("--apply", action="store_true",
                        help="write the chosen settings to .env if they beat the current ones out-of-fold")
    parser.add_argument("--env-file", default=None, metavar="PATH",
                        help="the .env file --apply writes (default: the project's .env)")
    parser.add_argument("--train-learned", action="store_true",
                        help="instead of tuning: train learned fusion on every question and write the model")
    parser.add_argument("--out", default=None, metavar="PATH",
                        help="where --train-learned writes the model (default: RUNS_DIR/learned-model.json)")
    add_json_flag(parser)
    parser.set_defaults(handler=handle)


def default_goldsets() -> list[Path]:
    """Every shipped tuning gold set of every family; never a *.holdout.json, never guidance2 (held out)."""
    from ragloupe.evaluate.tune_folds import is_held_out

    bench = PROJECT_ROOT / "data/benchmarks"
    paths = (sorted(bench.glob("grampian/eval/*.eval.json")) + sorted(bench.glob("grampian/whole/*.whole.json"))
             + [bench / "natech/guidance.gold.json"] + sorted(bench.glob("manuals/eval/*.eval.json"))
             + sorted(bench.glob("grampian/paraphrased/*.json")) + sorted(bench.glob("manuals/paraphrased/*.json"))
             + [bench / "natech/paraphrased.gold.json"])
    return [p for p in paths if p.is_file() and not is_held_out(p)]


def confirmation_paths(given: list[str]) -> list[Path]:
    """The --confirm arguments as gold-set files: a folder stands for the *.confirm.json files under it
    (at any depth), or when it has none, the *.json files in it."""
    paths: list[Path] = []
    for item in map(Path, given):
        if item.is_dir():
            paths += sorted(item.rglob("*.confirm.json")) or sorted(p for p in item.glob("*.json") if p.is_file())
        else:
            paths.append(item)
    return paths


def handle(args: argparse.Namespace) -> CommandResult:
    from ragloupe.cli.progress import encode_missing_sentences
    from ragloupe.cli.eval_cmd import BadOption, settings_with
    from ragloupe.evaluate.goldset import load_goldset
    from ragloupe.evaluate.tune_indexes import parse_chunking
    from ragloupe.evaluate.runs import searched_documents
    from ragloupe.evaluate.tune_space import largest_sentence_weight, search_space
    from ragloupe.evaluate.tuning import tune
    from ragloupe.workspace import Workspace

    settings = settings_with(args.overrides)
    workspace = Workspace.open(settings)  # the command's: the sweep and the coverage audit read through it
    chunking = [v.label() for v in parse_chunking(args.chunking)]  # a bad value fails before any work
    paths = [Path(p) for p in args.goldsets] or default_goldsets()
    if not paths:
        raise BadOption("no gold set given and none shipped under data/benchmarks")
    goldsets = [load_goldset(path) for path in paths]
    if args.train_learned:
        from ragloupe.evaluate.tuning import train_learned

        # Trained on each question within its own document, in hybrid under the settings in force.
        encode_missing_sentences(workspace, ["hybrid"], searched_documents(goldsets, "doc"))

        out = Path(args.out) if args.out else settings.path("runs_dir") / "learned-model.json"
        trained = train_learned(goldsets, out, workspace=workspace)
        held = trained["leave_one_group_out"]
        trained["coverage"] = _trained_coverage(goldsets, Path(trained["path"]), settings, workspace.store)
        text = [f"learned fusion model written to {trained['path']} ({trained['n_questions']} questions)"]
        if held:
            text.append(f"leave-one-document-out: Hit@1 {held['hit@1']:.3f}, MRR {held['mrr']:.3f}"
                        + _in_sample_note(trained["coverage"]))
        text.append(f"use it with RAGLOUPE_FUSION=learned RAGLOUPE_LEARNED_MODEL={trained['path']}")
        return CommandResult(trained, "\n".join(text + ["", *render_lines(trained["coverage"])]))
    confirm = [load_goldset(path) for path in confirmation_paths(args.confirm)]
    if args.confirm and not confirm:
        raise BadOption(f"--confirm {' '.join(args.confirm)}: no gold-set file there")
    # The sweep tries blending each chunk's best sentence even when the settings in force do not.
    sweep_weight = largest_sentence_weight(search_space(settings, args.space, args.scope))
    encode_missing_sentences(workspace.with_overrides(dense_sentence_weight=sweep_weight), ["dense"],
                             searched_documents(goldsets + confirm, args.scope))
    report = tune(goldsets, scope=args.scope, space=args.space, workspace=workspace,
                  chunking=chunking, confirm=confirm)
    applied, apply_note = False, ""
    if args.apply:
        applied, apply_note = apply_to_env(report, Path(args.env_file) if args.env_file else None)
    data = summary(report)
    data.update({"applied": applied, "apply_note": apply_note})
    return CommandResult(data, render(report, apply_note))


def _in_sample_note(coverage: dict) -> str:
    """What read these questions before the learned model's figure did (its dense features), e.g.
    " (in-sample for the query adapter, which learned from 9 of these questions: below)"; "" when nothing did."""
    adapter = coverage["query_adapter"]["learned_from"]
    model = (coverage.get("embedding_model") or {}).get("learned_from", 0)
    said = [f"the query adapter, which learned from {adapter} of these questions"] if adapter else []
    if model:
        said.append(f"the embedding model, fine-tuned on {model} of {'them' if said else 'these questions'}")
    return f" (in-sample for {', and '.join(said)}: below)" if said else ""


def _trained_coverage(goldsets, path: Path, settings, store) -> dict:
    """The coverage audit of the gold sets, with the weights of the model just trained on them and
    the query adapter its dense features read (hybrid, the mode it was trained in)."""
    from ragloupe.evaluate.coverage_sources import coverage_report, model_weights
    from ragloupe.retrieve import learned

    model = learned.from_json(path.read_text(encoding="utf-8"), str(path))
    return coverage_report(goldsets, settings, store, mode="hybrid",
                           models=[model_weights("the model just trained", model, goldsets)])


def summary(report) -> dict:
    """What --json prints: the headline parts of the report and where the whole of it is."""
    d = report.data
    keys = ("scope", "space", "n_questions", "n_configs", "groups", "objective", "procedure",
            "in_sample_best", "out_of_fold", "optimism_gap", "current", "bm25_alone", "versus",
            "families", "selection", "default_rule", "default", "confirmation", "not_indexed", "decision",
            "replay_check", "chunking", "query_adapter", "coverage")
    return {"run_id": report.run_id, "path": str(report.path), **{k: d[k] for k in keys if k in d},
            "timings": report.timings}


def _figure(estimate: dict) -> str:
    if estimate.get("ci_low") is None:
        return f"{estimate['mean']:.3f}"
    return f"{estimate['mean']:.3f} [{estimate['ci_low']:.2f}-{estimate['ci_high']:.2f}]"


def render(report, apply_note: str = "") -> str:
    d = report.data
    oof, best = d["out_of_fold"]["figures"], d["in_sample_best"]["figures"]
    current, bm25 = d["current"]["figures"], d["bm25_alone"]["figures"]
    lines = [f"tune {report.run_id}  scope={d['scope']} space={d['space']} "
             f"questions={d['n_questions']} configurations={d['n_configs']}",
             f"report: {report.path}",
             f"held out in turn: " + ", ".join(f"{g} ({n})" for g, n in d["groups"].items())]
    lines += [*tune_left_out_lines(d.get("not_indexed") or {}), ""]  # above the figures they qualify
    header = f"{'':<34}{'Hit@1':>20}{'Hit@3':>20}{'MRR':>20}"
    lines.append(header)
    for label, fig in (("out-of-fold (the procedure)", oof), ("in-sample best", best),
                       ("settings in force", current), ("bm25 alone", bm25)):
        lines.append(f"{label:<34}{_figure(fig['hit@1']):>20}{_figure(fig['hit@3']):>20}{_figure(fig['mrr']):>20}")
    if d["current"].get("note"):
        lines.append(f"settings in force: {d['current']['note']}")
    if (d.get("query_adapter") or {}).get("source"):
        lines.append(f"query adapter ({d['query_adapter']['source']}): {d['query_adapter']['scored']}")
    gap = d["optimism_gap"]
    lines += ["", f"optimism gap (in-sample minus out-of-fold): Hit@1 {gap['hit@1']:+.3f}, "
                  f"MRR {gap['mrr']:+.3f}, objective {gap['objective']:+.3f}",
              f"in-sample best: {d['in_sample_best']['label']}"]
    for fold in d["out_of_fold"]["folds"]:
        lines.append(f"  held out {fold['held_out']}: chose {fold['label']} -> Hit@1 {fold['held_out_hit@1']:.3f}, "
                     f"MRR {fold['held_out_mrr']:.3f}")
    for name, label in (("current", "the settings in force"), ("bm25", "bm25 alone")):
        test = d["versus"][name]["objective"]
        lines.append(f"out-of-fold vs {label}: objective {test['diff']:+.3f} "
                     f"[{_num(test['ci_low'])}, {_num(test['ci_high'])}], {p_text(test['p_value'])}")
    lines += family_lines(d) + chunking_lines(d, report.timings)
    check = d["replay_check"]
    if check["mismatches"]:
        lines.append(f"warning: the replay differed from search() on {len(check['mismatches'])} of "
                     f"{check['checked']} checks: {', '.join(check['mismatches'])}")
    if d.get("default_rule"):
        lines += ["", *family_verdict_lines(d["default_rule"], d.get("default"))]
    lines.append(f"would apply: {'yes' if d['decision']['apply'] else 'no'} ({d['decision']['reason']})")
    if not apply_note:
        from ragloupe.evaluate.tune_report import rebuild_note

        lines += [line for line in rebuild_note(d).splitlines() if line][:1]
    if apply_note:
        lines.append(apply_note)
    if "coverage" in d:
        lines += ["", *render_lines(d["coverage"])]
    return "\n".join(lines)


def chunking_lines(d: dict, timings: dict) -> list[str]:
    """The chunking variants: which index each was scored on, and its best figures in and out of sample."""
    chunking = d.get("chunking")
    if not chunking or len(chunking["variants"]) < 2:
        return []
    lines = [""]
    for index in timings.get("indexes", []):
        if index["scratch"]:
            what = f"built in {index['seconds']:.0f} s" if index["built"] else "reused"
            lines.append(f"scratch index for chunking {index['chunking']}: {what} ({index['index_dir']})")
    lines.append(f"{'chunking':<26}{'in-sample best obj':>20}{'Hit@1':>8}{'MRR':>8}"
                 f"{'out-of-fold obj':>18}{'Hit@1':>8}{'MRR':>8}")
    for variant in chunking["variants"]:
        best, oof = variant["in_sample_best"], variant["out_of_fold"]
        name = variant["chunking"] + (" (in force)" if variant["chunking"] == chunking["in_force"] else "")
        lines.append(f"{name:<26}{best['objective']:>20.3f}{best['hit@1']:>8.3f}{best['mrr']:>8.3f}"
                     f"{oof['objective']:>18.3f}{oof['hit@1']:>8.3f}{oof['mrr']:>8.3f}")
        if variant.get("capped_by_model"):
            lines.append(f"  the model reads at most {variant['content_tokens']} text tokens: chunks of "
                         f"{variant['chunking']} are cut to that, with {variant['overlap']} tokens of overlap")
    lines.append("out-of-fold per chunking: the procedure choosing among that chunking's configurations only")
    if chunking.get("note"):
        lines.append(f"note: {chunking['note']}")
    lines.append("chunking chosen per fold: " + ", ".join(f"{held} {chosen}" for held, chosen
                                                        in chunking["chosen_in_folds"].items()))
    return lines


def _num(value) -> str:
    return "—" if value is None else f"{value:+.3f}"


def family_lines(d: dict) -> list[str]:
    """Each gold-set family's out-of-fold figures beside BM25 alone, and the selection rule."""
    families = d.get("families") or {}
    if not families:
        return []
    lines = ["", f"{'family':<22}{'questions':>10}{'Hit@1':>8}{'Hit@3':>8}{'MRR':>8}"
                 f"{'bm25 Hit@1':>12}{'bm25 MRR':>10}{'vs bm25 (p)':>14}"]
    for name, row in families.items():
        oof, bm25, test = row["out_of_fold"], row["bm25_alone"], row["versus_bm25"]["objective"]
        lines.append(f"{name:<22}{row['n_questions']:>10}{oof['hit@1']['mean']:>8.3f}{oof['hit@3']['mean']:>8.3f}"
                     f"{oof['mrr']['mean']:>8.3f}{bm25['hit@1']['mean']:>12.3f}{bm25['mrr']['mean']:>10.3f}"
                     f"{test['diff']:>+8.3f} ({p_text(test['p_value'])})")
    if d.get("selection"):
        lines.append(f"selection: {d['selection']}")
    return lines


def env_values(config: dict) -> dict[str, str]:
    """A chosen configuration as .env lines: RAGLOUPE_MODE and one line per knob."""
    from ragloupe.evaluate.tune_space import KNOBS

    values = {"RAGLOUPE_MODE": str(config["mode"])}
    for name in (name for name in KNOBS if name in config):
        value = config[name]
        if name == "query_adapter" and value not in ("shipped", "off"):
            continue  # a file: the one in force (an index's own stays named where `adapt --queries` put it)
        values[f"RAGLOUPE_{name.upper()}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return values


def apply_to_env(report, env_file: Path | None = None) -> tuple[bool, str]:
    """Write the default rule's settings to .env when the decision allows it; say what happened either way."""
    from ragloupe.evaluate.tune_report import chosen_config, rebuild_note

    decision = report.data["decision"]
    env_file = Path(env_file) if env_file else PROJECT_ROOT / ".env"
    if not decision["apply"]:
        return False, f"not applied: {decision['reason']}"
    values = env_values(chosen_config(report.data))
    lines = env_file.read_text(encoding="utf-8").splitlines() if env_file.is_file() else []
    written = set()
    for i, line in enumerate(lines):
        name = line.split("=", 1)[0].strip()
        if name in values and not line.lstrip().startswith("#"):
            lines[i] = f"{name}={values[name]}"
            written.add(name)
    missing = [name for name in values if name not in written]
    if missing:
        lines.append(f"# chosen by ragloupe tune, run {report.run_id}")
        lines += [f"{name}={values[name]}" for name in missing]
    tmp = env_file.with_name(env_file.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(env_file)
    return True, f"applied to {env_file}: {decision['reason']}" + rebuild_note(report.data)
