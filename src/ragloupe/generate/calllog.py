"""Every LLM call leaves a record: a client wrapper that logs each generate().

get_client() wraps whichever client it builds in LoggedClient, so answers,
claim checks, query rewriting and the API are all logged the same way, as
one JSON line per call in logs/llm_calls.jsonl (ragloupe.logs): time,
backend, model, prompt size in characters, duration, outcome ("ok" or the
error's class) and the error's one-line message. Prompts and replies are not
logged: they hold document text.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from ragloupe.generate.llm import LlmClient
from ragloupe.logs import log_llm_call


class LoggedClient(LlmClient):
    """Delegates to ``inner``; generate() is timed and logged, everything else passes through."""

    def __init__(self, inner: LlmClient):
        super().__init__(inner.settings)
        self.inner = inner
        self.backend = inner.backend
        self.model = inner.model

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes LoggedClient lacks: base_url, choose (embedded only), ...
        return getattr(self.inner, name)

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        started = time.perf_counter()
        outcome, message = "ok", ""
        try:
            return self.inner.generate(prompt, system, max_tokens=max_tokens, json_mode=json_mode,
                                       timeout_s=timeout_s)
        except Exception as exc:
            outcome, message = type(exc).__name__, str(exc)
            raise
        finally:
            log_llm_call({
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "backend": self.backend, "model": self.model,
                "prompt_chars": len(prompt) + len(system or ""), "json_mode": json_mode,
                "duration_s": round(time.perf_counter() - started, 4),
                "outcome": outcome, "error": message[:300],
            }, self.settings)

    def available(self) -> tuple[bool, str]:
        return self.inner.available()
