"""The groundedness screen on its case set: one answer per kind of token and rule, with its verdict.

    .venv/bin/python benchmarks/screen_cases.py

The cases (data/benchmarks/groundedness/cases.json) were written for issue 22
before passage arithmetic existed, and were not used to set its 2% ceiling.
Citations are written [n]. No model is involved. Writes
benchmarks/results/screen_cases.json: per case the expected and the screened
verdict, and how many agree.
"""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

from ragloupe.config import PROJECT_ROOT
from ragloupe.generate.groundedness import screen

CASES = PROJECT_ROOT / "data" / "benchmarks" / "groundedness" / "cases.json"
RESULT = PROJECT_ROOT / "benchmarks" / "results" / "screen_cases.json"


def citations(answer: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(start=m.start(), end=m.end(), passage=int(m.group(1)))
            for m in re.finditer(r"\[(\d+)\]", answer)]


def main() -> None:
    cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    rows = []
    for case in cases:
        result = screen(case["answer"], citations(case["answer"]), case["passages"])
        rows.append({"id": case["id"], "expected": case["expected"], "verdict": result.verdict,
                     "agrees": result.verdict == case["expected"],
                     "evidence": [t.evidence for t in result.tokens]})
    report = {"command": ".venv/bin/python benchmarks/screen_cases.py", "cases": len(rows),
              "agree": sum(r["agrees"] for r in rows),
              "disagree": [r["id"] for r in rows if not r["agrees"]], "rows": rows}
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{report['agree']}/{report['cases']} verdicts as expected; disagree: {report['disagree']}")


if __name__ == "__main__":
    main()
