"""Load on POST /api/v1/search: p50 / p95 latency and requests/s with 1, 4 and 16 concurrent clients.

    .venv/bin/python benchmarks/api_load.py [--clients 1,4,16] [--seconds 20] [--k 10] [--workers 1]

Writes benchmarks/results/api_load.json. Needs a built index (RAGLOUPE_INDEX_DIR,
default data/index: `make index`).

What runs: `ragloupe serve` as its own process on a free 127.0.0.1 port
(loopback only, nothing leaves the machine), warmed up with a few searches;
then, for each client count in turn, that many threads, each with its own
HTTP connection, send searches back to back for a fixed number of seconds
(and at most --max-requests each: the loop is bounded and stops by itself).
Every request is accounted for: answered with 200, answered with another
status (an error), or not answered (lost). The server is stopped at the end.

``--workers N`` starts `ragloupe serve --workers N` (N server processes on the
port); the resident memory is then the sum over the master and its workers.
Targets (issue 22): requests/s at the most clients >= 1.8x one client's, and
p50 over HTTP at one client <= the pipeline's own time (the answer's
ranking.timings.total, its median over the same requests) + 30 ms.

The questions are the 150 Grampian gold questions in turn, each made unique
with a request number, so no answer comes from the server's query-vector
cache: every request embeds its query, which is the expensive step. The
server's resident memory (VmRSS) is read from /proc after the warm-up and
after the last level. The machine's load average is recorded: the timings
are only as quiet as the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "api_load.json"
GOLD = sorted((ROOT / "data" / "benchmarks" / "grampian" / "eval").glob("*.eval.json"))
RAGLOUPE = [sys.executable, "-c", "import sys; from ragloupe.cli import main; sys.exit(main())"]
TARGET_RATIO = 4.0  # p50 at the most clients over p50 at one client
TARGET_THROUGHPUT = 1.8  # requests/s at the most clients over one client's
TARGET_HTTP_OVERHEAD_MS = 30.0  # p50 over HTTP minus the pipeline's own p50, at one client


def questions() -> list[str]:
    found = []
    for path in GOLD:
        found += [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))["queries"]]
    return found


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, timeout_s: float = 300, workers: int = 1) -> subprocess.Popen:
    env = {**os.environ, "RAGLOUPE_API_KEY": "", "RAGLOUPE_LLM_BACKEND": "none"}
    process = subprocess.Popen([*RAGLOUPE, "serve", "--host", "127.0.0.1", "--port", str(port),
                                "--workers", str(workers)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited: {process.stderr.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if json.loads(response.read())["index"].get("ready"):
                    return process
                raise SystemExit("the index is empty: run `make index` (or set RAGLOUPE_INDEX_DIR) first")
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"the server did not answer /health within {timeout_s} s")


def wait_for_first_search(url: str, k: int, timeout_s: float = 900) -> float:
    """Seconds until a first search answers 200 (the model and BM25 load on the first one)."""
    began = time.monotonic()
    with httpx.Client(base_url=url, timeout=timeout_s) as http:
        while time.monotonic() - began < timeout_s:
            try:
                if http.post("/api/v1/search", json={"question": "warm up", "k": k}).status_code == 200:
                    return round(time.monotonic() - began, 1)
            except httpx.HTTPError:
                pass
            time.sleep(1)
    raise SystemExit(f"no search answered within {timeout_s} s")


def rss_mb(pid: int) -> float:
    """Resident memory of the process and its children (uvicorn's workers), in MB."""
    total = 0
    for one in [pid, *_children(pid)]:
        try:
            lines = Path(f"/proc/{one}/status").read_text().splitlines()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))
    return round(total / 1024, 1) if total else float("nan")


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found + [grand for child in found for grand in _children(child)]


class Counter:
    """A request number shared by all clients, so every question sent is unique."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._n = 0

    def next(self) -> int:
        with self._lock:
            self._n += 1
            return self._n


def run_level(url: str, clients: int, seconds: float, max_requests: int, k: int, pool: list[str],
              counter: Counter) -> dict:
    latencies: list[float] = []
    pipeline: list[float] = []  # the pipeline's own time, from the answer's ranking.timings.total
    statuses: dict[str, int] = {}
    sent = [0]
    lock = threading.Lock()
    start_gate = threading.Barrier(clients)

    def client() -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            start_gate.wait()
            end = time.monotonic() + seconds
            for _ in range(max_requests):
                if time.monotonic() >= end:
                    return
                n = counter.next()
                question = f"{pool[n % len(pool)]} ({n})"
                with lock:
                    sent[0] += 1
                began = time.perf_counter()
                try:
                    response = http.post("/api/v1/search", json={"question": question, "k": k})
                    status = str(response.status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                elapsed = time.perf_counter() - began
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == "200":
                        latencies.append(elapsed)
                        pipeline.append(response.json()["ranking"]["timings"].get("total", float("nan")))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    answered = sum(statuses.values())
    ok = statuses.get("200", 0)
    ordered = sorted(latencies)
    return {
        "clients": clients, "seconds": round(wall, 2), "requests_sent": sent[0], "answered": answered,
        "ok": ok, "errors": answered - ok, "lost": sent[0] - answered, "statuses": statuses,
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000, 1) if ordered else None,
        "requests_per_s": round(ok / wall, 2),
        "pipeline_p50_ms": round(statistics.median(pipeline) * 1000, 1) if pipeline else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,4,16")
    parser.add_argument("--seconds", type=float, default=20.0, help="per level")
    parser.add_argument("--max-requests", type=int, default=500, help="per client and level (a bound)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5, help="searches before measuring")
    parser.add_argument("--workers", type=int, default=1, help="ragloupe serve --workers N")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    levels = [int(c) for c in args.clients.split(",")]
    pool = questions()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    load_before = os.getloadavg()
    server = start_server(port, workers=args.workers)
    try:
        counter = Counter()
        ready_in_s = wait_for_first_search(url, args.k)
        # With workers, warm-up searches on several connections at once reach every worker (the
        # kernel spreads connections over them), and each waits for its worker's own warm-up.
        warm = run_level(url, 1 if args.workers == 1 else 4 * args.workers, 600, args.warmup, args.k, pool,
                         counter)
        memory_before = rss_mb(server.pid)
        results = [run_level(url, n, args.seconds, args.max_requests, args.k, pool, counter) for n in levels]
        memory_after = rss_mb(server.pid)
        with urllib.request.urlopen(f"{url}/api/v1/metrics", timeout=10) as response:
            metrics = response.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=60)
    base, top = results[0]["p50_ms"], results[-1]["p50_ms"]
    ratio = round(top / base, 2) if base and top else None
    one, most = results[0]["requests_per_s"], results[-1]["requests_per_s"]
    throughput = round(most / one, 2) if one else None
    overhead = round(base - results[0]["pipeline_p50_ms"], 1) if base and results[0]["pipeline_p50_ms"] else None
    report = {
        "benchmark": "api_load", "endpoint": "POST /api/v1/search", "k": args.k,
        "command": "python benchmarks/api_load.py " + " ".join(sys.argv[1:]), "workers": args.workers,
        "index_dir": os.environ.get("RAGLOUPE_INDEX_DIR", "data/index"),
        "questions": f"{len(pool)} Grampian gold questions, each made unique with a request number",
        "levels": results, "warmup": warm, "first_search_ready_s": ready_in_s,
        "p50_ratio_most_to_one_client": ratio, "target_ratio": TARGET_RATIO,
        "meets_target": ratio is not None and ratio <= TARGET_RATIO,
        "throughput_most_to_one_client": throughput, "target_throughput": TARGET_THROUGHPUT,
        "meets_throughput_target": throughput is not None and throughput >= TARGET_THROUGHPUT,
        "http_overhead_p50_ms_one_client": overhead, "target_http_overhead_ms": TARGET_HTTP_OVERHEAD_MS,
        "errors_total": sum(r["errors"] for r in results), "lost_total": sum(r["lost"] for r in results),
        "server_rss_mb": {"after_warmup": memory_before, "after_all_levels": memory_after},
        "query_encoder": {line.split()[0]: int(line.split()[1]) for line in metrics.splitlines()
                          if line.startswith("ragloupe_query_embedding_")},
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for r in results:
        print(f"{r['clients']:>3} clients: p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms, "
              f"{r['requests_per_s']} req/s, errors {r['errors']}, lost {r['lost']}")
    print(f"throughput {throughput}x one client's (target >= {TARGET_THROUGHPUT}); HTTP adds {overhead} ms "
          f"at one client (target <= {TARGET_HTTP_OVERHEAD_MS})")
    print(f"p50 ratio {ratio} (target <= {TARGET_RATIO}); RSS {memory_before} -> {memory_after} MB; -> {args.out}")


if __name__ == "__main__":
    main()
