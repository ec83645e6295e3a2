"""Helpers for tests that start a real server on loopback (streamlit, chroma run, the
fake LLM server) and check that a call against a stalled server gives up in time."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import urllib.request


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_ready(url: str, process: subprocess.Popen, timeout_s: float,
                     ready=lambda body, status: status == 200) -> None:
    """Poll ``url`` until ``ready(body, status)``; fail at once if ``process`` exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0] if isinstance(process.args, list) else process.args} "
                               f"exited with code {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if ready(response.read().decode(), response.status):
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout_s} s")


def run_bounded(call, limit_s: float):
    """call()'s result (or exception) and how long it took; fails when it outlasts limit_s.

    The call runs in a daemon thread, so a call that hangs fails the test
    instead of hanging the suite.
    """
    outcome: dict = {}

    def target():
        try:
            outcome["result"] = call()
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(limit_s)
    assert not worker.is_alive(), f"still waiting after {limit_s:g} s"
    return outcome, time.monotonic() - started
