"""An uploaded run file scored on gold sets and compared with ragloupe's own modes, for the Evaluation page."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ragloupe.config import Settings


@dataclass(frozen=True)
class OutsideResult:
    report: object | None = None  # the outside run (written under runs_dir), None when refused
    baselines: list = field(default_factory=list)  # ragloupe's runs of the same gold sets, one per mode
    comparisons: list = field(default_factory=list)  # compare(baseline, report), paired
    problems: list = field(default_factory=list)  # every bad line: then nothing was scored or saved


def score_and_compare(settings: Settings, name: str, text: str, goldset_paths: Sequence[Path],
                      modes: Sequence[str], workspace) -> OutsideResult:
    """Parse, score and save the run (only when every line is good), then run and pair each mode,
    all through the face's ``workspace`` (ragloupe.workspace)."""
    from ragloupe.evaluate.compare import compare
    from ragloupe.evaluate.goldset import load_goldsets
    from ragloupe.evaluate.outside import OutsideRunInvalid, parse_run_text, score_outside
    from ragloupe.evaluate.runs import evaluate, save_report

    goldsets = load_goldsets(goldset_paths)
    try:
        report = score_outside(goldsets, parse_run_text(text, name), settings,
                               store=workspace.store)
    except OutsideRunInvalid as exc:
        return OutsideResult(problems=exc.problems)
    report = save_report(report, settings)
    ks, scope = report.data["ks"], report.data["scope"]
    baselines = [evaluate(goldsets, mode=mode, ks=ks, scope=scope, workspace=workspace.with_settings(settings))
                 for mode in modes]
    return OutsideResult(report, baselines, [compare(b, report) for b in baselines])
