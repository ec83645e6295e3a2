"""The embedded Gemma 3 270M really generates on CPU.

The first run converts the GGUF (~30 s) into the models directory from the
settings (data/models/, git-ignored; RAGLOUPE_MODELS_DIR moves it), so a
machine, and CI, pays the conversion once; later runs load the cached
weights. Deselect locally with ``-m 'not embedded_llm'``.

The base model never writes "[n]" itself; its citation is chosen by
constrained decoding (answer.py), which these tests run on the real model too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloupe.config import Settings
from ragloupe.generate import embedded
from ragloupe.generate.answer import CONSTRAINED, answer
from ragloupe.generate.groundedness import screen, screen_answer
from ragloupe.generate.llm import get_client
from ragloupe.logs import read_llm_calls
from ragloupe.models import Chunk, Hit, Ranking

pytestmark = pytest.mark.embedded_llm

GRAMPIAN = Path(__file__).resolve().parents[1] / "data" / "benchmarks" / "grampian"

PASSAGE = ("Grampian Health Board achieved all three financial targets. The Core Revenue Resource "
           "Limit was £1,278,771 thousand and the actual outturn was £1,278,002 thousand.")


def test_embedded_backend_answers_from_passages_on_cpu(settings):
    settings = settings.replace(llm_backend="embedded", llm_max_tokens=32, llm_timeout_s=300)
    chunk = Chunk(chunk_id="c28", doc_id="Grampian-2020-2021", page=28, position=0, text=PASSAGE,
                  n_tokens=40, quality="clean")
    ranking = Ranking(query="q", mode="hybrid", hits=(Hit(chunk=chunk, rank=1, score=1.0),))
    result = answer("What was the Core Revenue Resource Limit?", ranking, settings,
                    count_tokens=lambda text: len(text.split()))
    assert result.text.strip()
    assert result.model.startswith("embedded:")
    assert [p.unit for p in result.passages] == ["Grampian-2020-2021#p28"]
    assert all(c.passage in (1, None) for c in result.citations)
    # One passage: nothing to compare, so no citation is picked and the model is not asked to.
    assert result.citation_method != CONSTRAINED and "choose" not in result.timings
    assert screen_answer(result).verdict in {"NOT_CONTRADICTED", "UNSUPPORTED", "MISATTRIBUTED",
                                             "DERIVED", "UNVERIFIABLE"}
    # The conversion is cached with its completion marker, so the next start skips it.
    ok, reason = get_client(settings).available()
    assert ok and "converted" in reason and "not yet" not in reason


def gold_question(query_id: str) -> tuple[str, list[Chunk]]:
    """A benchmark question and its gold pages (first 1,500 characters each), as in answer_embedded.py."""
    for path in sorted((GRAMPIAN / "eval").glob("*.eval.json")):
        goldset = json.loads(path.read_text(encoding="utf-8"))
        query = next((q for q in goldset["queries"] if q["query_id"] == query_id), None)
        if query is None:
            continue
        doc_id = goldset["_meta"]["doc_id"]
        with open(GRAMPIAN / "pages" / f"{doc_id}.jsonl", encoding="utf-8") as lines:
            pages = {r["page"]: r["text"] for r in map(json.loads, lines)}
        return query["question"], [Chunk(f"{doc_id}-{p}", doc_id, p, 0, pages[p][:1500], 0, "clean")
                                   for p in query["expected_pages"]]
    raise LookupError(query_id)


def report_page(doc_id: str, page: int) -> Chunk:
    with open(GRAMPIAN / "pages" / f"{doc_id}.jsonl", encoding="utf-8") as lines:
        text = next(r["text"] for r in map(json.loads, lines) if r["page"] == page)
    return Chunk(f"{doc_id}-{page}", doc_id, page, 0, text[:1500], 0, "clean")


def test_embedded_pick_between_two_passages_is_marked_and_is_no_evidence(settings):
    settings = settings.replace(llm_backend="embedded", llm_max_tokens=24, llm_timeout_s=300)
    question, chunks = gold_question("Q_2021_FIN_01")
    assert [c.page for c in chunks] == [28]
    other = report_page("Grampian-2020-2021", 31)  # another finance page of the same report
    passages = [chunks[0], other]
    ranking = Ranking(question, "gold", tuple(Hit(c, i, 1.0) for i, c in enumerate(passages, start=1)))
    result = answer(question, ranking, settings, count_tokens=lambda text: len(text) // 4)
    # The model wrote no citation, so both passages were scored and any citation is a pick.
    assert len(result.support_scores) == 2 and "choose" in result.timings
    assert all(c.picked for c in result.citations)
    assert (result.citation_method == CONSTRAINED) == bool(result.citations)
    # Whatever was picked, the screen judges the answer as if it cited nothing.
    uncited = screen(result.text, [], [p.chunk.text for p in result.passages])
    assert screen_answer(result).as_dict() == uncited.as_dict()


def test_choose_scores_every_option_and_returns_the_most_likely(settings):
    settings = settings.replace(llm_backend="embedded")
    index, scores = get_client(settings).choose("The capital of France is", [" Paris", " banana"])
    assert index == 0 and len(scores) == 2 and scores[0] > scores[1]
    # The pick is an LLM call like any other: it leaves its line in the call log.
    logged = read_llm_calls(settings)[0]
    assert (logged["call"], logged["n_options"], logged["outcome"]) == ("choose", 2, "ok")
    assert logged["backend"] == "embedded" and logged["prompt_chars"] == len("The capital of France is")


def test_half_written_conversion_is_not_trusted(tmp_path):
    settings = Settings.from_env(models_dir=tmp_path)
    target = embedded.converted_dir(settings)
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"partial")
    ok, reason = embedded.available(settings)
    assert ok and "not yet converted" in reason


def test_staging_left_by_a_dead_conversion_is_removed(tmp_path):
    settings = Settings.from_env(models_dir=tmp_path)
    target = embedded.converted_dir(settings)
    abandoned = target.with_name(f"{target.name}.partial-999999999")  # no such process
    abandoned.mkdir(parents=True)
    (abandoned / "model.safetensors").write_bytes(b"half")
    embedded._remove_abandoned_staging(target)
    assert not abandoned.exists()
