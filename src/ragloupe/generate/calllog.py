"""Every LLM call leaves a record: a client wrapper that logs each generate() and choose().

get_client() wraps whichever client it builds in LoggedClient, so answers,
claim checks, query rewriting, the embedded model's constrained citation
pick and the API are all logged the same way, as one JSON line per call in
logs/llm_calls.jsonl (ragloupe.logs): time, backend, model, which call
("generate" or "choose"), prompt size in characters, duration, outcome ("ok"
or the error's class) and the error's one-line message. Prompts and replies
are not logged: they hold document text.
"""

from __future__ import annotations

import functools
import time
from datetime import datetime, timezone
from typing import Any, Callable

from ragloupe.generate.llm import LlmClient
from ragloupe.logs import log_llm_call


class LoggedClient(LlmClient):
    """Delegates to ``inner``; generate() and choose() are timed and logged, the rest passes through."""

    def __init__(self, inner: LlmClient):
        super().__init__(inner.settings)
        self.inner = inner
        self.backend = inner.backend
        self.model = inner.model

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes LoggedClient lacks: base_url, choose (embedded only), ...
        # choose() stays absent when the inner client has none: answer.py asks for it by getattr.
        attribute = getattr(self.inner, name)
        if name == "choose" and callable(attribute):
            return self._logged_choose(attribute)
        return attribute

    def _logged_choose(self, choose: Callable) -> Callable:
        @functools.wraps(choose)
        def logged(prompt: str, options: list[str], system: str | None = None):
            return self._logged("choose", len(prompt) + len(system or ""),
                                lambda: choose(prompt, options, system=system),
                                {"n_options": len(options)})
        return logged

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        return self._logged("generate", len(prompt) + len(system or ""),
                            lambda: self.inner.generate(prompt, system, max_tokens=max_tokens,
                                                        json_mode=json_mode, timeout_s=timeout_s),
                            {"json_mode": json_mode})

    def _logged(self, call: str, prompt_chars: int, run: Callable[[], Any], extra: dict) -> Any:
        started = time.perf_counter()
        outcome, message = "ok", ""
        try:
            return run()
        except Exception as exc:
            outcome, message = type(exc).__name__, str(exc)
            raise
        finally:
            log_llm_call({
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "backend": self.backend, "model": self.model, "call": call,
                "prompt_chars": prompt_chars, **extra,
                "duration_s": round(time.perf_counter() - started, 4),
                "outcome": outcome, "error": message[:300],
            }, self.settings)

    def available(self) -> tuple[bool, str]:
        return self.inner.available()
