"""`ragloupe tune --chunking`: each chunking scored on its own scratch index, the main index untouched."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pdf_factory import write_text_pdf

from ragloupe.config import get_settings
from ragloupe.cli import main
from ragloupe.cli import tune_cmd
from ragloupe.evaluate import tuning as T
from ragloupe.evaluate.tune_indexes import SCRATCH_DIR
from ragloupe.index.manifest import Manifest
from ragloupe.ui.tuning_view import chunking_rows
from ragloupe.workspace import Workspace

PLANT_PAGES = (
    ["Cooling water intake screens are cleaned every week during the summer algae season."],
    ["The emergency diesel generator was load tested for four hours in March without a fault."],
    ["Fire water pumps deliver four hundred cubic metres per hour to the sprinkler ring main."],
    ["Bund walls around the ammonia tanks were raised by half a metre after the flood study."],
)


def _gold(path: Path, doc_id: str, questions: list[tuple[str, int]]) -> Path:
    data = {"_meta": {"dataset_name": f"{doc_id} gold", "doc_id": doc_id},
            "queries": [{"query_id": f"{doc_id}_{i}", "question": q, "expected_pages": [page], "doc_id": doc_id}
                        for i, (q, page) in enumerate(questions)]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def two_documents(settings, small_corpus, tmp_path):
    """An index of small_corpus plus a plant PDF, and gold sets over the report and the plant PDF only."""
    from ragloupe.index.pipeline import run_index
    from ragloupe.workspace import save_search_copies

    write_text_pdf(small_corpus / "plant.pdf", PLANT_PAGES, title="Plant log")
    summary = run_index([small_corpus], settings, save_derived=save_search_copies)  # as `ragloupe index`
    assert not summary.errors and summary.documents == 3  # notes.csv, report.pdf, plant.pdf
    gold = [_gold(tmp_path / "report.eval.json", "report",
                  [(f"Section {n} reports on what the board reviewed", n) for n in range(1, 5)]),
            _gold(tmp_path / "plant.eval.json", "plant",
                  [("How often are the intake screens cleaned?", 1), ("How long was the generator tested?", 2),
                   ("What flow do the fire water pumps give?", 3), ("How much higher are the bund walls?", 4)])]
    return settings, gold


def _snapshot(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".lock"}


def _in_force(settings) -> str:
    """The chunking in force, as tune labels it ("256/96")."""
    return f"{settings.chunk_tokens}/{settings.chunk_overlap}"


def _configs(settings):
    return [c for c in T.search_space(settings, "small") if not c.learned] + \
        [c for c in T.search_space(settings, "small") if c.learned][:1]


def test_chunking_variant_is_scored_on_a_scratch_index_built_once(two_documents, embedder):
    settings, gold = two_documents
    main_dir = settings.path("index_dir")
    before = _snapshot(main_dir)
    first = T.tune(gold, workspace=Workspace.open(settings, embedder=embedder),
                    configs=_configs(settings), chunking="64/16")

    scratch = [i for i in first.timings["indexes"] if i["scratch"]]
    assert [i["chunking"] for i in scratch] == ["64/16"] and scratch[0]["built"]
    scratch_dir = Path(scratch[0]["index_dir"])
    assert scratch_dir.parent == settings.path("runs_dir") / SCRATCH_DIR
    held = Manifest.load(settings.replace(index_dir=scratch_dir))
    main_manifest = Manifest.load(settings)
    assert {e.doc_id: e.path for e in held.complete()} == \
        {d: main_manifest.documents[d].path for d in ("report", "plant")}  # not notes: no gold names it
    assert held.shaping_settings["chunk_tokens"] == 64 and held.shaping_settings["chunk_overlap"] == 16
    manifest_mtime = (scratch_dir / "manifest.json").stat().st_mtime_ns

    second = T.tune(gold, workspace=Workspace.open(settings, embedder=embedder),
                     configs=_configs(settings), chunking="64/16")
    reused = [i for i in second.timings["indexes"] if i["scratch"]][0]
    assert not reused["built"] and reused["index_dir"] == str(scratch_dir)
    assert (scratch_dir / "manifest.json").stat().st_mtime_ns == manifest_mtime
    assert second.run_id == first.run_id
    assert _snapshot(main_dir) == before  # the main index was only read


def test_every_configuration_is_scored_on_both_chunkings_and_folds_hold_one_document_out(two_documents, embedder):
    settings, gold = two_documents
    report = T.tune(gold, workspace=Workspace.open(settings, embedder=embedder),
                     configs=_configs(settings), chunking="64/16")
    data = report.data
    n = len(_configs(settings))
    assert data["n_configs"] == 2 * n
    chunkings = [c["config"]["chunk_tokens"] for c in data["configs"]]
    assert chunkings == [256] * n + [64] * n
    assert all(c["label"].endswith(f"chunks {c['config']['chunk_tokens']}/{c['config']['chunk_overlap']}")
               for c in data["configs"])
    assert data["configs"][0]["config"] == data["current"]["config"]  # index 0: the settings in force
    assert data["configs"][n]["label"] == data["configs"][0]["label"].replace(f"chunks {_in_force(settings)}",
                                                                              "chunks 64/16")
    variants = {v["chunking"]: v for v in data["chunking"]["variants"]}
    assert set(variants) == {_in_force(settings), "64/16"} and variants["64/16"]["index"] == "scratch"
    assert variants["64/16"]["settings_in_force"]["index"] == n
    for v in variants.values():
        low, high = v["configs"]
        assert low <= v["in_sample_best"]["index"] < high
        assert all(low <= f["chosen"] < high for f in v["out_of_fold"]["folds"])
    assert set(data["groups"]) == {"plant", "report"}
    doc_of = {q["query_id"]: q["group"] for q in data["queries"]}
    assert all(qid.startswith(group) for qid, group in doc_of.items())  # a document is its own group
    for fold in data["out_of_fold"]["folds"]:
        assert fold["chunking"] == data["chunking"]["chosen_in_folds"][fold["held_out"]]
        assert fold["label"].endswith("chunks " + fold["chunking"])
    rows = chunking_rows(data, report.timings)
    assert [r["chunking"] for r in rows] == [f"{_in_force(settings)} (in force)", "64/16"]
    assert rows[0]["index"] == "main index" and rows[1]["index"].startswith("scratch")


def test_bad_chunking_values_are_one_line_errors(tmp_path, capsys):
    gold = _gold(tmp_path / "g.json", "report", [("Section 1", 1)])
    for bad, reason in (("256/300", "overlap (300) must be smaller"), ("abc", "not TOKENS/OVERLAP")):
        assert main(["tune", str(gold), "--chunking", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and reason in err[0]


def test_applying_another_chunking_says_the_index_needs_a_rebuild(tmp_path):
    settings = get_settings()
    current = T.Config.of("hybrid", settings)
    chosen = T.Config.of("hybrid", settings, fusion="minmax").on_chunking(384, 96)
    report = T.TuneReport("tune-doc-test", {"decision": {"apply": True, "reason": "because"},
                                            "in_sample_best": {"config": chosen.as_dict()},
                                            "current": {"config": current.as_dict()}})
    env = tmp_path / ".env"
    applied, note = tune_cmd.apply_to_env(report, env)
    lines = env.read_text(encoding="utf-8").splitlines()
    assert applied and "RAGLOUPE_CHUNK_TOKENS=384" in lines and "RAGLOUPE_CHUNK_OVERLAP=96" in lines
    assert "ragloupe index --rebuild" in note
    refused = T.TuneReport("tune-doc-test", {**report.data, "decision": {"apply": False, "reason": "no win"}})
    other = tmp_path / "other.env"
    assert tune_cmd.apply_to_env(refused, other) == (False, "not applied: no win") and not other.exists()


def test_decision_names_the_rebuild_a_new_chunking_needs():
    settings = get_settings()
    current = T.Config.of("hybrid", settings)
    better = {"objective": {"candidate": 0.9, "baseline": 0.5, "diff": 0.4, "p_value": 0.01,
                            "significant_win": True}}
    decision = T.apply_decision(current.on_chunking(128, 32), current, better)
    assert decision["apply"] and decision["rebuild"] and "ragloupe index --rebuild" in decision["reason"]
    same = current.on_chunking(settings.chunk_tokens, settings.chunk_overlap)
    assert not T.apply_decision(same, current, better)["apply"]


def test_tuning_section_refuses_a_bad_chunking_value_in_one_line(demo_env, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ragloupe.config import PROJECT_ROOT

    bench = tmp_path / "bench"
    bench.mkdir()
    _gold(bench / "report.eval.json", "report", [("Section 1", 1)])
    monkeypatch.setenv("RAGLOUPE_BENCHMARKS_DIR", str(bench))
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    app = AppTest.from_file(str(PROJECT_ROOT / "pages/evaluation.py"), default_timeout=120)
    app.run()
    app.text_input(key="tune_chunking").set_value("256/300")
    next(b for b in app.button if b.label == "Run tuning").click()
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("overlap (300) must be smaller" in e.value for e in app.error)
    assert any("No tuning run yet" in c.value for c in app.caption)


def test_tune_cli_says_when_it_builds_a_scratch_index_and_shows_each_chunking(two_documents, capsys):
    settings, gold = two_documents
    args = ["tune", *map(str, gold), "--space", "small", "--chunking", "64/16"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert "scratch index for chunking 64/16: built in" in first
    assert any(line.startswith(f"{_in_force(settings)} (in force)") for line in first.splitlines())
    assert any(line.startswith("64/16 ") for line in first.splitlines())
    assert "chunking chosen per fold: plant " in first
    assert main(args) == 0
    assert "scratch index for chunking 64/16: reused" in capsys.readouterr().out
