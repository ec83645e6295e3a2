"""The index summary names documents that went in without a single indexed
page, with their page reasons counted (issue 12, item 8)."""

from __future__ import annotations

import json

import pdf_factory as pf
from test_ingest_faults import XFA_PLACEHOLDER

from ragloupe.cli import main
from ragloupe.index.pipeline import run_index


def glyph_page(seed: int) -> list[str]:
    return ["".join(f"/g{(line * 31 + i * 7 + seed) % 200 + 3}" for i in range(14)) for line in range(12)]


def test_documents_without_an_indexed_page_are_named_with_their_reasons(tmp_path, settings, capsys):
    corpus = tmp_path / "batch"
    corpus.mkdir()
    pf.write_report_pdf(corpus / "good.pdf", n_pages=3)
    pf.write_text_pdf(corpus / "glyphs.pdf", [glyph_page(1), glyph_page(2), XFA_PLACEHOLDER])

    code = main(["index", "--json", str(corpus)])
    data = json.loads(capsys.readouterr().out)

    assert code == 0 and data["new"] == ["glyphs", "good"]
    [unindexed] = data["unindexed"]
    assert unindexed["doc_id"] == "glyphs" and unindexed["pages"] == 3
    assert sum(unindexed["reasons"].values()) == 3
    assert unindexed["reasons"]["XFA form: content not in the text layer"] == 1
    assert [n for reason, n in unindexed["reasons"].items() if "glyph names" in reason] == [1, 1]

    main(["index", "--rebuild", str(corpus)])
    text = capsys.readouterr().out
    assert "no pages       1  documents with no page indexed" in text
    assert "glyphs.pdf: 0 of 3 pages indexed (" in text and "1 XFA form: content not in the text layer" in text


def test_bad_pdf_batch_indexes_every_readable_file_and_refuses_the_rest_in_one_line(tmp_path, settings):
    batch = tmp_path / "bad-pdfs"
    batch.mkdir()
    pf.write_shared_forms_pdf(batch / "forms.pdf", n_forms=100, n_pages=2)
    pf.write_report_pdf(batch / "report.pdf", n_pages=3)
    pf.write_text_pdf(batch / "glyphs.pdf", [glyph_page(1), XFA_PLACEHOLDER])
    pf.write_encrypted_pdf(batch / "locked.pdf", "secret")
    pf.write_truncated_pdf(batch / "cut.pdf")
    pf.write_zero_byte_pdf(batch / "empty.pdf")
    pf.write_renamed_non_pdf(batch / "picture.pdf")

    summary = run_index([batch], settings.replace(pdf_timeout_s=10.0))

    assert summary.new == ["forms", "glyphs", "report"]
    assert [u["doc_id"] for u in summary.unindexed] == ["glyphs"]
    refused = {e.doc_id: e.error for e in summary.errors}
    assert sorted(refused) == ["cut", "empty", "locked", "picture"]
    assert refused["locked"] == "encrypted: needs a password"
    assert refused["empty"] == "empty file (0 bytes)"
    for reason in refused.values():
        assert "\n" not in reason and "internal error" not in reason and "Traceback" not in reason
