"""Token-aware chunking of a SourceDoc's pages, with the embedding model's own tokenizer.

A chunk is a window of tokens over ONE page (never across pages), and its
text is the original substring of the page text, cut at the character
offsets of its first and last token, so a chunk can be found verbatim in
the page it came from. Windows overlap by ``chunk_overlap`` tokens.

Size: ``chunk_tokens`` counts every token the model reads, including the
model's special tokens ([CLS] and [SEP] for MiniLM), and is capped at the
model's ``max_seq_length`` (256 for all-MiniLM-L6-v2): a longer chunk would
be silently truncated by the model, and its tail would never be embedded.

Pure: given the same document, tokenizer and settings it returns the same
chunks with the same ids, and touches no disk, network or global.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

from ragloupe.config import Settings
from ragloupe.errors import ChunkingSettingsInvalid
from ragloupe.models import Chunk, Page, SourceDoc
from ragloupe.table_chunks import table_pieces

# A numbered heading on a line of its own: "7.2 GRAMPIAN HEALTH BOARD", "3. Purpose", "a) OVERVIEW".
_NUMBERED_HEADING = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2}){0,4}\.?|[a-zA-Z]\))\s+[A-Z(][^\n]{1,90}$")
# PDF text comes as wrapped lines of running text (~90-100 characters in the demo
# reports), so a heading must be clearly shorter than a wrapped line, and mostly
# letters: table rows in capitals ("2020 1,057 7c. PROPERTY ... £000") are not headings.
_MAX_HEADING_CHARS = 70
_MAX_HEADING_WORDS = 10
_MAX_HEADING_DIGIT_SHARE = 0.2
_CONT = re.compile(r"\s*\((?:cont|cont'd|continued)\.?\)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Window:
    """A token window [start, end) over a page, as character offsets [char_start, char_end)."""

    start: int
    end: int
    char_start: int
    char_end: int


def content_budget(tokenizer, settings: Settings, max_seq_length: int | None = None) -> tuple[int, int]:
    """(content tokens per chunk, overlap) after the model's special tokens and length cap.

    Raises ChunkingSettingsInvalid when the overlap would leave no room to advance.
    """
    special = tokenizer.num_special_tokens_to_add(pair=False)
    limit = min(settings.chunk_tokens, max_seq_length or settings.chunk_tokens)
    content = limit - special
    overlap = settings.chunk_overlap
    if content < 8:
        raise ChunkingSettingsInvalid(
            f"RAGLOUPE_CHUNK_TOKENS={settings.chunk_tokens} leaves {content} tokens of text "
            f"after {special} special tokens; use at least {8 + special}")
    if not 0 <= overlap < content:
        raise ChunkingSettingsInvalid(
            f"RAGLOUPE_CHUNK_OVERLAP={overlap} must be >= 0 and smaller than the {content} "
            f"text tokens a chunk holds (RAGLOUPE_CHUNK_TOKENS={settings.chunk_tokens} "
            f"minus {special} special tokens)")
    return content, overlap


def token_windows(offsets: Sequence[tuple[int, int]], word_ids: Sequence[int | None],
                  size: int, overlap: int) -> list[Window]:
    """Overlapping windows of at most ``size`` tokens covering every token once or more.

    Window edges are moved to word boundaries where that is possible, so a
    chunk does not begin or end inside a word ("...ment of the" / "ing the
    report"); the start only moves forward and the end only backward, so a
    window never exceeds ``size``.
    """
    n = len(offsets)
    windows: list[Window] = []
    start = 0
    while start < n:
        end = min(start + size, n)
        if end < n:
            end = _word_end_before(word_ids, start, end)
        windows.append(Window(start, end, offsets[start][0], offsets[end - 1][1]))
        if end >= n:
            break
        next_start = max(end - overlap, start + 1)
        start = _word_start_from(word_ids, next_start, end)
    return windows


def _word_end_before(word_ids: Sequence[int | None], start: int, end: int) -> int:
    """Move ``end`` back so that token end-1 does not share a word with token end."""
    cut = end
    while cut > start + 1 and word_ids[cut] is not None and word_ids[cut] == word_ids[cut - 1]:
        cut -= 1
    return cut if cut > start + 1 else end  # one giant "word": cut inside it


def _word_start_from(word_ids: Sequence[int | None], start: int, limit: int) -> int:
    """Move ``start`` forward to the first token of a word, not past ``limit``."""
    moved = start
    while moved < limit and moved > 0 and word_ids[moved] is not None \
            and word_ids[moved] == word_ids[moved - 1]:
        moved += 1
    return moved if moved < limit else start


def detect_headings(text: str) -> list[tuple[int, str]]:
    """(character offset, heading) for every line of ``text`` that looks like a section heading.

    A heading is a short line that is either numbered ("7.2 GRAMPIAN HEALTH
    BOARD", "3. Purpose", "a) OVERVIEW") or written in capitals
    ("PERFORMANCE REPORT (cont)"). A heuristic: good enough to tell a reader
    where a chunk sits, never used for scoring.
    """
    headings = []
    offset = 0
    for line in text.splitlines(keepends=True):
        candidate = line.strip()
        if candidate and _looks_like_heading(candidate):
            headings.append((offset + line.index(candidate[0]), candidate))
        offset += len(line)
    return headings


def _looks_like_heading(line: str) -> bool:
    if len(line) > _MAX_HEADING_CHARS or len(line.split()) > _MAX_HEADING_WORDS:
        return False
    visible = [c for c in line if not c.isspace()]
    letters = [c for c in visible if c.isalpha()]
    if len(letters) < 4 or sum(c.isdigit() for c in visible) > _MAX_HEADING_DIGIT_SHARE * len(visible):
        return False
    if line.endswith((".", ",", ";", ":")):
        return False  # a sentence, or a line that runs on
    if _NUMBERED_HEADING.match(line):
        return True
    return sum(c.isupper() for c in letters) >= 0.8 * len(letters)


def chunk_id(source_sha256: str, page: Page, position: int) -> str:
    """Stable id from (file sha256, page, position); a record is keyed by its id, not its page.

    Records of one file may share a page number, but never an id (a
    duplicate id is a blocking finding), so the id keeps chunk ids unique.
    """
    unit = f"r:{page.record_id}" if page.record_id else f"p:{page.page}"
    return hashlib.sha256(f"{source_sha256}|{unit}|{position}".encode()).hexdigest()[:24]


def chunk_document(doc: SourceDoc, tokenizer, settings: Settings,
                   max_seq_length: int | None = None) -> list[Chunk]:
    """Chunks of every indexable page (clean / figures / degraded) of ``doc``, in page order.

    ``max_seq_length`` is the embedding model's input limit (Embedder.max_seq_length);
    chunk_tokens is capped at it.
    """
    pages = [page for page in doc.pages if page.indexable and (page.text.strip() or page.tables)]
    if not pages:
        return []
    size, overlap = content_budget(tokenizer, settings, max_seq_length)
    # One batched call: the fast tokenizer encodes all pages in Rust at once.
    encodings = tokenizer([page.text for page in pages], add_special_tokens=False,
                          return_offsets_mapping=True, verbose=False)
    special = tokenizer.num_special_tokens_to_add(pair=False)
    running = running_sections(doc.pages)
    chunks: list[Chunk] = []
    for i, page in enumerate(pages):
        offsets = encodings["offset_mapping"][i]
        word_ids = encodings.word_ids(i)
        headings = detect_headings(page.text) if page.record_id is None else []
        for position, window in enumerate(token_windows(offsets, word_ids, size, overlap)):
            chunks.append(Chunk(
                chunk_id=chunk_id(doc.sha256, page, position), doc_id=doc.doc_id,
                page=page.page, position=position,
                text=page.text[window.char_start:window.char_end],
                n_tokens=window.end - window.start + special, quality=page.quality,
                section=_section_at(page, headings, window, running.get(page.page, "")),
                reason=page.reason, method=page.method,
                record_id=page.record_id or "", title=page.title or "",
                source_sha256=doc.sha256))
        if page.tables and settings.table_strategy != "off":
            chunks.extend(table_chunks(doc, page, tokenizer, settings, size, special,
                                       first_position=_next_position(chunks, page),
                                       section=page.section or running.get(page.page, "") or
                                       (headings[0][1] if headings else "")))
    if settings.chunk_context:
        chunks = [replace(c, context=context_line(document_title(doc), c.section)) for c in chunks]
    return chunks


def table_chunks(doc: SourceDoc, page: Page, tokenizer, settings: Settings, budget: int,
                 special: int, first_position: int, section: str) -> list[Chunk]:
    """The table chunks of one page (see table_chunks.py), numbered after its text chunks."""
    def count_tokens(texts):
        return [len(ids) for ids in tokenizer(list(texts), add_special_tokens=False,
                                              verbose=False)["input_ids"]]

    chunks = []
    for table in page.tables:
        pieces = table_pieces(table, settings.table_strategy, section, settings.table_block_rows,
                              budget, count_tokens)
        for piece, n_tokens in zip(pieces, count_tokens([p.text for p in pieces])):
            position = first_position + len(chunks)
            chunks.append(Chunk(
                chunk_id=chunk_id(doc.sha256, page, position), doc_id=doc.doc_id, page=page.page,
                position=position, text=piece.text, n_tokens=n_tokens + special,
                quality=page.quality, section=section, reason=page.reason, method=page.method,
                source_sha256=doc.sha256, kind="table", table_index=table.index,
                row_start=piece.row_start, row_end=piece.row_end))
    return chunks


def _next_position(chunks: list[Chunk], page: Page) -> int:
    """The position after the page's last chunk so far (0 when it has none)."""
    mine = [c.position for c in chunks if c.page == page.page]
    return max(mine) + 1 if mine else 0


def document_title(doc: SourceDoc) -> str:
    """The document's name for the context line: the PDF's title metadata, else its doc_id."""
    return (doc.title or "").strip() or doc.doc_id


def context_line(title: str, section: str) -> str:
    """"NHS Grampian Annual Accounts › PERFORMANCE REPORT": what chunk_context puts before a chunk.

    A chunk cut from the middle of a page often never names what it is about
    (the report, the section); the line gives the embedder and BM25 that
    context. The chunk's text itself is left as it is, so it is still found
    verbatim in its page. The line is not counted in chunk_tokens: the model
    truncates the embedded text's tail by the line's length (the next chunk's
    overlap holds that tail).
    """
    parts = [part for part in (title.strip(), section.strip()) if part]
    if len(parts) == 2 and parts[0].lower() == parts[1].lower():
        parts = parts[:1]  # a record titled like its file
    return " › ".join(parts)


def running_sections(pages: Sequence[Page]) -> dict[int, str]:
    """page -> the section named by the page's running head, e.g. "PERFORMANCE REPORT › OVERVIEW".

    Reports often print the section they are in at the top of each page
    ("PERFORMANCE REPORT (cont)" / "OVERVIEW (cont)"); ingestion strips those
    lines as boilerplate and keeps them in ``Page.stripped``. Lines on more
    than half of the pages ("NHS GRAMPIAN", the report title) name the
    document, not a section, and are left out.
    """
    counts = Counter(line for page in pages for line in set(page.stripped))
    generic = {line for line, n in counts.items() if n > 0.5 * len(pages)}
    sections = {}
    for page in pages:
        heads = [_CONT.sub("", line) for line in page.stripped
                 if line not in generic and _looks_like_heading(line)]
        if heads:
            sections[page.page] = " › ".join(dict.fromkeys(heads))
    return sections


def _section_at(page: Page, headings: list[tuple[int, str]], window: Window, running: str) -> str:
    """The section a window belongs to.

    Records: the record's title (else its section field). HTML/DOCX pages:
    their heading path. PDF pages: the last
    heading on the page that starts at or before the window; failing that,
    the page's running head; failing that, the first heading inside the
    window. In-text headings do not carry over to the next page: PDF text
    comes as wrapped lines, and a false heading carried on would mislabel
    every page after it.
    """
    if page.record_id is not None:
        return (page.title or page.section or "").strip()
    if page.section:  # HTML/DOCX pages know their heading path: no guessing from the text
        return page.section
    before = [text for offset, text in headings if offset <= window.char_start]
    if before:
        return before[-1]
    if running:
        return running
    inside = [text for offset, text in headings if offset < window.char_end]
    return inside[0] if inside else ""
