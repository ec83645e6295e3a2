"""The reader: a language model that reads the question and each first candidate together.

The engines compare a question with a passage from apart (BM25 by shared
words, dense by two separately made vectors). A reader sees both in one
prompt and says how well the passage answers the question. The ``+read``
modes (``hybrid+read``) rescore the first ``reader_window`` fused candidates
with it and blend its score with the fused one (``reader_weight``: 1 replaces
the fused score, 0 leaves the order alone); the rest keep their order below.

Backends, whichever LLM is configured (Settings.llm_backend):
- ``ollama`` / ``openai``: one chat request per passage asking "Yes" or "No",
  scored by the log-probability of Yes minus that of No when the server
  returns log-probabilities; a server that does not is asked once per question
  for a listwise order of the numbered passages instead.
- ``embedded`` or ``none``: the embedded Gemma 3 270M (generate/embedded.py),
  one forward pass per passage, teacher-forced: ``yesno`` is log p(" Yes") -
  log p(" No") after the question, ``likelihood`` the mean log-probability of
  the question's tokens after the passage (query likelihood).

Scores are cached per process by (backend, passage, question), so replaying
several configurations over one fetch reads each passage once and
``search() == replay(fetch())`` holds (the model is deterministic; the cache
makes a second replay read the same numbers). What it costs per question is
in the ranking's timings under ``read`` (benchmarks/signals.py measures it).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from typing import Sequence

from ragloupe.config import Settings
from ragloupe.errors import LlmBadOutput, LlmUnavailable
from ragloupe.httpjson import Service, request_json
from ragloupe.models import Chunk
from ragloupe.retrieve.stage_configs import ReaderConfig

SIGNALS = ("yesno", "likelihood")
QUESTION_ASKED = "Does the passage answer the question? Answer:"
SYSTEM = "You judge whether a passage answers a question. Reply with one word: Yes or No."
LISTWISE = ("Passages:\n{passages}\n\nQuestion: {question}\n"
            "List the numbers of the passages that answer the question, best first, separated by commas.")
_CACHE_SIZE = 20000
_FLOOR = -30.0  # the log-probability given to Yes or No when the server's top list leaves it out


def passage_text(chunk: Chunk, chars: int) -> str:
    """The text the reader reads: the chunk's section heading, then its text cut at a word before ``chars``."""
    text = " ".join(chunk.text.split())
    if chars > 0 and len(text) > chars:
        text = text[:chars].rsplit(" ", 1)[0] + " ..."
    heading = " ".join((chunk.section or "").split())
    return f"{heading}\n{text}" if heading else text


def blend(prior: Sequence[float], read: Sequence[float], weight: float) -> list[float]:
    """(1 - weight) * prior + weight * read, each min-max normalised over the candidates read.

    Normalising both makes the blend mean the same for a learned probability,
    an RRF score, a log-probability difference or a listwise position.
    """
    def norm(values: Sequence[float]) -> list[float]:
        low, high = min(values), max(values)
        return [(v - low) / (high - low) if high > low else 1.0 for v in values]

    if not prior:
        return []
    return [(1.0 - weight) * p + weight * r for p, r in zip(norm(prior), norm(read))]


class Reader:
    """One configured backend's reader, with the per-process score cache."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.backend = settings.llm_backend if settings.llm_backend in ("ollama", "openai") else "embedded"
        model = {"ollama": settings.ollama_model, "openai": settings.openai_model}.get(self.backend, "gemma-3-270m")
        self.label = f"{self.backend}:{model}"

    def scores(self, question: str, chunks: Sequence[Chunk], config: ReaderConfig) -> list[float]:
        """The reader's score of each chunk for the question (higher: answers it better)."""
        passages = [passage_text(c, config.passage_chars) for c in chunks]
        keys = [self._key(question, p, config.signal) for p in passages]
        missing = [i for i, k in enumerate(keys) if _cache_get(k) is None]
        if missing:
            found = self._read(question, [passages[i] for i in missing], config.signal)
            for i, value in zip(missing, found):
                _cache_put(keys[i], value)
        return [float(_cache_get(k)) for k in keys]

    def _key(self, question: str, passage: str, signal: str) -> str:
        signal = signal if self.backend == "embedded" else "yesno"
        digest = hashlib.sha256(f"{passage}\x00{question}".encode()).hexdigest()
        return f"{self.label}|{signal}|{digest}"

    def _read(self, question: str, passages: list[str], signal: str) -> list[float]:
        if self.backend == "embedded":  # one pass gives both signals: both are kept
            found = []
            for passage in passages:
                both = embedded_scores(self.settings, question, passage)
                for name, value in both.items():
                    _cache_put(self._key(question, passage, name), value)
                found.append(both[signal])
            return found
        scored = [self._yes_no(question, p) for p in passages[:1]]
        if scored[0] is None:  # the server gives no log-probabilities: one listwise order instead
            return self._listwise(question, passages)
        return scored + [self._yes_no(question, p) or 0.0 for p in passages[1:]]

    # -- HTTP servers ----------------------------------------------------------

    def _yes_no(self, question: str, passage: str) -> float | None:
        """log p(Yes) - log p(No) of the server's one-token reply, or None when it sends no log-probabilities."""
        prompt = f"Passage:\n{passage}\n\nQuestion: {question}\n{QUESTION_ASKED}"
        reply = self._chat(prompt, SYSTEM, max_tokens=1, logprobs=True)
        top = _top_logprobs(self.backend, reply)
        if top is None:
            return None
        found = {"yes": _FLOOR, "no": _FLOOR}
        for token, logprob in top:
            word = token.strip().lower()
            if word in found:
                found[word] = max(found[word], logprob)
        return found["yes"] - found["no"]

    def _listwise(self, question: str, passages: list[str]) -> list[float]:
        """Scores from one listwise reply: n for the first passage named, n-1 for the next, 0 if unnamed."""
        numbered = "\n\n".join(f"[{n}] {p}" for n, p in enumerate(passages, start=1))
        reply = self._chat(LISTWISE.format(passages=numbered, question=question), None, max_tokens=64)
        order = [int(n) for n in re.findall(r"\d+", _content(self.backend, reply))]
        scores = [0.0] * len(passages)
        place = len(passages)
        for n in dict.fromkeys(order):
            if 1 <= n <= len(passages):
                scores[n - 1] = float(place)
                place -= 1
        return scores

    def _chat(self, prompt: str, system: str | None, *, max_tokens: int, logprobs: bool = False) -> dict:
        s = self.settings
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        if self.backend == "ollama":
            url = f"{s.ollama_base_url.rstrip('/')}/api/chat"
            payload = {"model": s.ollama_model, "messages": messages, "stream": False, "think": False,
                       "options": {"temperature": 0, "seed": s.llm_seed, "num_predict": max_tokens}}
            if logprobs:
                payload.update(logprobs=True, top_logprobs=5)
            headers, who = None, "Ollama"
        else:
            base = s.openai_base_url.rstrip("/")
            url = f"{base if base.endswith('/v1') else base + '/v1'}/chat/completions"
            payload = {"model": s.openai_model, "messages": messages, "temperature": 0, "seed": s.llm_seed,
                       "max_tokens": max_tokens, "stream": False}
            if logprobs:
                payload.update(logprobs=True, top_logprobs=5)
            headers = {"Authorization": f"Bearer {s.openai_api_key}"} if s.openai_api_key else None
            who = "the OpenAI-compatible server"
        data = request_json("POST", url, payload, float(s.llm_timeout_s), Service(who, LlmUnavailable, LlmBadOutput),
                            headers=headers)
        if data.get("error"):
            raise LlmUnavailable(f"{who} refused the reader's request: {str(data['error'])[:200]}")
        return data


def _content(backend: str, reply: dict) -> str:
    try:
        if backend == "ollama":
            return str(reply["message"]["content"])
        return str(reply["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError):
        raise LlmBadOutput("the LLM server sent the reader a reply without message text") from None


def _top_logprobs(backend: str, reply: dict) -> list[tuple[str, float]] | None:
    """(token, log-probability) of the reply's first token's alternatives (itself included), or None."""
    try:
        if backend == "ollama":
            first = (reply.get("logprobs") or [None])[0]
        else:
            first = ((reply["choices"][0].get("logprobs") or {}).get("content") or [None])[0]
    except (KeyError, IndexError, TypeError, AttributeError):
        return None
    if not isinstance(first, dict) or "logprob" not in first:
        return None
    pairs = [(str(first.get("token", "")), float(first["logprob"]))]
    pairs += [(str(t.get("token", "")), float(t["logprob"])) for t in first.get("top_logprobs") or []
              if isinstance(t, dict) and "logprob" in t]
    return pairs


# -- the embedded model ----------------------------------------------------------


def embedded_scores(settings: Settings, question: str, passage: str) -> dict[str, float]:
    """Both signals of the embedded Gemma for one passage, from one teacher-forced forward pass.

    The document is "Passage: ...\\n\\nQuestion: <question>\\nDoes the passage answer the
    question? Answer:". ``likelihood``: the mean log-probability of the question's tokens;
    ``yesno``: log p(" Yes") - log p(" No") at the end.
    """
    import torch

    from ragloupe.generate import embedded

    model, tokenizer = embedded.load(settings)

    def ids(text: str, special: bool = False) -> list[int]:
        return tokenizer(text, add_special_tokens=special)["input_ids"]

    head, asked, tail = ids(f"Passage:\n{passage}\n\nQuestion:", True), ids(f" {question}"), ids(f"\n{QUESTION_ASKED}")
    tokens = torch.tensor([head + asked + tail])
    kept = len(asked) + len(tail) + 1  # the positions that predict the question's tokens, and the last
    with torch.inference_mode():
        logits = model(tokens, logits_to_keep=kept).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    predicted = logprobs[:len(asked)]  # position len(head)-1+i predicts the question's i-th token
    likelihood = float(predicted[torch.arange(len(asked)), torch.tensor(asked)].mean())
    yes, no = ids(" Yes")[0], ids(" No")[0]
    last = logprobs[-1]
    yesno = float(last[yes] - last[no])
    if not (math.isfinite(likelihood) and math.isfinite(yesno)):
        raise LlmBadOutput("the embedded model gave the reader a non-finite score")
    return {"yesno": yesno, "likelihood": likelihood}


_cache: OrderedDict[str, float] = OrderedDict()
_cache_lock = threading.Lock()


def _cache_get(key: str) -> float | None:
    with _cache_lock:
        return _cache.get(key)


def _cache_put(key: str, value: float) -> None:
    with _cache_lock:
        _cache[key] = value
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
