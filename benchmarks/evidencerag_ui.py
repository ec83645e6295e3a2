"""EvidenceRAG's own Streamlit UI against `ragloupe serve`: does each of a user's steps render?

    nice -n 10 .venv/bin/python benchmarks/evidencerag_ui.py --ui /path/to/EvidenceRAG \
        --index /work/cache/demo-index

``--ui`` is a checkout holding EvidenceRAG's app/ui/streamlit_app.py and the app/ui modules it
imports (a SOURCE.json there, naming the repository, path and commit of each file, goes into
the report with each file's sha256). The index is copied into a scratch directory; one ICDAR
2013 EU PDF (real tables) is indexed into the copy, since the demo index holds no table
chunks and the Tables tab would otherwise only ever show its empty case. `ragloupe serve`
starts on the copy with no LLM, then `streamlit run app/ui/streamlit_app.py` headless, and
Playwright with Debian's chromium walks a user's steps (load, health, documents, pick one,
its stats, eval items, search without and with a generated answer, the results table and
every result's card, the page-chunks view with the token inspector, tables, metrics). Each
step records whether it rendered, with the text or element that proves it, or what the page
showed instead (Streamlit exception blocks, the UI's own st.error / st.warning texts).
Writes benchmarks/results/evidencerag_ui.json. Not part of `make test`: it needs
EvidenceRAG's code, which is public reference, not ours to ship.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_load import RAGLOUPE, free_port  # noqa: E402  (the same way of starting the server)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "evidencerag_ui.json"
SHOTS = ROOT / "test-artifacts" / "evidencerag_ui"  # screenshots: each step that did not render, and the last view
TABLE_PDF = ROOT / "data" / "benchmarks" / "icdar2013-eu" / "pdf" / "eu-001.pdf"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


# ---------------------------------------------------------------- servers

def scratch_index(index: Path, scratch: Path, table_pdf: Path, env: dict) -> dict:
    """Copy the index into ``scratch`` and index ``table_pdf`` into the copy; the summary."""
    target = scratch / "index"
    shutil.copytree(index, target, ignore=shutil.ignore_patterns(".lock"))
    started = time.perf_counter()
    done = subprocess.run([*RAGLOUPE, "index", str(table_pdf)], env=env, capture_output=True, text=True,
                          timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"indexing {table_pdf.name} into the copy failed: {done.stderr[-500:]}")
    return {"copied_from": str(index), "table_pdf": str(table_pdf.relative_to(ROOT)),
            "index_s": round(time.perf_counter() - started, 1), "index_output": done.stdout.strip()[-400:]}


@contextmanager
def process(args: list[str], env: dict, cwd: Path, log: Path, ready_url: str, timeout_s: float):
    """A server process, its output in ``log``, yielded once ``ready_url`` answers 200."""
    with log.open("w") as out:
        proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                if proc.poll() is not None:
                    raise SystemExit(f"{args[:3]} exited with {proc.returncode}: see {log}")
                try:
                    if httpx.get(ready_url, timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit(f"{ready_url} not ready after {timeout_s} s")
                time.sleep(0.3)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def environments(scratch: Path) -> tuple[dict, dict]:
    """The server's environment (the scratch index, no LLM, offline) and the UI's."""
    for name in ("raw", "runs", "logs", "results"):
        (scratch / name).mkdir(exist_ok=True)
    server = {**os.environ, "RAGLOUPE_INDEX_DIR": str(scratch / "index"), "RAGLOUPE_RAW_DIR": str(scratch / "raw"),
              "RAGLOUPE_RUNS_DIR": str(scratch / "runs"), "RAGLOUPE_LOGS_DIR": str(scratch / "logs"),
              "RAGLOUPE_LLM_BACKEND": "none", "RAGLOUPE_API_KEY": "", "CHROMA_HOST": "",
              "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(ROOT / "src")}
    # RAG_RESULTS_DIR is EvidenceRAG's own folder of local result files (failure audits,
    # figures); pointed at an empty folder so its sidebar does not report a path of its
    # author's machine as missing.
    ui = {k: v for k, v in os.environ.items() if not k.startswith("RAGLOUPE_")}
    ui.update(RAG_RESULTS_DIR=str(scratch / "results"), HF_HUB_OFFLINE="1", PYTHONPATH="")
    return server, ui




# ---------------------------------------------------------------- the run

OPTIONAL_IMPORTS = ("matplotlib", "sklearn", "scipy", "umap", "wizmap", "sentence_transformers", "pyarrow")


def ui_source(ui: Path) -> dict:
    """Where each file of the UI came from (its SOURCE.json, when there) and its sha256."""
    listed = json.loads((ui / "SOURCE.json").read_text()) if (ui / "SOURCE.json").exists() else {"files": []}
    files = {f["path"]: dict(f) for f in listed["files"]}
    for path in sorted(p.relative_to(ui).as_posix() for p in (ui / "app").rglob("*.py")):
        data = (ui / path).read_bytes()
        files.setdefault(path, {"path": path})["sha256"] = hashlib.sha256(data).hexdigest()
        files[path]["bytes"] = len(data)
    imports = subprocess.run([sys.executable, "-c", "import importlib.util, json; print(json.dumps({m: "
                              "importlib.util.find_spec(m) is not None for m in %r}))" % (OPTIONAL_IMPORTS,)],
                             capture_output=True, text=True, check=True)
    return {"checkout": str(ui), "note": listed.get("note"), "files": list(files.values()),
            "imports_its_code_makes_later": json.loads(imports.stdout)}


def walk(page, ctx: dict, shots: Path) -> list[dict]:
    """Every step in order; one that does not render is recorded and the walk goes on."""
    from evidencerag_ui_steps import STEPS

    records = []
    for i, (name, step) in enumerate(STEPS, start=1):
        started = time.perf_counter()
        record: dict = {"step": name}
        try:
            record.update(rendered=True, proof=step(page, ctx))
        except Exception as exc:  # a timeout or a missing element: the step did not render
            record.update(rendered=False, error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:400]}")
            page.screenshot(path=str(shots / f"{i:02d}.png"), full_page=True)
        record["page_problems"] = problems_now(page)
        record["seconds"] = round(time.perf_counter() - started, 1)
        print(f"{'ok ' if record['rendered'] else 'NOT'} {name}: {record.get('proof') or record.get('error')}",
              flush=True)
        records.append(record)
    return records


def problems_now(page) -> list[str]:
    from evidencerag_ui_steps import problems

    try:
        return problems(page)
    except Exception as exc:  # the page itself is gone
        return [f"could not read the page: {type(exc).__name__}"]


def browse(ui_url: str, api_url: str, table_doc: str, shots: Path) -> tuple[list[dict], dict]:
    from playwright.sync_api import sync_playwright

    from evidencerag_ui_steps import local_artifact_tabs

    ctx = {"ui_url": ui_url, "api_url": api_url, "api": httpx.Client(base_url=api_url, timeout=120),
           "table_doc": table_doc}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1100})
            page.set_default_timeout(120_000)
            records = walk(page, ctx, shots)
            try:
                others = local_artifact_tabs(page, ctx)
            except Exception as exc:  # informational only
                others = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"}
            page.screenshot(path=str(shots / "last.png"), full_page=True)
            chromium = browser.version
        finally:
            browser.close()
    return records, {"before_the_api_url_was_set": ctx.get("before_api_url"), "tabs": others, "chromium": chromium}


def run(args) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="evidencerag-ui-"))
    shots = Path(args.shots)
    shots.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, scratch, shots)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


def _run(args, scratch: Path, shots: Path) -> dict:
    server_env, ui_env = environments(scratch)
    built = scratch_index(Path(args.index), scratch, Path(args.table_pdf), server_env)
    api_port, ui_port = free_port(), free_port()
    api_url, ui_url = f"http://127.0.0.1:{api_port}", f"http://127.0.0.1:{ui_port}"
    serve = [*RAGLOUPE, "serve", "--port", str(api_port)]
    streamlit = [sys.executable, "-m", "streamlit", "run", "app/ui/streamlit_app.py", "--server.address",
                 "127.0.0.1", "--server.port", str(ui_port), "--server.headless", "true",
                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]
    with ExitStack() as stack:
        stack.enter_context(process(serve, server_env, ROOT, scratch / "serve.log", f"{api_url}/health", 180))
        stack.enter_context(process(streamlit, ui_env, Path(args.ui), scratch / "streamlit.log",
                                    f"{ui_url}/_stcore/health", 180))
        table_doc = Path(args.table_pdf).stem
        records, others = browse(ui_url, api_url, table_doc, shots)
    from importlib.metadata import version

    chromium = others.pop("chromium")
    return {"command": "nice -n 10 .venv/bin/python benchmarks/evidencerag_ui.py " + " ".join(sys.argv[1:]),
            "versions": {"streamlit": version("streamlit"), "playwright": version("playwright"), "chromium": chromium},
            "ui_source": ui_source(Path(args.ui)), "index": built,
            "server": "ragloupe serve, RAGLOUPE_LLM_BACKEND=none, loopback",
            "ui": "streamlit run app/ui/streamlit_app.py (headless), Debian chromium via Playwright",
            "steps": records, "rendered": sum(r["rendered"] for r in records), "of": len(records),
            "local_artifact_tabs": others, "load_average": [round(x, 2) for x in os.getloadavg()],
            "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ui", required=True, help="a checkout holding EvidenceRAG's app/ui/streamlit_app.py")
    parser.add_argument("--index", default=os.environ.get("RAGLOUPE_INDEX_DIR"),
                        help="the index dir to copy (default: RAGLOUPE_INDEX_DIR)")
    parser.add_argument("--table-pdf", default=str(TABLE_PDF), help="a PDF with tables, indexed into the copy")
    parser.add_argument("--shots", default=str(SHOTS), help=f"where screenshots go (default: {SHOTS})")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (index copy, server logs)")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if not args.index or not Path(args.ui, "app", "ui", "streamlit_app.py").exists():
        parser.error("--index (or RAGLOUPE_INDEX_DIR) and --ui with app/ui/streamlit_app.py are needed")
    report = run(args)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    print(f"{report['rendered']}/{report['of']} steps rendered -> {args.out}")


if __name__ == "__main__":
    main()
