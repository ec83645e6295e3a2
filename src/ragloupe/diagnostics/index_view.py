"""The Index page's view of the next run: what it would do, counted and listed.

A source refused by an earlier run and unchanged since counts apart from the
unchanged ones: it is not in the index, and it stays out until the file changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragloupe.config import Settings
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import IndexPlan, plan

REFUSED_HELP = "refused by an earlier run and not changed since: fix the file to have it read again"


@dataclass(frozen=True)
class PlanView:
    plan: IndexPlan
    counts: list[tuple[str, int, str | None]]  # (label, how many, help) per kind of change
    changes: list[dict]  # {"change", "source"} rows: every source the run would touch


def plan_view(settings: Settings) -> PlanView:
    """The next incremental run over the indexed folders, from one manifest read."""
    manifest = Manifest.load(settings)
    the_plan = plan(None, settings, manifest=manifest)
    refused = {entry.path for entry in manifest.refused()}
    unchanged = [path for path in the_plan.unchanged if path not in refused]
    still_refused = [path for path in the_plan.unchanged if path in refused]
    counts = [("New", len(the_plan.new), None), ("Modified", len(the_plan.modified), None),
              ("Unchanged", len(unchanged), None), ("Refused", len(still_refused), REFUSED_HELP),
              ("Deleted", len(the_plan.deleted), None)]
    changes = ([{"change": "new", "source": p} for p in the_plan.new]
               + [{"change": "modified", "source": p} for p in the_plan.modified]
               + [{"change": "deleted", "source": d} for d in the_plan.deleted]
               + [{"change": "refused earlier, unchanged", "source": p} for p in still_refused])
    return PlanView(plan=the_plan, counts=counts, changes=changes)
