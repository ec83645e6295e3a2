"""PDF ingestion: page texts, running lines stripped, each page graded.

Extraction runs in a child process (see worker.py) with a wall-time limit
(``pdf_timeout_s``) and an address-space limit (``pdf_max_memory_mb``),
because one pathological file must cost a one-line refusal, not the batch.
The child reads every page with pypdf; a page pypdf failed on or read badly
is read again with pdfminer (fallback.py) and the better text kept; a page
with no text layer but an image is OCR'd (ocr.py); a page whose text looks
tabular has its tables cut out (tables.py). Each page records the method
that produced its text. The child sends raw page texts back as JSON; this
process strips boilerplate and grades quality, which are pure and cheap.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import CorruptPdf, EncryptedPdf, ExtractionLimit, RagloupeError
from ragloupe.ingest import fallback, ocr
from ragloupe.ingest.boilerplate import find_running_lines, strip_running_lines
from ragloupe.ingest.quality import PageQuality, assess_page
from ragloupe.ingest.reasons import plain_reason
from ragloupe.ingest.tables import carry_headers, table_from_raw
from ragloupe.ingest.worker import WorkerDied, WorkerTimeout, extract_in_child
from ragloupe.models import Page, SourceDoc

METHOD = "pypdf-plain"
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_SURROGATES = re.compile("[\ud800-\udfff]")
# The PDF header may sit anywhere in the first 1024 bytes (PDF 1.7, 7.5.2 note).
_HEADER_WINDOW = 1024


# OCR stops when this share of the file's time limit is spent, so that a long
# scan keeps the pages read so far instead of losing the whole file.
_OCR_TIME_SHARE = 0.8
# Table detection on all a file's tabular pages may take this share of its time limit, split
# evenly between them: a page past its share keeps its text, and the next page goes on.
_TABLE_TIME_SHARE = 0.5


@dataclass(frozen=True)
class ExtractOptions:
    """What the child needs to know besides the path (sent with it as JSON)."""

    min_chars: int = 20  # below this, a page's text is weak: read it again
    reject_share: float = 0.3  # this share of unreadable glyphs: read it again
    ocr: bool = True
    ocr_dpi: int = 300
    tables: bool = False
    timeout_s: float = 120.0
    # Scales each tabular page's share of the time limit (tests set it near 0 to hit the limit).
    table_time_factor: float = 1.0

    @classmethod
    def from_settings(cls, settings: Settings) -> "ExtractOptions":
        return cls(min_chars=settings.quality_min_chars,
                   reject_share=settings.quality_reject_garbage, ocr=settings.ocr,
                   ocr_dpi=settings.ocr_dpi, tables=settings.table_strategy != "off",
                   timeout_s=settings.pdf_timeout_s)


@dataclass(frozen=True)
class RawPage:
    """What the child process sends back for one page."""

    page: int
    text: str
    has_images: bool
    error: str | None = None  # plain words; set when no extractor could read the page
    method: str = METHOD
    confidence: float | None = None  # OCR only
    note: str = ""  # why OCR was not done or found nothing, in plain words
    tables: tuple[dict, ...] = ()  # {"rows": [[cell, ...], ...], "caption": str}
    ruled: bool = False  # the page draws lines or rectangles (a ruled table may be there)
    table_note: str = ""  # why the page's tables were not read, in plain words


@dataclass(frozen=True)
class RawPdf:
    title: str | None
    pages: tuple[RawPage, ...]


# --------------------------------------------------------------- in the child

# A bound on the resource and form objects one document's image check opens:
# past it, the check gives up (the answer is only an OCR hint), so a PDF with
# thousands of forms cannot cost more than pypdf's own extraction.
_MAX_IMAGE_CHECK_OBJECTS = 5000


class _ImageCheck:
    """Does a page draw an image, directly or inside (nested) form XObjects?

    One instance per document. Forms are often shared: every page, and every
    form, may list the same dictionary of forms. Walking them afresh costs
    forms ** depth, so each form's answer is remembered (by object number)
    and the walk opens at most ``_MAX_IMAGE_CHECK_OBJECTS`` objects in all.
    A form reached again while it is being walked (a cycle, invalid in a PDF)
    counts as drawing no image.
    """

    def __init__(self, budget: int = _MAX_IMAGE_CHECK_OBJECTS):
        self.budget = budget
        self.known: dict[tuple[int, int], bool] = {}

    def page(self, page) -> bool:
        return self._resources(page.get("/Resources"))

    def _resources(self, resources) -> bool:
        if resources is None or self.budget <= 0:
            return False
        resources = resources.get_object()
        xobjects = resources.get("/XObject") if hasattr(resources, "get") else None
        if xobjects is None:
            return False
        for ref in xobjects.get_object().values():
            if self._xobject(ref):
                return True
        return False

    def _xobject(self, ref) -> bool:
        key = (ref.idnum, ref.generation) if hasattr(ref, "idnum") else None
        if key in self.known:
            return self.known[key]
        self.budget -= 1
        if self.budget < 0:
            return False
        if key is not None:
            self.known[key] = False  # while it is walked: a cycle ends here
        obj = ref.get_object()
        subtype = obj.get("/Subtype")
        found = subtype == "/Image" or (subtype == "/Form" and self._resources(obj.get("/Resources")))
        if key is not None:
            self.known[key] = found
        return found


def _draws_rules(page) -> bool:
    from ragloupe.ingest.tables import draws_rules

    try:
        return draws_rules(page)
    except MemoryError:
        raise
    except Exception:  # an unreadable content stream only costs the table hint
        return False


def _page_has_images(page, check: _ImageCheck | None = None) -> bool:
    """True when the page draws an image (a scan, a figure)."""
    return (check or _ImageCheck()).page(page)


def extract_raw(path: Path, options: ExtractOptions = ExtractOptions()) -> RawPdf:
    """Open a PDF and extract every page's text; runs inside the child process.

    Raises EncryptedPdf or CorruptPdf when the document cannot be opened. An
    error on one page (pypdf raises KeyError, TypeError, ValueError... from
    broken page objects) sends that page to the second extractor; only when
    that fails too is the page lost, recorded with a plain reason.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    started = time.monotonic()
    try:
        reader = PdfReader(str(path), strict=False)
    except MemoryError:
        raise
    except Exception as exc:  # pypdf raises far more than PdfReadError here
        raise CorruptPdf(f"truncated or corrupt PDF: {plain_reason(exc)}") from exc
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as exc:
            raise EncryptedPdf("encrypted with AES: install pypdf[crypto] to open it") from exc
        except Exception as exc:
            raise EncryptedPdf(f"encrypted, and decryption failed: {plain_reason(exc)}") from exc
        if not opened:
            raise EncryptedPdf("encrypted: needs a password")
    try:
        count = len(reader.pages)
        title = reader.metadata.title if reader.metadata else None
    except FileNotDecryptedError as exc:
        raise EncryptedPdf("encrypted: needs a password") from exc
    except MemoryError:
        raise
    except Exception as exc:
        raise CorruptPdf(f"truncated or corrupt PDF: {plain_reason(exc)}") from exc
    if count == 0:
        raise CorruptPdf("the PDF has no pages")

    pages = []
    image_check = _ImageCheck()
    for number in range(1, count + 1):
        try:
            page = reader.pages[number - 1]
            text = page.extract_text() or ""
        except MemoryError:  # the memory limit is for the whole file, not one page
            raise
        except Exception as exc:
            pages.append(RawPage(number, "", False, error=plain_reason(exc)))
            continue
        try:
            has_images = _page_has_images(page, image_check)
        except Exception:  # a broken resource dictionary only costs the OCR hint
            has_images = False
        pages.append(RawPage(number, text, has_images, ruled=options.tables and _draws_rules(page)))
    pages = _second_pass(path, pages, options, deadline=started + _OCR_TIME_SHARE * options.timeout_s)
    return RawPdf(title=str(title) if title else None, pages=tuple(pages))


def _second_pass(path: Path, pages: list[RawPage], options: ExtractOptions,
                 deadline: float) -> list[RawPage]:
    """Pages pypdf read badly -> pdfminer; pages with no text but an image -> OCR;
    pages that look tabular -> their tables cut out. pdfplumber opens the file
    only when some page needs it."""
    from ragloupe.ingest import tables

    weak = [p.page for p in pages if fallback.needs_second_reading(
        p.text, p.error is not None, options.min_chars, options.reject_share)]
    tabular = [p.page for p in pages if options.tables and p.error is None
               and tables.looks_tabular(p.text, p.ruled)]
    if not weak and not tabular:
        return pages
    try:
        import pdfplumber

        document = pdfplumber.open(str(path))
    except MemoryError:
        raise
    except Exception:  # pdfminer cannot open what pypdf could: keep pypdf's reading
        return pages
    out = {p.page: p for p in pages}
    with document:
        for number in weak:
            out[number] = _read_again(path, document, out[number], options, deadline)
        share = _TABLE_TIME_SHARE * options.timeout_s / max(len(tabular), 1)
        for number in tabular:
            seconds = min(share * options.table_time_factor, deadline - time.monotonic())
            out[number] = _cut_tables(document, out[number], seconds)
    return [out[p.page] for p in pages]


def _read_again(path: Path, document, raw: RawPage, options: ExtractOptions, deadline: float) -> RawPage:
    """The better of pypdf's and pdfminer's reading of one page, then OCR if still empty."""
    try:
        second = fallback.page_text(document.pages[raw.page - 1])
    except MemoryError:
        raise
    except Exception:
        second = ""
    if fallback.prefer_second(raw.text, raw.error is not None, second, options.reject_share):
        raw = RawPage(raw.page, second, raw.has_images, method=fallback.METHOD)
    if raw.has_images and fallback.readable_chars(raw.text) < options.min_chars:
        raw = _ocr(path, raw, options, deadline)
    return raw


def _ocr(path: Path, raw: RawPage, options: ExtractOptions, deadline: float) -> RawPage:
    """OCR one image page, when OCR is on and time is left; else say why not in ``note``."""
    if not options.ocr:
        return raw
    left = deadline - time.monotonic()
    if left <= 1:
        return RawPage(raw.page, raw.text, raw.has_images, raw.error, raw.method,
                       note="OCR skipped: the file's time limit was nearly reached")
    try:
        import pypdfium2

        pdfium = pypdfium2.PdfDocument(str(path))
        try:
            image = ocr.render_page(pdfium, raw.page - 1, options.ocr_dpi)
        finally:
            pdfium.close()
        result = ocr.read_image(image, timeout_s=left)
    except MemoryError:
        raise
    except ocr.OcrFailed as exc:
        return RawPage(raw.page, raw.text, raw.has_images, raw.error, raw.method, note=str(exc))
    except Exception as exc:
        return RawPage(raw.page, raw.text, raw.has_images, raw.error, raw.method,
                       note=f"OCR failed: the page could not be rendered ({plain_reason(exc)})")
    if not result.text.strip():
        return RawPage(raw.page, raw.text, raw.has_images, raw.error, raw.method,
                       note="OCR found no text on the page")
    return RawPage(raw.page, result.text, raw.has_images, method=ocr.METHOD,
                   confidence=result.confidence)


def _cut_tables(document, raw: RawPage, seconds: float) -> RawPage:
    """The page's tables as cell rows, and its text with the tables cut out. Table detection
    is an extra: when it fails or runs past ``seconds`` (its share of the file's time limit),
    the page keeps its plain text and ``table_note`` says why."""
    from ragloupe.ingest import tables

    kept = RawPage(raw.page, raw.text, raw.has_images, raw.error, raw.method, raw.confidence, raw.note)
    if seconds <= 0:
        return replace(kept, table_note="tables not read: the file's time limit was nearly reached")
    try:
        found = tables.extract_within(document.pages[raw.page - 1], seconds)
    except MemoryError:
        raise
    except tables.TableTimeout:
        return replace(kept, table_note=f"tables not read: table detection ran past its {seconds:.2g} s "
                                        "share of the file's time limit (CPU time)")
    except Exception as exc:
        return replace(kept, table_note=f"tables not read: table detection failed ({plain_reason(exc)})")
    if not found.tables:
        return raw
    return RawPage(raw.page, found.prose, raw.has_images, method=fallback.METHOD,
                   tables=tuple({"rows": t.rows, "caption": t.caption} for t in found.tables))


def extract_message(request: str | dict, memory_mb: int) -> dict:
    """What the child answers for one request: {"ok": RawPdf as a dict} or {"error": reason}.

    A request is {"path": ..., "options": ExtractOptions as a dict} (a bare
    path means the default options). "fatal" is set after a MemoryError: the
    child then exits, so that the next file gets a fresh process with its
    whole memory budget.
    """
    if isinstance(request, str):
        request = {"path": request, "options": {}}
    path = request["path"]
    try:
        raw = extract_raw(Path(path), ExtractOptions(**request.get("options", {})))
        return {"ok": {"title": raw.title, "pages": [asdict(p) for p in raw.pages]}}
    except MemoryError:
        return {"error": f"extraction exceeded the {memory_mb} MB memory limit", "fatal": True}
    except RagloupeError as exc:
        return {"error": str(exc)}
    except Exception as exc:
        return {"error": f"unreadable PDF: {plain_reason(exc)}"}


# --------------------------------------------------------------- in the parent

def extract_with_limits(path: Path, settings: Settings) -> RawPdf:
    """Run ``extract_raw`` in the extraction child under the time and memory limits.

    Raises ExtractionLimit when a limit is hit or the child dies, EncryptedPdf
    or CorruptPdf when the child says so.
    """
    request = {"path": str(Path(path).resolve()),
               "options": asdict(ExtractOptions.from_settings(settings))}
    try:
        message = extract_in_child(request, settings.pdf_timeout_s, settings.pdf_max_memory_mb)
    except WorkerTimeout:
        raise ExtractionLimit(f"extraction exceeded {settings.pdf_timeout_s:g} s") from None
    except WorkerDied as exc:
        raise ExtractionLimit(_death_reason(str(exc), settings)) from None
    if "error" in message:
        reason = message["error"]
        if reason.startswith("encrypted"):
            raise EncryptedPdf(reason)
        if reason.startswith("extraction exceeded"):
            raise ExtractionLimit(reason)
        raise CorruptPdf(reason)
    ok = message["ok"]
    return RawPdf(title=ok["title"], pages=tuple(
        RawPage(**{**p, "tables": tuple(p.get("tables", ()))}) for p in ok["pages"]))


def _death_reason(how: str, settings: Settings) -> str:
    """Why the child ended without an answer. Over its address-space limit it
    usually raises MemoryError (answered normally), but an allocation inside C
    code can abort (SIGABRT) or the kernel can kill it (SIGKILL). Only the
    exit status is shown: the child's last stderr line is a library's text."""
    status = how.split(":", 1)[0]
    if "MemoryError" in how or how.startswith(("status -6", "status -9")):
        return f"extraction exceeded the {settings.pdf_max_memory_mb} MB memory limit ({status})"
    return f"extraction worker died ({status})"


def precheck(path: Path) -> None:
    """Refuse, without starting a child, files that cannot be a PDF at all."""
    size = path.stat().st_size
    if size == 0:
        raise CorruptPdf("empty file (0 bytes)")
    with open(path, "rb") as handle:
        head = handle.read(_HEADER_WINDOW)
    if b"%PDF-" not in head:
        raise CorruptPdf("not a PDF: no %PDF- header (is it another file type renamed .pdf?)")


def _clean_text(text: str) -> str:
    """Expand ligature glyphs (U+FB00-FB06) to their letters, drop NULs, and
    turn lone surrogates (a broken font map) into U+FFFD.

    'ﬁ' and 'fi' must be the same word for BM25 and the tokenizer; this is a
    lossless repair, so it is not counted as damage. A lone surrogate cannot
    be stored as UTF-8 at all; as U+FFFD it is stored and counted as an
    unreadable glyph by the quality check.
    """
    text = _SURROGATES.sub("\ufffd", text.replace("\x00", ""))
    return _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group(0)), text)


def build_pages(doc_id: str, raw: RawPdf,
                settings: Settings) -> tuple[tuple[Page, ...], tuple[str, ...]]:
    """Raw page texts -> graded Pages with running lines stripped, plus those lines."""
    texts = [_clean_text(p.text) if p.error is None else "" for p in raw.pages]
    running = find_running_lines(texts, settings.boilerplate_min_share,
                                 settings.boilerplate_min_pages, settings.boilerplate_edge_lines,
                                 settings.boilerplate_min_run)
    page_tables = carry_headers([[table_from_raw(i, t) for i, t in enumerate(p.tables)]
                                 for p in raw.pages])
    pages = []
    for raw_page, text, keys, tables in zip(raw.pages, texts, running.per_page, page_tables):
        if raw_page.error is not None:
            pages.append(Page(doc_id, raw_page.page, "", raw_page.method, "rejected",
                              f"extraction failed: {raw_page.error}"))
            continue
        body = strip_running_lines(text, keys, settings.boilerplate_edge_lines)
        cells = "\n".join(" ".join(row) for table in tables for row in (table.header, *table.rows))
        graded = _grade(body.text + "\n" + cells if cells else body.text, raw_page, settings,
                        stripped=bool(body.stripped))
        pages.append(Page(doc_id, raw_page.page, body.text, raw_page.method, graded.quality,
                          graded.reason, stripped=body.stripped, tables=tuple(tables),
                          confidence=raw_page.confidence))
    return tuple(pages), running.display()


def _grade(text: str, raw_page: RawPage, settings: Settings, stripped: bool) -> PageQuality:
    """Quality of a page, with what OCR did or could not do said in the reason.

    OCR text is never graded clean: it is indexed, but its reason says it
    was read by OCR and how confident the engine was.
    """
    graded = assess_page(text, settings, has_images=raw_page.has_images, stripped=stripped)
    if raw_page.method == ocr.METHOD:
        said = f"text read by OCR (mean word confidence {raw_page.confidence:.0f}%)"
        if graded.quality == "clean":
            return PageQuality("degraded", said)
        if graded.quality in ("figures", "degraded"):
            return PageQuality("degraded", f"{said}; {graded.reason}")
        return graded
    if graded.quality == "empty" and raw_page.has_images and raw_page.note:
        return PageQuality("empty", f"{graded.reason}; {raw_page.note}")
    if raw_page.table_note:
        return PageQuality(graded.quality, "; ".join(filter(None, (graded.reason, raw_page.table_note))))
    return graded


def load_pdf(path: Path, settings: Settings, sha256: str) -> SourceDoc:
    """One PDF -> SourceDoc. Bad input comes back as ``error``, never raised."""
    doc_id = Path(path).stem
    base = dict(doc_id=doc_id, path=str(path), kind="pdf", sha256=sha256)
    try:
        precheck(Path(path))
        raw = extract_with_limits(Path(path), settings)
    except RagloupeError as exc:
        return SourceDoc(**base, error=str(exc))
    pages, boilerplate = build_pages(doc_id, raw, settings)
    return SourceDoc(**base, pages=pages, boilerplate=boilerplate, title=raw.title)
