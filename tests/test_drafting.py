"""Drafting gold questions with an LLM, against a real local server speaking Ollama's and OpenAI's protocols."""

import json
import re

import pytest

from conftest import DEMO_DOC_IDS
from llm_server import FakeLlmServer, chat_reply, prompt_of
from ragloupe.cli import main
from ragloupe.errors import GoldSetInvalid
from ragloupe.evaluate.drafting import (MAX_RIVALS, PROMPT_SHA256, Draft, check_draft, draft_for,
                                        sample_units)
from ragloupe.evaluate.goldset import load_goldset
from ragloupe.evaluate.runs import index_snapshot
from ragloupe.evaluate.usersets import accept_drafts, goldset_path, read_drafts
from ragloupe.models import Chunk

OFF_PAGE = "Grampian-2020-2021"  # the scripted model answers with text that is not on the page
REPEATS = "Grampian-2022-2023"  # the scripted model asks the same question twice


def _scripted_model():
    """Replies built from the page in the prompt: a specific question, its answer copied from the page."""
    asked: dict[str, str] = {}

    def reply(path: str, request: dict):
        prompt = prompt_of(request)
        doc = re.search(r"Document: (\S+),", prompt).group(1)
        words = prompt.split("Page text:\n", 1)[1].split("\n\nWrite ONE", 1)[0].split()
        question = asked.setdefault(doc, "Which page says " + " ".join(words[20:32]) + "?")
        answer = "a figure nobody printed 987,654" if doc == OFF_PAGE else " ".join(words[:4])
        if doc != REPEATS:
            asked.pop(doc)
        return chat_reply(path, json.dumps({"question": question, "answer": answer}))

    return reply


@pytest.fixture(params=["ollama", "openai"])
def llm_settings(request, demo_env):
    with FakeLlmServer(_scripted_model()) as server:
        yield server, demo_env.replace(llm_backend=request.param, ollama_base_url=server.url,
                                       openai_base_url=server.url, ollama_model="fake-model",
                                       openai_model="fake-model", llm_timeout_s=5.0)


def test_a_draft_whose_answer_is_not_on_its_page_is_never_offered(llm_settings, workspace_of):
    server, settings = llm_settings
    two_per_document = 2 * len(DEMO_DOC_IDS)
    body = draft_for(settings, "mine", two_per_document, workspace_of(settings))
    drafts = body["drafts"]
    # Two per document, or fewer where a document is shorter (the demo's one-page tables PDFs).
    assert len(drafts) > len(DEMO_DOC_IDS) and {d["doc_id"] for d in drafts} >= {OFF_PAGE, REPEATS, "guidance"}
    off_page = [d for d in drafts if d["doc_id"] == OFF_PAGE]
    assert [d["status"] for d in off_page] == ["rejected", "rejected"]
    assert all("is not on" in d["reason"] and d["checks"]["answer_on_page"] is False for d in off_page)
    repeated = [d for d in drafts if d["doc_id"] == REPEATS]
    assert repeated[1]["status"] == "rejected" and repeated[1]["reason"].startswith("a duplicate of")
    offered = [d for d in drafts if d["status"] == "offered"]
    assert offered and all(d["checks"]["answer_on_page"] and d["checks"]["bm25_rivals"] < MAX_RIVALS
                           for d in offered)
    assert read_drafts(settings, "mine")["drafts"] == drafts
    with pytest.raises(GoldSetInvalid, match="not an offered draft"):
        _accept(settings, [off_page[0]["draft_id"]])


def test_drafting_is_deterministic_and_records_model_prompt_and_seed(llm_settings, workspace_of):
    server, settings = llm_settings
    first = draft_for(settings, "mine", 8, workspace_of(settings))
    second = draft_for(settings, "mine", 8, workspace_of(settings))
    assert first["drafts"] == second["drafts"]
    meta = first["_meta"]
    assert (meta["model"], meta["prompt_sha256"], meta["seed"], meta["temperature"]) == (
        f"{settings.llm_backend}:fake-model", PROMPT_SHA256, settings.llm_seed, 0)
    for path, request in server.requests:
        options = request.get("options", request)  # Ollama nests them, OpenAI does not
        assert (options["temperature"], options["seed"]) == (0, settings.llm_seed)


def test_accepted_drafts_become_gold_with_their_model_and_prompt_hash(llm_settings, workspace_of):
    server, settings = llm_settings
    offered = [d for d in draft_for(settings, "mine", 8, workspace_of(settings))["drafts"] if d["status"] == "offered"]
    entries, _ = _accept(settings, [d["draft_id"] for d in offered[:2]],
                         edits={offered[0]["draft_id"]: {"question": "An edited question?"}})
    goldset = load_goldset(goldset_path(settings, "mine"))
    assert [q.question for q in goldset.queries] == ["An edited question?", offered[1]["question"]]
    stored = json.loads(goldset_path(settings, "mine").read_text())
    assert stored["_meta"]["drafted_with"] == [{"model": f"{settings.llm_backend}:fake-model",
                                                "prompt_sha256": PROMPT_SHA256, "seed": settings.llm_seed}]
    assert [(q["added_via"], q["edited"]) for q in stored["queries"]] == [("draft", True), ("draft", False)]
    assert {d["status"] for d in read_drafts(settings, "mine")["drafts"] if d["draft_id"] in
            {e["draft_id"] for e in entries}} == {"accepted"}


def test_without_an_llm_drafting_says_what_to_configure(demo_env, monkeypatch, capsys):
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    assert main(["goldset", "draft", "mine", "--n", "3"]) == 2
    err = capsys.readouterr().err
    assert "drafting questions needs an LLM" in err and "RAGLOUPE_LLM_BACKEND" in err


def test_sample_is_stratified_over_documents_and_over_each_documents_length():
    chunks = [Chunk(f"{doc}-{page}", doc, page, 0, f"page {page} " + "words " * 60, 60, "clean")
              for doc, pages in (("long", 40), ("short", 8)) for page in range(1, pages + 1)]
    units = sample_units(chunks, 6, seed=7)
    long_pages = sorted(u.page for u in units if u.doc_id == "long")
    assert len(long_pages) == 3 and len([u for u in units if u.doc_id == "short"]) == 3
    assert [(p - 1) * 3 // 40 for p in long_pages] == [0, 1, 2]  # one from each third of the report
    assert sample_units(chunks, 6, seed=7) == units


def test_a_question_bm25_cannot_tell_apart_from_twenty_pages_is_too_vague():
    draft = Draft("D_001", "doc#p3", "doc", 3, "", "What is the total?", "£12 million", "offered")
    ties = [(f"doc#p{p}", 4.2) for p in range(1, 31)]
    reason = check_draft(draft, "The total was £12 million.", [], lambda question: ties)
    assert reason.startswith(f"too vague: BM25 over the whole corpus finds {len(ties) - 1} units")
    specific = [("doc#p3", 9.0)] + ties[3:]
    assert check_draft(draft, "The total was £12 million.", [], lambda question: specific) == ""


def _accept(settings, ids, edits=None):
    from ragloupe.index.store import open_store

    snapshot = index_snapshot(settings, ["Grampian-2020-2021", "Grampian-2021-2022", REPEATS, "guidance"],
                              open_store(settings))
    return accept_drafts(settings, "mine", ids, snapshot.documents, snapshot.unit_texts, edits=edits)
