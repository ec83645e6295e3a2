"""The first seconds of `ragloupe serve`: does health answer at once while the model loads, and
does the first search still pay for the model?

    RAGLOUPE_INDEX_DIR=/path/to/index .venv/bin/python benchmarks/api_start.py [--runs 3]

Each run starts `ragloupe serve` as its own process on a free loopback port (no LLM:
RAGLOUPE_LLM_BACKEND=none) and polls GET /api/v1/health every 50 ms with EvidenceRAG's UI
timeout (4 s). The first search is sent the moment health first answers (as a user's
client would), and timed: ``first_search_s``, the target being <= 1.5 s. Then polling goes on,
recording each answer's time and the model state it reported, until the warm-up (the model
loading beside the saved BM25, corpus views and periods, then one search) is done: ``ready_at_s``, the
time-to-ready since the process started; then a second search is timed. Writes benchmarks/results/api_start.json, with the machine's load average (the
timings are only as quiet as the machine was).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api_load import RAGLOUPE, free_port  # noqa: E402  (the same way of starting the server)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "api_start.json"
UI_TIMEOUT_S = 4.0
TARGET_FIRST_SEARCH_S = 1.5


def one_run(limit_s: float) -> dict:
    port = free_port()
    env = {**os.environ, "RAGLOUPE_API_KEY": "", "RAGLOUPE_LLM_BACKEND": "none"}
    started = time.monotonic()
    process = subprocess.Popen([*RAGLOUPE, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    polls: list[dict] = []
    first = None
    try:
        with httpx.Client(base_url=url, timeout=UI_TIMEOUT_S) as http:
            while time.monotonic() - started < limit_s:
                polls.append(_poll(http, started))
                if first is None and polls[-1]["state"] != "no answer":
                    first = _search(http, "capital expenditure")  # right after health first answers
                    continue
                if polls[-1]["warm_up"] == "done":
                    break
                time.sleep(0.05)
            second = _search(http, "staff numbers")
    finally:
        process.terminate()
        process.wait(timeout=30)
    answered = [p for p in polls if p["state"] not in ("no answer",)]
    loading = [p for p in answered if p["state"] == "loading"]
    loaded = next((p["at_s"] for p in answered if p["state"] == "loaded"), None)
    warmed = next((p["at_s"] for p in answered if p["warm_up"] == "done"), None)
    first_health = answered[0]["at_s"] if answered else None
    return {"first_health_at_s": first_health,
            "health_answers_while_loading": len(loading),
            "slowest_health_while_loading_s": max((p["took_s"] for p in loading), default=None),
            "health_timeouts": sum(p["state"] == "ReadTimeout" for p in polls),
            "model_loaded_at_s": loaded, "ready_at_s": warmed,
            "ready_after_first_health_s": round(warmed - first_health, 3) if warmed and first_health else None,
            "first_search_s": first, "second_search_s": second}


def _poll(http: httpx.Client, started: float) -> dict:
    began = time.monotonic()
    state, warm = "no answer", ""
    try:
        model = http.get("/api/v1/health").json()["model"]
        state, warm = model["state"], model["warm_up"]
    except httpx.TransportError:
        pass
    except httpx.HTTPError as exc:
        state = type(exc).__name__
    return {"at_s": round(began - started, 3), "took_s": round(time.monotonic() - began, 3),
            "state": state, "warm_up": warm}


def _search(http: httpx.Client, question: str) -> float:
    began = time.monotonic()
    response = http.post("/api/v1/search", json={"question": question, "k": 10}, timeout=300)
    response.raise_for_status()
    return round(time.monotonic() - began, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit-s", type=float, default=180.0, help="give up on a run after this long")
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs = [one_run(args.limit_s) for _ in range(args.runs)]
    report = {"command": "RAGLOUPE_INDEX_DIR=... .venv/bin/python benchmarks/api_start.py --runs "
                         f"{args.runs} --limit-s {args.limit_s:g}", "index_dir": os.environ.get("RAGLOUPE_INDEX_DIR", "data/index"),
              "load_average_before": load_before, "load_average": os.getloadavg(), "cores": os.cpu_count(),
              "target_first_search_s": TARGET_FIRST_SEARCH_S, "runs": runs,
              "median": {key: statistics.median(r[key] for r in runs if r[key] is not None)
                         for key in runs[0] if any(r[key] is not None for r in runs)}}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report["median"], indent=2))


if __name__ == "__main__":
    main()
