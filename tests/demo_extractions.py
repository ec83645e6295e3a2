"""The demo PDFs' extraction, shipped with the tests so a fresh clone need not repeat it.

After the vectors (demo_vectors.py), reading the demo corpus's eight PDFs is the largest cost
of building the session's demo index: pypdf, the second extractor and table detection take
about 25 s of one core, while the other test process often waits on that index. So
``tests/data/demo_extractions.json.gz`` holds what the extraction child answered for each
demo PDF, keyed by a digest of everything the answer depends on: the file's bytes, the
extraction options, the code of ``ragloupe.ingest``, the versions of the PDF libraries and of
tesseract.

conftest.py builds the demo index through ``ShippedExtractions``, which stands in for
``pdf.extract_in_child``: a request whose key is in the file takes the answer stored there;
any other request (a changed extractor, another pypdf, a new demo file) is extracted by the
real child there and then. Everything after extraction (pages, chunking, Chroma, the saved
BM25) runs as it does for a user, and every other test that reads a PDF, the demo PDFs
among them (test_boilerplate, test_ingest_pdf), extracts it for real.

Refresh the file after a change to ingestion (the suite warns how many PDFs it had to read):
    .venv/bin/python tests/demo_extractions.py
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

SHIPPED = Path(__file__).resolve().parent / "data" / "demo_extractions.json.gz"
_PACKAGES = ("pypdf", "pdfminer.six", "pdfplumber", "pypdfium2", "pillow")


def environment_digest() -> str:
    """What an answer depends on besides the file and the options: ragloupe.ingest's code and
    the versions of the libraries and the OCR engine it reads PDFs with."""
    from ragloupe.config import PROJECT_ROOT

    digest = hashlib.sha256()
    for path in sorted((PROJECT_ROOT / "src" / "ragloupe" / "ingest").glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for name in _PACKAGES:
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=absent".encode())
    digest.update(_tesseract_version().encode())
    return digest.hexdigest()


def _tesseract_version() -> str:
    binary = shutil.which("tesseract")
    if binary is None:
        return "tesseract=absent"
    try:
        run = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "tesseract=unknown"
    return (run.stdout or run.stderr).splitlines()[0] if (run.stdout or run.stderr) else "tesseract=unknown"


def request_key(request: dict, environment: str) -> str:
    """The file's bytes (not its path: every clone has another), the options, the environment."""
    digest = hashlib.sha256(Path(request["path"]).read_bytes())
    digest.update(json.dumps(request.get("options", {}), sort_keys=True).encode())
    digest.update(environment.encode())
    return digest.hexdigest()


class ShippedExtractions:
    """``extract_in_child`` answering from the shipped file where the request's key is there."""

    def __init__(self, extract: Callable[..., dict], path: Path = SHIPPED):
        self._extract = extract
        self._environment = environment_digest()
        self.answers: dict[str, dict] = {}
        self.extracted = 0  # requests not in the file, extracted by the child
        self.looked_up = 0
        if path.exists():
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                self.answers = json.load(handle)

    def __call__(self, request: dict, *args: Any, **kwargs: Any) -> dict:
        key = request_key(request, self._environment)
        self.looked_up += 1
        if key not in self.answers:
            self.extracted += 1
            self.answers[key] = self._extract(request, *args, **kwargs)
        return self.answers[key]


def main() -> int:
    """Extract the demo PDFs as the demo index build asks for them, and write the answers."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import DEMO_SOURCES  # noqa: E402  (tests/ is not a package)

    from ragloupe.config import Settings
    from ragloupe.ingest import pdf

    settings = Settings.from_env(chroma_host="")
    recorder = ShippedExtractions(pdf.extract_in_child, path=Path("/nonexistent"))
    pdfs = sorted(p for root in DEMO_SOURCES for p in ([root] if root.is_file() else root.glob("*.pdf"))
                  if p.suffix == ".pdf")
    original = pdf.extract_in_child
    pdf.extract_in_child = recorder
    try:
        for path in pdfs:
            pdf.extract_with_limits(path, settings)
    finally:
        pdf.extract_in_child = original  # a PDF the child could not read raised above: nothing written
    SHIPPED.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(SHIPPED, "wt", encoding="utf-8", compresslevel=9) as handle:
        json.dump(recorder.answers, handle, sort_keys=True)
    print(f"wrote the extraction of {len(recorder.answers)} demo PDFs to {SHIPPED}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
