"""The answer prompt: rules, numbered passages, then the question.

The passages come before the question so that a server with a prefix cache
(Ollama, llama.cpp, vLLM) can reuse the processed documents when the same
context is asked a second question. Passages are numbered [1], [2], ... and
each is labelled with its (document, page) or (record id, title): the model
cites the number, which small models manage far better than free-form
references, and ragloupe maps each number back to its unit.

A model that answers without citing (the embedded base Gemma) is asked
afterwards, by constrained decoding, which passage supports its answer:
support_prompt() is the document it scores the passage numbers after.
"""

from __future__ import annotations

from ragloupe.models import Chunk

# The sentence the model is told to use when the context lacks the answer;
# answer.py recognises it (and close variants) to set Answer.not_in_context.
NOT_IN_CONTEXT = "The provided documents do not contain the answer."

SYSTEM = (
    "You answer questions about technical documents using ONLY the numbered passages given. "
    "Rules:\n"
    "1. Use only facts stated in the passages; never use outside knowledge.\n"
    "2. After every sentence, cite the passage(s) it comes from by number in square brackets, "
    "e.g. [1] or [2][3].\n"
    "3. Copy figures, units and names of standards exactly as the passage writes them.\n"
    f"4. If the passages do not contain the answer, reply exactly: \"{NOT_IN_CONTEXT}\"\n"
    "5. Be brief: answer in one to three sentences."
)


def passage_label(chunk: Chunk) -> str:
    """'Grampian-2020-2021, page 28' or 'guidance, record 4.6.1: Title'."""
    if chunk.record_id:
        title = f": {chunk.title}" if chunk.title else ""
        return f"{chunk.doc_id}, record {chunk.record_id}{title}"
    return f"{chunk.doc_id}, page {chunk.page}"


def format_passage(index: int, chunk: Chunk) -> str:
    """One passage as the model sees it: a numbered label line, then the text."""
    return f"[{index}] {passage_label(chunk)}\n{chunk.text.strip()}"


# A worked example shown before the real passages. Large models do not need
# it; small ones, and base (non-chat) models such as the embedded Gemma 3
# 270M, copy its shape: one sentence, figures as written, a bracketed number.
# It is the same for every question, so it sits in the cached prefix.
EXAMPLE = (
    "Example of the task:\n\n"
    "Passages:\n\n"
    "[1] Example report, page 3\n"
    "The museum opened in 1998. It had 12,000 visitors in 2020 and 15,500 in 2021.\n\n"
    "[2] Example report, page 4\n"
    "The cafe employs six staff.\n\n"
    "Question: How many visitors did the museum have in 2021?\n"
    "Answer: The museum had 15,500 visitors in 2021 [1].\n\n"
    "The real task:\n\n"
)


def build_prompt(question: str, chunks: list[Chunk]) -> str:
    """The user message: the worked example, every passage, and the question last."""
    context = "\n\n".join(format_passage(i, chunk) for i, chunk in enumerate(chunks, start=1))
    return (f"{EXAMPLE}Passages:\n\n{context}\n\n"
            f"Question: {question.strip()}\n"
            "Answer:")


# The answer followed by this is what the passage numbers are scored after
# (see answer.choose_citation); the "[" makes a passage number the only
# sensible next token.
SUPPORT_QUESTION = "\nThis answer is supported by passage ["


def support_prompt(prompt: str, answer_text: str) -> str:
    """The answer prompt completed with ``answer_text``, then the support question."""
    return f"{prompt} {answer_text.strip()}{SUPPORT_QUESTION}"


def passage_options(n_passages: int) -> list[str]:
    """The continuations scored for the support question: '1]', '2]', ... (the ']' ends '1' against '12')."""
    return [f"{number}]" for number in range(1, n_passages + 1)]
