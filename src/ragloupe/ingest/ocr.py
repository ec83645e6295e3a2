"""OCR for pages without a text layer: the page rendered by PDFium, read by Tesseract.

Engine: Debian's ``tesseract-ocr`` (with its English model), run as a
subprocess; the Makefile and .ci/run install it with apt. Renderer:
pypdfium2, whose wheel ships the PDFium binary (it comes with pdfplumber).
Why Tesseract: it is one apt package on every Debian/Ubuntu machine with
its English model included, needs no Python wheel of its own, reads printed
English accurately and needs about 1 s per A4 page at 300 dpi on one core
(``benchmarks/ocr_accuracy.py``). The pip alternatives either fetch their
models at run time or pull OpenCV in.

Runs inside the extraction child: the Tesseract process inherits the
child's address-space limit, and each call gets at most the time left
before the file's deadline, so OCR stays within the same time and memory
limits as the rest of the extraction.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from dataclasses import dataclass

METHOD = "ocr"
ENGINE = "tesseract"


class OcrFailed(Exception):
    """Tesseract could not read the page; str() is a plain reason."""


@dataclass(frozen=True)
class OcrResult:
    text: str
    confidence: float  # mean word confidence, 0-100 (0 when no word was found)
    words: int


def engine_path() -> str | None:
    """Where the tesseract binary is, or None when it is not installed."""
    return shutil.which(ENGINE)


def render_page(pdfium_document, index: int, dpi: int):
    """Page ``index`` (0-based) as a greyscale PIL image at ``dpi``."""
    page = pdfium_document[index]
    try:
        bitmap = page.render(scale=dpi / 72, grayscale=True)
        return bitmap.to_pil().convert("L")
    finally:
        page.close()


def read_image(image, timeout_s: float, language: str = "eng") -> OcrResult:
    """OCR one PIL image with Tesseract; raises OcrFailed with a plain reason."""
    binary = engine_path()
    if binary is None:
        raise OcrFailed("the OCR engine (tesseract) is not installed")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    # One thread: the machine's cores are shared with the embedder and other work.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run([binary, "stdin", "stdout", "-l", language, "--psm", "3", "tsv"],
                              input=buffer.getvalue(), capture_output=True, timeout=timeout_s,
                              env=env, check=False)
    except subprocess.TimeoutExpired:
        raise OcrFailed(f"OCR took longer than the {timeout_s:.0f} s left for this file") from None
    except OSError:
        raise OcrFailed("the OCR engine (tesseract) could not be started") from None
    if done.returncode != 0:
        raise OcrFailed("the OCR engine (tesseract) failed on this page")
    return parse_tsv(done.stdout.decode("utf-8", "replace"))


def parse_tsv(tsv: str) -> OcrResult:
    """Tesseract's TSV output -> text (one line per OCR line) and mean word confidence."""
    lines: dict[tuple[int, int, int, int], list[str]] = {}
    confidences: list[float] = []
    for row in tsv.splitlines()[1:]:
        cells = row.split("\t")
        if len(cells) < 12 or cells[0] != "5":  # level 5 = a word
            continue
        word = cells[11].strip()
        try:
            confidence = float(cells[10])
        except ValueError:
            continue
        if not word or confidence < 0:
            continue
        key = tuple(int(c) for c in cells[1:5])  # page, block, paragraph, line
        lines.setdefault(key, []).append(word)
        confidences.append(confidence)
    text = "\n".join(" ".join(words) for _, words in sorted(lines.items()))
    mean = sum(confidences) / len(confidences) if confidences else 0.0
    return OcrResult(text=text, confidence=round(mean, 1), words=len(confidences))
