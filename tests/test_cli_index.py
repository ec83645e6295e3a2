"""`ragloupe index / validate / status`: exit codes, --json shapes, one-line errors."""

from __future__ import annotations

import json

from conftest import NOTE_ROWS, write_records
from pdf_factory import write_scan_pdf, write_zero_byte_pdf

from ragloupe.cli import main

SUMMARY_KEYS = {"new", "modified", "unchanged", "deleted", "repaired", "rebuilt", "pages_indexed",
                "pages_excluded", "excluded_reasons", "chunks_added", "chunks_removed", "errors",
                "review_findings", "unindexed", "documents", "chunks", "settings_fingerprint", "timings",
                "sentences_filled", "sentences_unsaved"}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_json_is_the_summary_and_the_bar_goes_to_stderr(capsys, small_corpus):
    code, out, err = run_cli(capsys, "index", "--json", str(small_corpus))
    assert code == 0
    data = json.loads(out)  # stdout holds the JSON and nothing else
    assert set(data) == SUMMARY_KEYS
    assert data["new"] == ["notes", "report"] and data["errors"] == []
    assert data["documents"] == 2 and data["chunks"] == data["chunks_added"] > 0
    assert data["pages_indexed"] == 7  # 3 records + 4 PDF pages
    assert "files" in err  # the tqdm bar


def test_index_text_summary_counts_each_kind_of_change(capsys, small_corpus):
    run_cli(capsys, "index", str(small_corpus))
    (small_corpus / "report.pdf").unlink()
    code, out, _ = run_cli(capsys, "index", str(small_corpus))
    assert code == 0
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()
            if line.split() and line.split()[0] in {"new", "modified", "unchanged", "deleted"}}
    assert rows == {"new": "0", "modified": "0", "unchanged": "1", "deleted": "1"}


def test_refused_file_gives_exit_code_1_and_a_per_file_error(capsys, small_corpus):
    write_zero_byte_pdf(small_corpus / "blank.pdf")
    code, out, _ = run_cli(capsys, "index", "--json", str(small_corpus))
    data = json.loads(out)
    assert code == 1
    assert [(e["doc_id"], set(e)) for e in data["errors"]] == [
        ("blank", {"path", "doc_id", "error", "findings"})]
    assert data["new"] == ["notes", "report"]


def test_if_empty_skips_an_index_that_holds_documents(capsys, small_corpus, tmp_path):
    code, out, _ = run_cli(capsys, "index", "--if-empty", "--json", str(small_corpus))
    assert code == 0 and json.loads(out)["new"] == ["notes", "report"]
    other = tmp_path / "other"
    other.mkdir()
    write_records(other / "late.csv", NOTE_ROWS[:1])
    code, out, _ = run_cli(capsys, "index", "--if-empty", "--json", str(other))
    assert code == 0 and json.loads(out) == {"skipped": True, "reason": "index not empty", "documents": 2}


def test_status_json_describes_what_the_index_holds(capsys, small_corpus):
    run_cli(capsys, "index", str(small_corpus))
    code, out, _ = run_cli(capsys, "status", "--json")
    data = json.loads(out)
    assert code == 0
    assert [d["doc_id"] for d in data["documents"]] == ["notes", "report"]
    assert data["n_documents"] == 2 and data["n_pages"] == 7
    assert data["n_chunks_store"] == data["n_chunks_manifest"] == sum(d["chunks"] for d in data["documents"])
    assert data["stale"] is None and data["settings_fingerprint"] == data["current_fingerprint"]
    assert sum(data["quality"].values()) == 7


def test_settings_change_is_a_one_line_error_without_traceback(capsys, small_corpus, monkeypatch):
    run_cli(capsys, "index", str(small_corpus))
    monkeypatch.setenv("RAGLOUPE_CHUNK_OVERLAP", "32")
    code, out, err = run_cli(capsys, "index", "--json", str(small_corpus))
    assert code == 2
    assert "--rebuild" in json.loads(out)["error"]
    assert err.count("\n") == 1 and err.startswith("ragloupe: ") and "Traceback" not in err
    code, out, _ = run_cli(capsys, "status", "--json")
    assert "chunk_overlap 96 -> 32" in json.loads(out)["stale"]


def test_validate_refuses_records_with_a_duplicate_id(capsys, tmp_path):
    path = write_records(tmp_path / "dupes.csv", [NOTE_ROWS[0], NOTE_ROWS[1], NOTE_ROWS[0]])
    code, out, _ = run_cli(capsys, "validate", "--json", str(path))
    data = json.loads(out)
    assert code == 1 and data["refused"] is True
    assert [f["code"] for f in data["findings"] if f["severity"] == "blocking"] == ["duplicate_id"]
    code, text, _ = run_cli(capsys, "validate", str(path))
    assert "REFUSED" in text and "duplicate_id" in text


def test_validate_passes_the_shipped_guidance_with_its_review_findings(capsys):
    from conftest import BENCHMARKS

    code, out, _ = run_cli(capsys, "validate", "--json", str(BENCHMARKS / "natech/guidance.csv"))
    data = json.loads(out)
    assert code == 0 and data["refused"] is False and data["pages"] == 44
    assert {f["severity"] for f in data["findings"]} == {"review"}


def test_validate_shows_the_pages_of_a_scan_that_will_not_be_indexed(capsys, tmp_path):
    n_pages = 2
    path = write_scan_pdf(tmp_path / "scan.pdf", n_pages=n_pages)
    code, out, _ = run_cli(capsys, "validate", "--json", str(path))
    data = json.loads(out)
    assert code == 0
    assert [p["page"] for p in data["excluded_pages"]] == list(range(1, n_pages + 1))
    assert all("OCR" in p["reason"] for p in data["excluded_pages"])


def test_control_characters_from_a_file_name_never_reach_the_terminal(capsys, small_corpus):
    write_zero_byte_pdf(small_corpus / "evil\x1b[2J.pdf")
    code, out, _ = run_cli(capsys, "index", str(small_corpus))
    assert code == 1
    assert "\x1b" not in out and "evil?[2J.pdf" in out


def test_missing_and_unsupported_paths_are_per_file_errors(capsys, small_corpus, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("plain text is not a source")
    code, out, _ = run_cli(capsys, "index", "--json", str(small_corpus), str(notes),
                           str(tmp_path / "nowhere"))
    data = json.loads(out)
    assert code == 1
    reasons = {e["doc_id"]: e["error"] for e in data["errors"]}
    assert reasons == {"nowhere": "no such file or directory",
                       "notes": "unsupported file type .txt: expected .pdf, .html, .htm, .docx, .csv or .jsonl"}
    assert data["new"] == ["notes", "report"]
