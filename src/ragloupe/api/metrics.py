"""Counters and latency histograms in the Prometheus text format, written by hand.

Two families are kept: requests per endpoint (by method, route template and
status, with their latency), and seconds per pipeline stage (query
embedding, dense, bm25, fusion, screen, claim extraction, every LLM call
...). A route template ("/api/v1/docs/{doc_id}/stats"), not the raw path,
labels a request, so the number of series stays bounded whatever clients
send. Thread-safe: endpoints run in a thread pool.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Iterable

# Upper bounds in seconds, from a cached search to a slow LLM call.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Histogram:
    """Cumulative bucket counts, a sum and a count, as Prometheus wants them."""

    def __init__(self, buckets: Iterable[float] = BUCKETS):
        self.bounds = tuple(buckets)
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        self.n = 0

    def observe(self, seconds: float) -> None:
        for i, bound in enumerate(self.bounds):
            if seconds <= bound:
                self.counts[i] += 1
        self.total += seconds
        self.n += 1


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, str], int] = defaultdict(int)
        self._latency: dict[tuple[str, str], Histogram] = {}
        self._stages: dict[str, Histogram] = {}
        self._errors: dict[tuple[str, str], int] = defaultdict(int)

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self._requests[(method, route, str(status))] += 1
            self._latency.setdefault((method, route), Histogram()).observe(seconds)

    def stage(self, name: str, seconds: float) -> None:
        with self._lock:
            self._stages.setdefault(name, Histogram()).observe(seconds)

    def stages(self, timings: dict[str, float], prefix: str = "") -> None:
        """Record every entry of a Ranking's or a check's timings dict."""
        for name, seconds in timings.items():
            self.stage(prefix + name, seconds)

    def error(self, route: str, kind: str) -> None:
        with self._lock:
            self._errors[(route, kind)] += 1

    def render(self) -> str:
        """The whole registry in the Prometheus text exposition format (version 0.0.4)."""
        with self._lock:
            lines = ["# HELP ragloupe_http_requests_total HTTP requests by method, route and status.",
                     "# TYPE ragloupe_http_requests_total counter"]
            for (method, route, status), count in sorted(self._requests.items()):
                lines.append(f"ragloupe_http_requests_total{_labels(method=method, route=route, status=status)} {count}")
            lines += ["# HELP ragloupe_http_request_duration_seconds Time to answer a request, by route.",
                      "# TYPE ragloupe_http_request_duration_seconds histogram"]
            for (method, route), histogram in sorted(self._latency.items()):
                lines += _histogram("ragloupe_http_request_duration_seconds", histogram,
                                    method=method, route=route)
            lines += ["# HELP ragloupe_stage_duration_seconds Time spent in each pipeline stage.",
                      "# TYPE ragloupe_stage_duration_seconds histogram"]
            for name, histogram in sorted(self._stages.items()):
                lines += _histogram("ragloupe_stage_duration_seconds", histogram, stage=name)
            lines += ["# HELP ragloupe_http_errors_total Requests that ended in an error, by route and kind.",
                      "# TYPE ragloupe_http_errors_total counter"]
            for (route, kind), count in sorted(self._errors.items()):
                lines.append(f"ragloupe_http_errors_total{_labels(route=route, kind=kind)} {count}")
        return "\n".join(lines) + "\n"


def _histogram(name: str, histogram: Histogram, **labels: str) -> list[str]:
    lines = [f"{name}_bucket{_labels(**labels, le=_number(bound))} {count}"
             for bound, count in zip(histogram.bounds, histogram.counts)]
    lines.append(f"{name}_bucket{_labels(**labels, le='+Inf')} {histogram.n}")
    lines.append(f"{name}_sum{_labels(**labels)} {histogram.total:.6f}")
    lines.append(f"{name}_count{_labels(**labels)} {histogram.n}")
    return lines


def _labels(**labels: str) -> str:
    escaped = (f'{key}="{_escape(value)}"' for key, value in labels.items())
    return "{" + ",".join(escaped) + "}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return f"{value:g}"


class GenerationCounters:
    """EvidenceRAG's generation observability counters, served as JSON at /api/v1/metrics:
    answers asked for (by outcome), citations parsed / valid / rejected, and generation latency."""

    OUTCOMES = ("ok", "skipped", "insufficient_evidence", "gated", "error")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._outcomes: dict[str, int] = {name: 0 for name in self.OUTCOMES}
        self._citations = {"parsed_total": 0, "valid_total": 0, "rejected_total": 0}
        self._latency_ms = 0.0
        self._total = 0

    def record(self, outcome: str, parsed: int = 0, valid: int = 0, latency_ms: float = 0.0) -> None:
        """One search's generation: ``outcome`` is a generation_status (an unknown one counts as error)."""
        with self._lock:
            self._total += 1
            self._outcomes[outcome if outcome in self._outcomes else "error"] += 1
            self._citations["parsed_total"] += parsed
            self._citations["valid_total"] += valid
            self._citations["rejected_total"] += parsed - valid
            self._latency_ms += latency_ms

    def snapshot(self) -> dict:
        with self._lock:
            parsed, total = self._citations["parsed_total"], self._total
            return {
                "generation_counts": {"total": total, **self._outcomes},
                "citation_counts": dict(self._citations),
                "derived": {
                    "citation_valid_rate": self._citations["valid_total"] / parsed if parsed else None,
                    "citation_rejected_rate": self._citations["rejected_total"] / parsed if parsed else None,
                    "generation_avg_latency_ms": self._latency_ms / total if total else None,
                },
            }
