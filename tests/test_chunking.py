"""Chunking with the embedding model's own tokenizer: windows, overlap, sections, ids."""

from __future__ import annotations

import random

import pytest

from ragloupe.chunking import ChunkingSettingsInvalid, chunk_document, detect_headings
from ragloupe.config import Settings
from ragloupe.models import Page, SourceDoc

SHA = "ab" * 32


def prose(seed: int, words: int) -> str:
    """Ordinary English-ish text with long words that the tokenizer splits into pieces."""
    vocabulary = ("the board approved unprecedented reconfiguration of laboratories while "
                  "the financial statements recorded expenditure across hospitals and "
                  "communities during the pandemic with considerable uncertainty").split()
    rng = random.Random(seed)
    return " ".join(rng.choice(vocabulary) for _ in range(words))


def spans(text: str, chunks) -> list[tuple[int, int]]:
    """Where each chunk sits in ``text`` (chunks come in order, so search onward)."""
    out, at = [], 0
    for chunk in chunks:
        start = text.index(chunk.text, at)
        out.append((start, start + len(chunk.text)))
        at = start + 1
    return out


def pdf_doc(*texts: str, qualities: tuple[str, ...] | None = None, sha: str = SHA) -> SourceDoc:
    qualities = qualities or ("clean",) * len(texts)
    pages = tuple(Page("report", i + 1, text, "pypdf-plain", quality,
                       "" if quality == "clean" else f"{quality} page")
                  for i, (text, quality) in enumerate(zip(texts, qualities)))
    return SourceDoc("report", "/corpus/report.pdf", "pdf", sha, pages=pages)


@pytest.fixture(scope="module")
def tokenizer(embedder):
    return embedder.tokenizer


@pytest.fixture
def small(settings: Settings) -> Settings:
    return settings.replace(chunk_tokens=40, chunk_overlap=10)


def test_chunk_never_crosses_a_page_and_is_a_substring_of_its_page(tokenizer, small):
    doc = pdf_doc(prose(1, 150), prose(2, 150))
    chunks = chunk_document(doc, tokenizer, small)
    assert {c.page for c in chunks} == {1, 2}
    for chunk in chunks:
        assert chunk.text in doc.pages[chunk.page - 1].text


def test_chunk_text_keeps_the_original_characters(tokenizer, small):
    # Lower-casing, accents and odd spacing would be lost by a detokenised string.
    text = "Café  RÉSUMÉ of the NHS   Grampian\tBoard's £12.5m under-spend (2021/22) " * 12
    chunks = chunk_document(pdf_doc(text), tokenizer, small)
    assert any("Café  RÉSUMÉ" in c.text for c in chunks)
    assert all(c.text in text for c in chunks)


def test_every_word_of_a_page_is_in_some_chunk(tokenizer, small):
    text = prose(3, 300)
    chunks = chunk_document(pdf_doc(text), tokenizer, small)
    covered = set()
    for start, end in spans(text, chunks):
        covered.update(range(start, end))
    uncovered = [i for i, ch in enumerate(text) if not ch.isspace() and i not in covered]
    assert uncovered == []


def test_chunk_with_special_tokens_fits_chunk_tokens(tokenizer, small):
    chunks = chunk_document(pdf_doc(prose(4, 400)), tokenizer, small)
    assert len(chunks) > 3
    for chunk in chunks:
        assert len(tokenizer(chunk.text)["input_ids"]) <= small.chunk_tokens
        assert chunk.n_tokens <= small.chunk_tokens


def test_chunk_tokens_above_the_model_limit_are_capped(embedder, settings):
    wide = settings.replace(chunk_tokens=1000, chunk_overlap=64)
    chunks = chunk_document(pdf_doc(prose(5, 2000)), embedder.tokenizer, wide, embedder.max_seq_length)
    assert max(c.n_tokens for c in chunks) == embedder.max_seq_length
    assert all(len(embedder.tokenizer(c.text)["input_ids"]) <= embedder.max_seq_length for c in chunks)


def test_consecutive_chunks_overlap_by_about_chunk_overlap_tokens(tokenizer, small):
    text = prose(6, 400)
    chunks = chunk_document(pdf_doc(text), tokenizer, small)
    places = spans(text, chunks)
    for (_, first_end), (second_start, _) in zip(places, places[1:]):
        shared = text[second_start:first_end]
        n_shared = len(tokenizer(shared, add_special_tokens=False)["input_ids"])
        # Windows snap to word edges, which can only shrink the overlap by a word's pieces.
        assert small.chunk_overlap - 6 <= n_shared <= small.chunk_overlap


def test_chunk_edges_fall_between_words(tokenizer, small):
    text = prose(7, 400)
    for start, end in spans(text, chunk_document(pdf_doc(text), tokenizer, small)):
        assert start == 0 or not (text[start - 1].isalnum() and text[start].isalnum())
        assert end == len(text) or not (text[end - 1].isalnum() and text[end].isalnum())


def test_chunk_ids_are_stable_unique_and_follow_the_file_hash(tokenizer, small):
    doc = pdf_doc(prose(8, 200), prose(9, 200))
    first = [c.chunk_id for c in chunk_document(doc, tokenizer, small)]
    again = [c.chunk_id for c in chunk_document(doc, tokenizer, small)]
    other_file = [c.chunk_id for c in chunk_document(pdf_doc(prose(8, 200), prose(9, 200), sha="cd" * 32),
                                                     tokenizer, small)]
    assert first == again
    assert len(set(first)) == len(first)
    assert not set(first) & set(other_file)


def test_records_sharing_a_page_number_get_distinct_ids(tokenizer, small):
    pages = tuple(Page("guide", 7, prose(i, 30), "record", "clean", "", record_id=f"4.{i}",
                       title=f"Title {i} ") for i in range(3))
    doc = SourceDoc("guide", "/corpus/guide.csv", "records", SHA, pages=pages)
    chunks = chunk_document(doc, tokenizer, small)
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    assert {c.record_id for c in chunks} == {"4.0", "4.1", "4.2"}


def test_only_clean_and_degraded_pages_are_chunked(tokenizer, small):
    doc = pdf_doc(prose(1, 50), prose(2, 50), "", prose(4, 50),
                  qualities=("clean", "degraded", "empty", "rejected"))
    chunks = chunk_document(doc, tokenizer, small)
    assert {c.page for c in chunks} == {1, 2}
    assert {c.page: c.quality for c in chunks} == {1: "clean", 2: "degraded"}
    assert all(c.reason == "degraded page" for c in chunks if c.page == 2)


def test_overlap_as_large_as_the_chunk_is_refused(tokenizer, settings):
    with pytest.raises(ChunkingSettingsInvalid, match="CHUNK_OVERLAP"):
        chunk_document(pdf_doc(prose(1, 50)), tokenizer, settings.replace(chunk_tokens=40, chunk_overlap=38))


def test_numbered_heading_names_the_section_of_the_chunks_below_it(tokenizer, small):
    text = "7.2 GRAMPIAN HEALTH BOARD\n" + prose(1, 200)
    chunks = chunk_document(pdf_doc(text), tokenizer, small)
    assert {c.section for c in chunks} == {"7.2 GRAMPIAN HEALTH BOARD"}


def test_running_section_head_names_the_section_and_in_text_headings_override_it(tokenizer, small):
    def page(number: int, text: str, section_head: str) -> Page:
        return Page("report", number, text, "pypdf-plain", "clean", "",
                    stripped=("NHS GRAMPIAN", section_head, f"Page {number}"))

    pages = (page(1, prose(1, 60), "PERFORMANCE REPORT (cont)"),
             page(2, prose(2, 20) + "\n3. Financial Outlook\n" + prose(3, 60), "PERFORMANCE REPORT (cont)"),
             page(3, prose(4, 60), "ACCOUNTABILITY REPORT"),
             page(4, prose(5, 60), "ACCOUNTABILITY REPORT"))
    doc = SourceDoc("report", "/corpus/report.pdf", "pdf", SHA, pages=pages)
    chunks = chunk_document(doc, tokenizer, small)
    by_page = {n: [c.section for c in chunks if c.page == n] for n in (1, 2, 3, 4)}
    assert set(by_page[1]) == {"PERFORMANCE REPORT"}  # "(cont)" dropped, "NHS GRAMPIAN" is no section
    assert by_page[2][0] == "PERFORMANCE REPORT" and by_page[2][-1] == "3. Financial Outlook"
    assert set(by_page[3]) == {"ACCOUNTABILITY REPORT"}  # the in-text heading does not carry over


def test_record_chunks_take_the_record_title_as_section(tokenizer, small):
    page = Page("guide", 1, prose(1, 100), "record", "clean", "", record_id="4.6.1",
                title="Natech risk assessment ", section="4")
    chunks = chunk_document(SourceDoc("guide", "/g.csv", "records", SHA, pages=(page,)), tokenizer, small)
    assert {c.section for c in chunks} == {"Natech risk assessment"}
    assert {c.title for c in chunks} == {"Natech risk assessment "}


@pytest.mark.parametrize("line", [
    "The board met eleven times during the year and approved the annual accounts.",
    "Total 2,345 1,234 5,678",
    "and the revenue resource limit for 2021/22 was met.",
    # Real wrapped lines from the Grampian PDFs that an earlier rule took for headings:
    "8. Expenditure on consultancy Expenditure on external consultancy during 2021/22 was £24,636",
    "2020 1,057 7c. PROPERTY, PLANT AND EQUIPMENT DISCLOSURES 2020/21 2019/20 £000 £000 Net",
    "31 March 2022 206,966 146,031 352,997 31,493 17,815 49,308",
])
def test_prose_and_table_lines_are_not_headings(line):
    assert detect_headings(line) == []


@pytest.mark.parametrize("line", ["7.2 GRAMPIAN HEALTH BOARD", "a) OVERVIEW", "ACCOUNTABILITY REPORT",
                                  "3. Purpose", "4.6.1 Natech risk assessment"])
def test_short_numbered_or_capitalised_lines_are_headings(line):
    assert detect_headings("some words here and there\n" + line + "\nmore text follows.") \
        == [(len("some words here and there\n"), line)]
