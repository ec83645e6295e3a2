"""PDF ingestion with pypdf: page texts, running lines stripped, each page graded.

pypdf runs in a child process (see worker.py) with a wall-time limit
(``pdf_timeout_s``) and an address-space limit (``pdf_max_memory_mb``),
because one pathological file must cost a one-line refusal, not the batch.
The child only extracts raw page texts (``extract_raw``) and sends them back
as JSON; this process strips boilerplate and grades quality, which are pure
and cheap.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path

from ragloupe.config import Settings
from ragloupe.errors import CorruptPdf, EncryptedPdf, ExtractionLimit, RagloupeError
from ragloupe.ingest.boilerplate import find_running_lines, strip_running_lines
from ragloupe.ingest.quality import assess_page
from ragloupe.ingest.worker import WorkerDied, WorkerTimeout, extract_in_child
from ragloupe.models import Page, SourceDoc

METHOD = "pypdf-plain"
_LIGATURES = re.compile("[\ufb00-\ufb06]")
_SURROGATES = re.compile("[\ud800-\udfff]")
# The PDF header may sit anywhere in the first 1024 bytes (PDF 1.7, 7.5.2 note).
_HEADER_WINDOW = 1024


@dataclass(frozen=True)
class RawPage:
    """What the child process sends back for one page."""

    page: int
    text: str
    has_images: bool
    error: str | None = None


@dataclass(frozen=True)
class RawPdf:
    title: str | None
    pages: tuple[RawPage, ...]


def one_line(exc: BaseException) -> str:
    """An exception as one short line: 'KeyError: /Font'."""
    message = " ".join(str(exc).split())
    if len(message) > 160:
        message = message[:157] + "..."
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


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


def _page_has_images(page, check: _ImageCheck | None = None) -> bool:
    """True when the page draws an image (a scan, a figure)."""
    return (check or _ImageCheck()).page(page)


def extract_raw(path: Path) -> RawPdf:
    """Open a PDF and extract every page's text; runs inside the child process.

    Raises EncryptedPdf or CorruptPdf when the document cannot be opened. An
    error on one page (pypdf raises KeyError, TypeError, ValueError... from
    broken page objects) loses only that page, recorded with its reason.
    """
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = PdfReader(str(path), strict=False)
    except MemoryError:
        raise
    except Exception as exc:  # pypdf raises far more than PdfReadError here
        raise CorruptPdf(f"truncated or corrupt PDF ({one_line(exc)})") from exc
    if reader.is_encrypted:
        try:
            opened = reader.decrypt("")
        except DependencyError as exc:
            raise EncryptedPdf("encrypted with AES: install pypdf[crypto] to open it") from exc
        except Exception as exc:
            raise EncryptedPdf(f"encrypted, and decryption failed ({one_line(exc)})") from exc
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
        raise CorruptPdf(f"truncated or corrupt PDF ({one_line(exc)})") from exc
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
            pages.append(RawPage(number, "", False, error=one_line(exc)))
            continue
        try:
            has_images = _page_has_images(page, image_check)
        except Exception:  # a broken resource dictionary only costs the OCR hint
            has_images = False
        pages.append(RawPage(number, text, has_images))
    return RawPdf(title=str(title) if title else None, pages=tuple(pages))


def extract_message(path: str, memory_mb: int) -> dict:
    """What the child answers for one file: {"ok": RawPdf as a dict} or {"error": reason}.

    "fatal" is set after a MemoryError: the child then exits, so that the
    next file gets a fresh process with its whole memory budget.
    """
    try:
        raw = extract_raw(Path(path))
        return {"ok": {"title": raw.title, "pages": [asdict(p) for p in raw.pages]}}
    except MemoryError:
        return {"error": f"extraction exceeded the {memory_mb} MB memory limit", "fatal": True}
    except RagloupeError as exc:
        return {"error": str(exc)}
    except Exception as exc:
        return {"error": f"unreadable PDF ({one_line(exc)})"}


# --------------------------------------------------------------- in the parent

def extract_with_limits(path: Path, settings: Settings) -> RawPdf:
    """Run ``extract_raw`` in the extraction child under the time and memory limits.

    Raises ExtractionLimit when a limit is hit or the child dies, EncryptedPdf
    or CorruptPdf when the child says so.
    """
    try:
        message = extract_in_child(str(Path(path).resolve()), settings.pdf_timeout_s,
                                   settings.pdf_max_memory_mb)
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
    return RawPdf(title=ok["title"], pages=tuple(RawPage(**p) for p in ok["pages"]))


def _death_reason(how: str, settings: Settings) -> str:
    """Why the child ended without an answer. Over its address-space limit it
    usually raises MemoryError (answered normally), but an allocation inside C
    code can abort (SIGABRT) or the kernel can kill it (SIGKILL)."""
    if "MemoryError" in how or how.startswith(("status -6", "status -9")):
        return f"extraction exceeded the {settings.pdf_max_memory_mb} MB memory limit ({how})"
    return f"extraction worker died ({how})"


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
    pages = []
    for raw_page, text, keys in zip(raw.pages, texts, running.per_page):
        if raw_page.error is not None:
            pages.append(Page(doc_id, raw_page.page, "", METHOD, "rejected",
                              f"extraction failed: {raw_page.error}"))
            continue
        body = strip_running_lines(text, keys, settings.boilerplate_edge_lines)
        graded = assess_page(body.text, settings, has_images=raw_page.has_images,
                             stripped=bool(body.stripped))
        pages.append(Page(doc_id, raw_page.page, body.text, METHOD, graded.quality,
                          graded.reason, stripped=body.stripped))
    return tuple(pages), running.display()


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
