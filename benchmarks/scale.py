"""Search at 10k, 100k and 300k chunks: hybrid p50/p95 per stage, the first search after a
restart, peak memory and the index build time, with embedded Chroma and with a Chroma server.

    nice -n 15 .venv/bin/python benchmarks/scale.py [--sizes 10000,100000,300000]
        [--cache /work/cache/scale] [--source /work/cache/demo-index] [--queries 50]
        [--stores embedded,server] [--port 8765]

Writes benchmarks/results/scale.json.

Each size's corpus is built once under ``<cache>/<size>`` (outside the repo) and
reused: synthetic documents made from the demo index's real chunks and real
vectors (benchmarks/scale_corpus.py), written through the index's own
Store.upsert; the BM25 build is timed over what Chroma then holds. Every
measurement runs in a fresh process (``scale.py probe``), as a restart would:
imports, opening the store, loading the real model, reading every chunk and
building the BM25, the documents' periods and the learned model, then one
search, each timed apart; then ``--queries`` Grampian gold questions, encoded
by the real model, through search() in the default mode and settings (hybrid,
learned fusion, query analysis and the period filter on), with the pipeline's
own per-stage timings. The process's peak RSS is read from the kernel. For the
server runs the benchmark starts ``chroma run --path <cache>/<size>/index/chroma``
from the venv, points CHROMA_HOST at it, and stops it afterwards; the server's
own peak RSS is reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

STARTED = time.perf_counter()

import numpy as np  # noqa: E402

from ragloupe.config import PROJECT_ROOT, Settings, bootstrap_environment  # noqa: E402

bootstrap_environment()

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "scale.json"
GOLD = PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "eval"
SEED = 20261201
WARMUP = 3


def settings_for(index_dir: Path, host: str = "", port: int = 8000) -> Settings:
    root = index_dir.parent
    # Dense at chunk grain: the synthetic documents' texts are perturbed copies, so their sentences
    # have no vectors, and encoding them would take hours. The sentence rescoring's own cost is
    # measured by benchmarks/search_latency.py (0.9 ms at 10k chunks).
    return Settings.from_env(index_dir=index_dir, runs_dir=root / "runs", raw_dir=root / "raw",
                             logs_dir=root / "logs", chroma_host=host, chroma_port=port,
                             llm_backend="none", dense_sentence_weight=0)


def gold_questions() -> list[str]:
    questions: list[str] = []
    for path in sorted(GOLD.glob("*.eval.json")):
        questions += [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]
    return questions


def peak_rss_mb(pid: int | str = "self") -> float:
    """The process's peak resident memory (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def memory_mb(pid: int | str = "self") -> dict[str, float]:
    """What the process holds now (VmRSS), split: anonymous memory (the Python heap, numpy arrays
    read in, Chroma's HNSW graph) and file pages mapped in (shared libraries, the saved copies'
    mapped arrays, which the page cache holds and the kernel can drop)."""
    wanted = {"VmRSS": "rss", "RssAnon": "anonymous", "RssFile": "file_mapped", "RssShmem": "shared"}
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name = line.split(":", 1)[0]
        if name in wanted:
            found[wanted[name]] = round(int(line.split()[1]) / 1024, 1)
    return found


def summarise(samples: list[float]) -> dict[str, float]:
    values = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(values, 50)), 1),
            "p95_ms": round(float(np.percentile(values, 95)), 1),
            "mean_ms": round(float(values.mean()), 1)}


# ---- building a size once ------------------------------------------------------------------
def build(size: int, cache: Path, source_dir: Path) -> dict:
    """The corpus of ``size`` chunks under ``cache/size``, built unless already there."""
    from ragloupe.index import lexical
    from ragloupe.index.store import open_store

    sys.path.insert(0, str(Path(__file__).parent))
    import scale_corpus

    meta_path = cache / str(size) / "build.json"
    if meta_path.exists():
        return json.loads(meta_path.read_text())
    index_dir = cache / str(size) / "index"
    shutil.rmtree(index_dir, ignore_errors=True)
    source_store = open_store(settings_for(source_dir))
    source_chunks = source_store.all_chunks()
    source = scale_corpus.Source(source_chunks, source_store.get_embeddings([c.chunk_id for c in source_chunks]))
    settings = settings_for(index_dir)
    store = open_store(settings)
    write_s, documents = 0.0, 0
    for chunks, vectors in scale_corpus.synthetic_batches(source, size, SEED + size):
        start = time.perf_counter()
        store.upsert(chunks, vectors)
        write_s += time.perf_counter() - start
        documents += 1
    store.set_content_marker(f"scale-{size}-{SEED}")
    start = time.perf_counter()
    chunks = store.all_chunks()
    read_s = time.perf_counter() - start
    start = time.perf_counter()
    lexical.build_index(chunks, k1=settings.bm25_k1, b=settings.bm25_b, backend=settings.bm25_backend)
    bm25_s = time.perf_counter() - start
    meta = {"chunks": store.count(), "documents": documents, "source": str(source_dir),
            "chroma_write_s": round(write_s, 1), "read_all_chunks_s": round(read_s, 1),
            "bm25_build_s": round(bm25_s, 1), "index_build_s": round(write_s + read_s + bm25_s, 1),
            "disk_mb": round(sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file()) / 2**20),
            "load_average_1m_after": round(os.getloadavg()[0], 1)}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return meta


# ---- one fresh process: restart, then timed searches -----------------------------------------
def restart_parts(settings: Settings, question: str) -> tuple[dict, object, object]:
    """Everything a restarted process does before its first answer, each part timed."""
    from ragloupe.index.embedder import get_embedder
    from ragloupe.index.store import open_store
    from ragloupe.retrieve import learned
    from ragloupe.retrieve.search import search
    from ragloupe.workspace import Workspace

    parts: dict = {"imports_s": time.perf_counter() - STARTED}
    # CPU seconds of this process per part: on a shared machine they move less than the wall time.
    cpu: dict = {"imports_s": time.process_time()}

    def timed(name: str, step):
        start, start_cpu = time.perf_counter(), time.process_time()
        value = step()
        parts[name] = time.perf_counter() - start
        cpu[name] = time.process_time() - start_cpu
        return value

    store = timed("open_store_s", lambda: open_store(settings))
    workspace = Workspace.open(settings, store=store, load_embedder=lambda: _warm(get_embedder(settings)))
    timed("read_all_chunks_s", workspace.chunks)
    # As serve's warm-up: Chroma reads its vector index in a thread beside the rest (its query
    # releases the GIL), so the first search does not pay for it; its own wall time is reported.
    dense = threading.Thread(target=lambda: parts.__setitem__("open_dense_index_beside_s", _took(
        workspace.open_dense_index)))
    dense.start()
    timed("load_model_s", lambda: workspace.embedder)
    timed("chunk_table_s", workspace.chunk_table)
    timed("bm25_build_s", workspace.lexical)
    timed("document_periods_s", workspace.periods)
    timed("learned_model_s", lambda: workspace.learned_model(learned.model_path(settings)))
    # Learned fusion's page-, section- and chunk-level views, built from the chunk BM25 on first use.
    timed("page_section_views_s", lambda: workspace.corpus_views(workspace.lexical()))
    timed("dense_index_wait_s", dense.join)
    ranking = timed("first_search_s", lambda: search(question, workspace=workspace))
    answered = time.perf_counter() - STARTED
    parts["first_search_stages_ms"] = {k: round(v * 1000, 1) for k, v in ranking.timings.items()}
    parts["rss_after_start_mb"] = peak_rss_mb()
    parts["memory_after_start_mb"] = memory_mb()
    parts["parts_in_turn_s"] = sum(v for k, v in parts.items() if k.endswith("_s") and "beside" not in k)
    parts["restart_to_first_answer_s"] = answered  # the wall time from the process's start
    parts["after_imports_to_first_answer_s"] = answered - parts["imports_s"]
    parts["cpu_s"] = {k: round(v, 2) for k, v in cpu.items()}
    return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in parts.items()}, workspace


def _took(step) -> float:
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def _warm(embedder):
    embedder.encode(["warm"])
    return embedder


def timed_searches(settings: Settings, workspace, questions: list[str]) -> dict:
    from ragloupe.retrieve.search import search

    for question in questions[-WARMUP:]:
        search(question, workspace=workspace)
    totals, without_embedding, stages, fused_by, cpu = [], [], {}, Counter(), []
    for question in questions[:-WARMUP]:
        start_cpu = time.process_time()
        ranking = search(question, workspace=workspace)
        cpu.append(time.process_time() - start_cpu)
        timings = ranking.timings
        fused_by[ranking.fusion.split(":")[0]] += 1
        totals.append(timings["total"])
        without_embedding.append(timings["total"] - timings.get("query_embedding", 0.0))
        for stage, seconds in timings.items():
            if stage != "total":  # setup: opening the store (done by now) and asking what it holds
                stages.setdefault(stage, []).append(seconds)
    return {"mode": ranking.mode, "queries": len(totals), "fused_by": dict(fused_by), **summarise(totals),
            "without_query_embedding": summarise(without_embedding), "cpu": summarise(cpu),
            "stages_p50_ms": {s: round(float(np.percentile(v, 50)) * 1000, 2) for s, v in stages.items()},
            "stages_p95_ms": {s: round(float(np.percentile(v, 95)) * 1000, 2) for s, v in stages.items()}}


def probe(index_dir: Path, host: str, port: int, queries: int) -> dict:
    settings = settings_for(index_dir, host, port)
    questions = gold_questions()[: queries + WARMUP]
    load_before, code = [round(x, 1) for x in os.getloadavg()], code_version()  # the code imported now
    parts, workspace = restart_parts(settings, questions[0])
    searches = timed_searches(settings, workspace, questions[1:])
    return {"chunks": workspace.store.count(), "code": code, "restart": parts, "hybrid": searches,
            "peak_rss_mb": peak_rss_mb(), "memory_at_end_mb": memory_mb(), "niceness": os.nice(0),
            # The machine is shared: a load above its 2 CPUs inflates every wall-clock figure.
            "load_average": {"before": load_before, "after": [round(x, 1) for x in os.getloadavg()]},
            "settings": {"mode": settings.mode, "fusion": settings.fusion,
                         "candidate_window": settings.candidate_window, "k": settings.top_k,
                         "query_analysis": settings.query_analysis, "period_filter": settings.period_filter,
                         "bm25_backend": settings.bm25_backend, "unit_view": settings.unit_view,
                         "embedding_model": settings.embedding_model}}


def dense_filter(index_dir: Path, samples: int = 12) -> dict:
    """Chroma's dense search with and without the period filter's ``doc_id $in [...]`` clause,
    and as search() now runs it: ids and distances only, the filter passed as the scope's
    chunk ids, the chunks looked up in the workspace's chunk table (engines.dense_search).

    The scope is the documents of the commonest period, as the period filter would pass it for
    a question naming that period; the queries are random unit vectors (the cost does not
    depend on what they mean).
    """
    from ragloupe.index.store import open_store
    from ragloupe.retrieve import engines
    from ragloupe.workspace import Workspace

    settings = settings_for(index_dir)
    store = open_store(settings)
    workspace = Workspace.open(settings, store=store)
    periods, table = workspace.periods(), workspace.chunk_table()
    labels = Counter(p.period.label for p in periods.values() if p.period)
    label = labels.most_common(1)[0][0]
    scope = sorted(d for d, p in periods.items() if p.period and p.period.label == label)
    queries = np.random.default_rng(SEED).standard_normal((samples + 1, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    engines.dense_search(store, queries[-1], 100)  # warm-up: the HNSW index into memory
    out = {"chunks": store.count(), "documents": len(periods), "scope": {"period": label, "documents": len(scope)}}
    out["scope"]["chunks"] = sum(len(table.by_doc.get(d, ())) for d in scope)
    for name, filters, by in (("no_filter", None, None), ("period_filter", {"doc_ids": scope}, None),
                              ("no_filter_chunk_table", None, table),
                              ("period_filter_as_chunk_ids", {"doc_ids": scope}, table)):
        wall, cpu = [], []
        for query in queries[:-1]:
            start, start_cpu = time.perf_counter(), time.process_time()
            engines.dense_search(store, query, 100, filters, by)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        out[name] = {"wall": summarise(wall), "cpu": summarise(cpu)}
    return out


def dense_filter_report(out: Path, cache: Path, sizes: list[int], argv: list[str] | None) -> int:
    report = json.loads(out.read_text()) if out.exists() else {}
    found = dict(report.get("dense_filter", {}).get("sizes", {}))
    for size in sizes:
        found[str(size)] = dense_filter(cache / str(size) / "index")
        print(json.dumps(found[str(size)]), flush=True)
    report["dense_filter"] = {
        "command": "nice -n 15 .venv/bin/python benchmarks/scale.py " + " ".join(argv or sys.argv[1:]),
        "load_average_after": [round(x, 1) for x in os.getloadavg()], "sizes": found}
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def code_version() -> str:
    """The commit the probe ran (and "+changes" when the checkout differs from it)."""
    git = ["git", "-C", str(PROJECT_ROOT)]
    head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(git + ["status", "--porcelain", "--untracked-files=no", "src"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


# ---- the driver: builds, probes, the server ------------------------------------------------------
def run_probe(index_dir: Path, queries: int, host: str = "", port: int = 8000) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "probe", "--index", str(index_dir),
               "--queries", str(queries), "--host", host, "--port", str(port)]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ})
    if done.returncode != 0:
        raise RuntimeError(f"probe failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_port(port: int, server: subprocess.Popen, limit_s: float = 120.0) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        if server.poll() is not None:
            raise RuntimeError(f"chroma run exited with {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return time.perf_counter() - start
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"chroma run did not listen on {port} in {limit_s:g} s")


def with_server(index_dir: Path, queries: int, port: int) -> dict:
    """The probe against ``chroma run`` serving the same files, started and stopped here."""
    chroma = Path(sys.executable).parent / "chroma"
    log = open(index_dir.parent / "chroma-server.log", "w")
    server = subprocess.Popen([str(chroma), "run", "--path", str(index_dir / "chroma"), "--host",
                               "127.0.0.1", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    try:
        listening_s = wait_for_port(port, server)
        result = run_probe(index_dir, queries, "127.0.0.1", port)
        result["server"] = {"listening_after_s": round(listening_s, 2),
                            "peak_rss_mb": peak_rss_mb(server.pid)}
        return result
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def growth(sizes: list[dict]) -> dict:
    """Per store: each figure's ratio between consecutive sizes next to the size ratio."""
    out: dict = {}
    for small, large in zip(sizes, sizes[1:]):
        ratio = large["chunks"] / small["chunks"]
        for store in large["stores"]:
            if store not in small["stores"]:
                continue
            a, b = small["stores"][store], large["stores"][store]
            figures = {"hybrid_p50": (a["hybrid"]["p50_ms"], b["hybrid"]["p50_ms"]),
                       **{f"{k}": (a["restart"][k], b["restart"][k]) for k in
                          ("read_all_chunks_s", "bm25_build_s", "document_periods_s",
                           "page_section_views_s", "restart_to_first_answer_s")},
                       **{f"stage {s}": (a["hybrid"]["stages_p50_ms"][s], v) for s, v in
                          b["hybrid"]["stages_p50_ms"].items() if s in a["hybrid"]["stages_p50_ms"]}}
            out.setdefault(store, []).append({
                "from": small["chunks"], "to": large["chunks"], "size_ratio": round(ratio, 1),
                "ratios": {k: round(y / x, 2) if x > 0.05 else None for k, (x, y) in figures.items()}})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", nargs="?", default="run", choices=["run", "build", "probe", "merge", "dense-filter"])
    parser.add_argument("--sizes", default="10000,100000,300000")
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/scale"))
    parser.add_argument("--source", type=Path, default=Path("/work/cache/demo-index"))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--stores", default="embedded,server")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("reports", nargs="*", type=Path, help="merge: reports folded into --out, in turn")
    parser.add_argument("--index", type=Path, help="probe: the index directory")
    parser.add_argument("--host", default="", help="probe: a Chroma server's host")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", action="store_true",
                        help="keep the other sizes of an earlier report at --out (measure sizes in turn)")
    args = parser.parse_args(argv)
    if args.action == "probe":
        print(json.dumps(probe(args.index, args.host, args.port, args.queries)))
        return 0
    if args.action == "merge":
        return merge_reports(args.out, args.reports)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.action == "dense-filter":
        return dense_filter_report(args.out, args.cache, sizes, argv)
    if args.action == "build":
        for size in sizes:
            print(json.dumps(build(size, args.cache, args.source)), flush=True)
        return 0
    return run(args, sizes, argv)


def run(args, sizes: list[int], argv: list[str] | None) -> int:
    """Build each size (once), probe it under each store; the report is rewritten after every probe."""
    stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    record = {"command": "nice -n 15 .venv/bin/python benchmarks/scale.py " + " ".join(argv or sys.argv[1:]),
              "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "measured": [],
              # The machine is shared: a load above the CPU count inflates every figure.
              "load_average_before": [round(x, 1) for x in os.getloadavg()]}
    results: list[dict] = []
    for size in sizes:
        entry = {"chunks": size, "build": build(size, args.cache, args.source), "stores": {}}
        results.append(entry)
        index_dir = args.cache / str(size) / "index"
        for store in stores:
            entry["stores"][store] = (run_probe(index_dir, args.queries) if store == "embedded"
                                      else with_server(index_dir, args.queries, args.port))
            found = entry["stores"][store]
            record["measured"].append(f"{size} {store} ({found['code']})")
            print(f"{size:>7} {store:<9} hybrid p50 {found['hybrid']['p50_ms']} ms "
                  f"p95 {found['hybrid']['p95_ms']} ms, restart {found['restart']['restart_to_first_answer_s']} s, "
                  f"peak {found['peak_rss_mb']} MB", flush=True)
            earlier = json.loads(args.out.read_text()) if args.keep and args.out.exists() else {}
            write_report(args.out, merged(earlier, results), record, earlier.get("runs", []))
    print(f"wrote {args.out}")
    return 0


def merged(earlier: dict, results: list[dict]) -> list[dict]:
    """This run's sizes and stores over the earlier report's (read afresh: runs may overlap)."""
    by_size = {r["chunks"]: {**r, "stores": dict(r["stores"])} for r in earlier.get("sizes", [])}
    for entry in results:
        old = by_size.get(entry["chunks"], {"stores": {}})
        by_size[entry["chunks"]] = {**entry, "stores": {**old["stores"], **entry["stores"]}}
    return [by_size[size] for size in sorted(by_size)]


def merge_reports(out: Path, reports: list[Path]) -> int:
    """Fold reports written to other files (runs that overlapped) into ``out``, later ones winning."""
    report = json.loads(out.read_text()) if out.exists() else {}
    for path in reports:
        other = json.loads(path.read_text())
        report["sizes"] = merged(report, other.get("sizes", []))
        runs = {r.get("started") or r["command"]: r for r in report.get("runs", []) + other.get("runs", [])}
        report["runs"] = list(runs.values())
        report = {**other, **report}
    report["growth"] = growth([r for r in report["sizes"] if r["stores"]])
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


def write_report(out: Path, sizes: list[dict], run_record: dict, earlier_runs: list[dict]) -> None:
    """Every size measured so far, and the runs (command, load, what each measured) behind them."""
    this_run = {**run_record, "load_average_after": [round(x, 1) for x in os.getloadavg()]}
    report = {
        "benchmark": "scale",
        "runs": [r for r in earlier_runs if r.get("started") != this_run["started"]] + [this_run],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "corpus": "synthetic documents copied from the demo index's real chunks and vectors "
                  "(benchmarks/scale_corpus.py)",
        "sizes": sizes,
        "growth": growth([r for r in sizes if r["stores"]]),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
