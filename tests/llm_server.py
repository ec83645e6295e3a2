"""A real HTTP server on 127.0.0.1 that speaks Ollama's and OpenAI's chat protocols.

The only fake the house rules allow: a remote LLM server. Tests script its
replies (content, status, delay, trickling, malformed bodies) and read back
the requests it received.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Reply:
    body: bytes
    status: int = 200
    delay_s: float = 0.0  # sleep before sending anything
    trickle_s: float = 0.0  # sleep between single bytes of the body
    head_trickle_s: float = 0.0  # sleep between single bytes of the status line and headers


def ollama_chat(content: str, model: str = "fake-model") -> Reply:
    return Reply(json.dumps({"model": model, "message": {"role": "assistant", "content": content},
                             "done": True}).encode())


def openai_chat(content: str, model: str = "fake-model") -> Reply:
    return Reply(json.dumps({"id": "x", "object": "chat.completion", "model": model,
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": content}}]}).encode())


def chat_reply(path: str, content: str) -> Reply:
    """The reply in whichever protocol the request path belongs to."""
    return openai_chat(content) if path.endswith("/chat/completions") else ollama_chat(content)


def prompt_of(request: dict) -> str:
    """All message texts of a chat request, joined (system first)."""
    return "\n".join(m.get("content", "") for m in request.get("messages", []))


Handler = Callable[[str, dict], Reply]


class FakeLlmServer:
    """Start with ``with FakeLlmServer(handler) as server:``; ``server.url`` is its base URL."""

    def __init__(self, handler: Handler | None = None, models: tuple[str, ...] = ("fake-model",)):
        self.handler = handler or (lambda path, body: chat_reply(path, "ok"))
        self.models = models
        self.requests: list[tuple[str, dict]] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                if self.path.endswith("/api/tags"):
                    body = {"models": [{"name": f"{m}:latest"} for m in outer.models]}
                else:
                    body = {"object": "list", "data": [{"id": m} for m in outer.models]}
                self._send(Reply(json.dumps(body).encode()))

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                request = json.loads(raw or b"{}")
                outer.requests.append((self.path, request))
                self._send(outer.handler(self.path, request))

            def _send(self, reply: Reply):
                try:
                    time.sleep(reply.delay_s)
                    if reply.head_trickle_s:
                        self._trickle_head(reply)
                        return
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    if reply.trickle_s:
                        for i in range(len(reply.body)):
                            self.wfile.write(reply.body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, which is what timeout tests want

            def _trickle_head(self, reply: Reply):
                """Status line and headers a byte at a time, then the body at once."""
                head = (f"HTTP/1.1 {reply.status} OK\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(reply.body)}\r\n\r\n").encode()
                for i in range(len(head)):
                    self.wfile.write(head[i:i + 1])
                    self.wfile.flush()
                    time.sleep(reply.head_trickle_s)
                self.wfile.write(reply.body)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeLlmServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
