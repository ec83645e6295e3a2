"""JSON over HTTP with one deadline per request: the plumbing every server client shares.

The LLM clients (generate/llm.py) and the remote embedding backends
(index/remote_embedder.py) talk to servers through ``request_json``. HTTP goes
through the standard library (urllib), so it adds no dependency, and a remote
endpoint behind a proxy still works because urllib honours the usual proxy
variables. One deadline covers a whole request, connect, status line, headers
and body (see ``_Deadline``): a server that sends a byte a second cannot keep
a caller waiting past it. Each caller names its ``Service``: who it is talking
to in messages, which errors to raise, and which setting to raise on a timeout.
"""

from __future__ import annotations

import functools
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ragloupe.errors import RagloupeError

_READ_BLOCK = 65536
_SNIPPET = 120  # characters of a bad reply quoted back in an error message


@dataclass(frozen=True)
class Service:
    """Who a request goes to, and how its failures are named."""

    who: str  # "Ollama", "the OpenAI-compatible server": how messages name the server
    unavailable: type[RagloupeError]  # unreachable, HTTP error, past the deadline
    bad_output: type[RagloupeError]  # answered, but not with a JSON object
    timeout_hint: str = "raise RAGLOUPE_LLM_TIMEOUT_S or use a smaller model"
    key_hint: str = "OPENAI_API_KEY"  # the setting that holds the API key, for HTTP 401/403
    kind: str = "an LLM server"  # what the port should be serving, for a reply that is not HTTP



class _Deadline:
    """One request's deadline, enforced on its socket.

    A socket timeout only bounds each blocking call, so a server that sends
    its status line, headers or body a byte at a time would keep a request
    waiting indefinitely. The connect gets at most the time left, and a timer
    shuts the socket down when the deadline passes, which ends whatever read
    is blocked on it; ``expired`` then tells a timeout from a dropped line.
    """

    def __init__(self, timeout_s: float):
        self.deadline = time.monotonic() + timeout_s
        self.expired = False
        self._timers: list[threading.Timer] = []

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def connect(self, address, timeout=None, source_address=None, **kwargs) -> socket.socket:
        """socket.create_connection bounded by the time left, then watched."""
        remaining = self.remaining()
        if remaining <= 0:
            self.expired = True
            raise socket.timeout("deadline passed before connecting")
        if isinstance(timeout, (int, float)):
            remaining = min(timeout, remaining)
        sock = socket.create_connection(address, remaining, source_address, **kwargs)
        timer = threading.Timer(max(self.remaining(), 0.0), self._expire, args=(sock,))
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return sock

    def _expire(self, sock: socket.socket) -> None:
        self.expired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed: the request ended as the deadline passed
            pass

    def cancel(self) -> None:
        for timer in self._timers:
            timer.cancel()


class _WatchedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.connect


class _WatchedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args, deadline: _Deadline, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = deadline.connect  # the TLS handshake runs on this socket too


class _WatchedHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(functools.partial(_WatchedHTTPConnection, deadline=self._deadline), req)


class _WatchedHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self._deadline = deadline

    def https_open(self, req):
        return self.do_open(functools.partial(_WatchedHTTPSConnection, deadline=self._deadline), req,
                            context=self._context)


def request_json(method: str, url: str, payload: dict | None, timeout_s: float,
                 service: Service, headers: dict[str, str] | None = None) -> dict:
    """One JSON request that ends within ``timeout_s``; the reply parsed as a JSON object.

    Raises ``service.unavailable`` when the server cannot be reached, answers
    with an HTTP error or runs past the deadline, ``service.bad_output`` when
    what it sent is not a JSON object.
    """
    who = service.who
    body = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url, data=body, method=method)
    request.add_header("Accept", "application/json")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    deadline = _Deadline(timeout_s)
    opener = urllib.request.build_opener(_WatchedHTTPHandler(deadline), _WatchedHTTPSHandler(deadline))
    try:
        with opener.open(request, timeout=timeout_s) as response:
            raw = _read_until(response, deadline, timeout_s, service, url)
        if deadline.expired:  # the socket was shut mid-body: what arrived is cut short
            raise _timed_out(service, url, timeout_s)
    except urllib.error.HTTPError as exc:
        raise _http_error(exc, service, url) from None
    except urllib.error.URLError as exc:
        if deadline.expired or isinstance(exc.reason, (socket.timeout, TimeoutError)):
            raise _timed_out(service, url, timeout_s) from None
        raise service.unavailable(f"cannot reach {who} at {url}: {_reason(exc.reason)}") from None
    except (socket.timeout, TimeoutError):
        raise _timed_out(service, url, timeout_s) from None
    except http.client.HTTPException as exc:  # something answered, but not in HTTP
        if deadline.expired:
            raise _timed_out(service, url, timeout_s) from None
        raise service.bad_output(f"{who} at {url} sent a reply that is not valid HTTP "
                                 f"({type(exc).__name__}): is that port {service.kind}?") from None
    except (ConnectionError, OSError) as exc:
        if deadline.expired:
            raise _timed_out(service, url, timeout_s) from None
        raise service.unavailable(f"cannot reach {who} at {url}: {_reason(exc)}") from None
    finally:
        deadline.cancel()
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise service.bad_output(f"{who} sent a reply that is not JSON: {snippet(text)}") from None
    if not isinstance(data, dict):
        raise service.bad_output(f"{who} sent JSON that is not an object: {snippet(text)}")
    return data


def _read_until(response: Any, deadline: _Deadline, timeout_s: float, service: Service,
                url: str) -> bytes:
    parts: list[bytes] = []
    while True:
        if deadline.remaining() <= 0:
            raise _timed_out(service, url, timeout_s)
        block = response.read1(_READ_BLOCK) if hasattr(response, "read1") else response.read(_READ_BLOCK)
        if not block:
            return b"".join(parts)
        parts.append(block)


def _timed_out(service: Service, url: str, timeout_s: float) -> RagloupeError:
    return service.unavailable(f"{service.who} at {url} did not answer within {timeout_s:g} s "
                               f"({service.timeout_hint})")


def _http_error(exc: urllib.error.HTTPError, service: Service, url: str) -> RagloupeError:
    who = service.who
    try:
        detail = exc.read().decode("utf-8", errors="replace")
    except Exception:  # the error body is a courtesy; its absence is not an error
        detail = ""
    try:
        detail = str(json.loads(detail).get("error", detail))
    except (json.JSONDecodeError, AttributeError):
        pass
    if exc.code in (401, 403):
        return service.unavailable(f"{who} at {url} refused the request (HTTP {exc.code}): "
                                   f"check {service.key_hint}. {snippet(detail)}".strip())
    return service.unavailable(f"{who} at {url} answered HTTP {exc.code}: {snippet(detail) or exc.reason}")


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is the server running?)"
    return str(getattr(reason, "strerror", None) or reason)


def snippet(text: str) -> str:
    """The text on one line, cut at _SNIPPET characters: what an error message quotes of a reply."""
    text = " ".join(str(text).split())
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "…"
