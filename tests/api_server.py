"""A real uvicorn server on a free loopback port, running ragloupe's app in a thread of the test
process (so it shares the session's loaded model), and an httpx client pointed at it."""

from __future__ import annotations

import threading
import time

import httpx
import uvicorn

from local_servers import free_port
from ragloupe.api.app import create_app
from ragloupe.config import Settings


class ApiServer:
    """``with ApiServer(settings) as api:`` then ``api.client.get("/health")``."""

    def __init__(self, settings: Settings, api_key: str = ""):
        self.settings = settings
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        app = create_app(settings)
        self.app_resources = app.state.resources  # the server's Resources, for tests that drive warm_up
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        headers = {"X-API-Key": api_key} if api_key else {}
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=120)
        self.anonymous = httpx.Client(base_url=self.url, timeout=30)

    def __enter__(self) -> "ApiServer":
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the API server on port {self.port} did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.client.close()
        self.anonymous.close()
        self._server.should_exit = True
        self._thread.join(timeout=15)
