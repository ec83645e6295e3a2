"""The Evaluation page's Gold-set coverage section, driven with Streamlit's AppTest on the demo index."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ragloupe.config import PROJECT_ROOT
from ragloupe.evaluate.coverage_sources import coverage_report
from ragloupe.evaluate.goldset import load_goldset

GRAMPIAN = sorted((PROJECT_ROOT / "data/benchmarks/grampian/eval").glob("*.eval.json"))


def test_evaluation_page_shows_where_the_gold_pages_sit_and_the_warnings(demo_env, monkeypatch, workspace_of):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    app = AppTest.from_file(str(PROJECT_ROOT / "pages/evaluation.py"), default_timeout=300)
    app.session_state["evaluation.goldsets"] = [path.name for path in GRAMPIAN]
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    expected = coverage_report([load_goldset(p) for p in GRAMPIAN], demo_env, workspace_of(demo_env).store,
                               demo_env.mode)
    assert expected["warnings"]
    shown = [t.value for t in app.text]
    assert all(warning in shown for warning in expected["warnings"])  # as plain text, not markdown
    assert any("do not cover their documents evenly" in w.value for w in app.warning)
    table = next(d.value for d in app.dataframe if "tenth of the document" in d.value.columns)
    pooled = expected["pooled"]["page"]["dimensions"]["position"]["strata"]
    assert list(table["all page-level gold sets: expected"]) == [f"{s['expected'] * 100:.0f}%" for s in pooled]
