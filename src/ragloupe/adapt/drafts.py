"""Questions drafted by the embedded LLM for passages of the corpus: pseudo-queries in a reader's
words, where the other pair kinds cut their queries out of the document's own text.

The shipped Gemma 3 270M is a base model: it does not follow an instruction, but it continues a
document. So it is shown two made-up passages, each followed by the question a reader would ask
of it, then the passage at hand and "Question:", and its continuation up to the line's end is the
draft. Drafts that are no question, that repeat an example's question, or that are the same as
another draft are dropped. Passages go through the model eight at a time (left-padded):
benchmarks/drafts.py measures the time a page and the share of usable drafts.

No gold set is read: the model sees document text only.
"""

from __future__ import annotations

import json
from typing import Callable, Iterator, Sequence

from ragloupe.config import Settings
from ragloupe.generate import embedded
from ragloupe.models import Chunk

EXAMPLES = (
    ("The Board approved a capital plan of £45 million for 2021/22, most of it for the replacement "
     "of ageing diagnostic equipment and the new maternity unit.",
     "How much did the health board plan to spend on buildings and equipment that year?"),
    ("Checkpoints are written every five minutes by default; the interval can be changed with "
     "checkpoint_timeout, and a longer interval makes crash recovery slower.",
     "How often does the server flush its changes to disk, and what is the trade-off?"),
)
PASSAGE_WORDS = 90  # of a chunk shown to the model (the prompt's cost grows with it)
MAX_NEW_TOKENS = 28
BATCH = 8
MIN_WORDS = 4


def prompt(passage: str) -> str:
    """The few-shot document the model continues with a question about ``passage``."""
    shown = "".join(f"Passage: {text}\nQuestion: {question}\n\n" for text, question in EXAMPLES)
    words = " ".join(passage.split()[:PASSAGE_WORDS])
    return f"{shown}Passage: {words}\nQuestion:"


def clean(continuation: str) -> str:
    """The draft question of a continuation, or "" when it is not a usable question."""
    line = continuation.strip().split("\n")[0].strip()
    if not line.endswith("?") or len(line.split()) < MIN_WORDS:
        return ""
    if any(line.casefold() == question.casefold() for _, question in EXAMPLES):
        return ""
    return line


def one_per_unit(chunks: Sequence[Chunk]) -> list[Chunk]:
    """The longest text chunk of each page (or record): one draft per unit spends the model's
    time across the whole corpus rather than on the long pages."""
    best: dict[str, Chunk] = {}
    for chunk in chunks:
        if chunk.kind != "text":
            continue
        held = best.get(chunk.unit)
        if held is None or len(chunk.text) > len(held.text):
            best[chunk.unit] = chunk
    return list(best.values())


def draft(settings: Settings, chunks: Sequence[Chunk],
          progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[Chunk, str]]:
    """(chunk, question) for each chunk the embedded model drafts a usable question for."""
    import torch

    model, tokenizer = embedded.load(settings)  # shared with answers: left padding asked per call
    seen: set[str] = set()
    for start in range(0, len(chunks), BATCH):
        batch = chunks[start:start + BATCH]
        encoded = tokenizer([prompt(c.text) for c in batch], return_tensors="pt", padding=True,
                            padding_side="left")
        with torch.inference_mode():
            output = model.generate(**encoded, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        width = encoded["input_ids"].shape[1]
        for chunk, row in zip(batch, output):
            question = clean(tokenizer.decode(row[width:], skip_special_tokens=True))
            if question and question.casefold() not in seen:
                seen.add(question.casefold())
                yield chunk, question
        if progress:
            progress(min(start + BATCH, len(chunks)), len(chunks))


CACHE_NAME = "adapt-drafts.jsonl"  # under the index dir: drafting costs minutes, a re-run reads it


def for_corpus(settings: Settings, chunks: Sequence[Chunk], fingerprint: str,
               progress: Callable[[int, int], None] | None = None) -> list[tuple[Chunk, str]]:
    """One drafted question per page (or record) of the indexed corpus: read back from the cache
    when it was drafted for this content (``fingerprint``), otherwise drafted and cached."""
    path = settings.path("index_dir") / CACHE_NAME
    by_id = {c.chunk_id: c for c in chunks}
    cached = _read_cache(path, fingerprint)
    if cached is not None:
        return [(by_id[cid], q) for cid, q in cached if cid in by_id]
    made = list(draft(settings, one_per_unit(chunks), progress))
    staging = path.with_suffix(".partial")
    lines = [json.dumps({"fingerprint": fingerprint, "model": embedded.MODEL_LABEL})]
    lines += [json.dumps({"chunk_id": c.chunk_id, "question": q}) for c, q in made]
    staging.write_text("\n".join(lines) + "\n", encoding="utf-8")
    staging.replace(path)
    return made


def _read_cache(path, fingerprint: str) -> list[tuple[str, str]] | None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        if not lines or json.loads(lines[0]).get("fingerprint") != fingerprint:
            return None
        rows = [json.loads(line) for line in lines[1:] if line.strip()]
        return [(str(r["chunk_id"]), str(r["question"])) for r in rows]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # none, another corpus's or unreadable: drafted again
