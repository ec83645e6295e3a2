"""The guard in front of every endpoint: API key, body size, metrics, no tracebacks out.

One plain ASGI middleware, so each rule is applied before any endpoint code
runs and in one place:

- when ``api_key`` is set, every path but the health checks needs it in
  the X-API-Key header, compared in constant time (hmac.compare_digest);
- a body over the limit is refused with 413, from its Content-Length or,
  when it is streamed without one, as soon as the bytes read pass it;
- every request is counted and timed per route template for /metrics;
- an exception no handler knew is logged with its traceback to
  logs/ragloupe.log and answered with a one-line 500.

``check_bind`` is what `ragloupe serve` asks before it listens: a
non-loopback address without a key is refused.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import time
from typing import Any

from fastapi import HTTPException

from ragloupe.config import Settings
from ragloupe.errors import UnsafeBind
from ragloupe.logs import log_exception

OPEN_PATHS = frozenset({"/health", "/api/v1/health"})
UPLOAD_PATH = "/api/v1/docs/upload"
KEY_HEADER = b"x-api-key"


class BodyTooLarge(HTTPException):
    """Raised from inside the body stream; an HTTPException so FastAPI passes it on as it is."""

    def __init__(self, limit: int):
        super().__init__(413, f"request body over the {_size(limit)} limit")


def is_loopback(host: str) -> bool:
    if host in {"localhost", "ip6-localhost"}:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, settings: Settings) -> None:
    """Refuse to listen on a non-loopback address unless an API key protects the server."""
    if not is_loopback(host) and not settings.api_key:
        raise UnsafeBind(f"refusing to listen on {host} without an API key: anyone who can reach it "
                         "could search and change the index. Set RAGLOUPE_API_KEY, or bind 127.0.0.1")


def body_limit(path: str, settings: Settings) -> int:
    """Bytes a request body may have: an upload carries its file base64-encoded (4/3 larger)."""
    if path == UPLOAD_PATH:
        return settings.max_upload_mb * 1024 * 1024 * 4 // 3 + 64 * 1024
    return settings.api_max_body_kb * 1024


class Guard:
    def __init__(self, app: Any, resources: Any):
        self.app = app
        self.resources = resources

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        settings: Settings = self.resources.settings
        started = time.perf_counter()
        state = {"status": 500, "started": False}

        async def tracked_send(message: dict) -> None:
            if message["type"] == "http.response.start":
                state["status"], state["started"] = message["status"], True
            await send(message)

        try:
            refusal = self._refusal(scope, settings)
            if refusal is not None:
                await _respond(tracked_send, *refusal)
                return
            limit = body_limit(scope["path"], settings)
            read = 0

            async def limited_receive() -> dict:
                nonlocal read
                message = await receive()
                if message["type"] == "http.request":
                    read += len(message.get("body", b""))
                    if read > limit:
                        raise BodyTooLarge(limit)
                return message

            await self.app(scope, limited_receive, tracked_send)
        except Exception as exc:  # a bug: the traceback goes to the log, one line to the client
            where = log_exception(exc, settings)
            self.resources.metrics.error(_route(scope), type(exc).__name__)
            if not state["started"]:
                await _respond(tracked_send, 500, f"internal error ({type(exc).__name__}); "
                                                  f"details in {where.name} on the server")
        finally:
            self.resources.metrics.request(scope["method"], _route(scope), state["status"],
                                           time.perf_counter() - started)

    def _refusal(self, scope: dict, settings: Settings) -> tuple[int, str] | None:
        headers = dict(scope.get("headers") or [])
        if settings.api_key and scope["path"] not in OPEN_PATHS:
            given = headers.get(KEY_HEADER)
            if given is None:
                return 401, "missing X-API-Key header: this server needs its API key"
            if not hmac.compare_digest(given, settings.api_key.encode()):
                return 401, "wrong API key in X-API-Key"
        declared = headers.get(b"content-length")
        limit = body_limit(scope["path"], settings)
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                return 400, "Content-Length is not a number"
            if size > limit:
                return 413, f"request body of {_size(size)} is over the {_size(limit)} limit"
        return None


def _route(scope: dict) -> str:
    """The route template that matched ("/api/v1/docs/{doc_id}/stats"), so labels stay bounded."""
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


async def _respond(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MB" if n >= 2**20 else f"{n / 1024:.0f} KB"
