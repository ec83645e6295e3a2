"""Questions drafted by the embedded LLM as a pair kind of `ragloupe adapt`: what is kept of a
draft, the pairs they make, and the cache that spares a re-run the minutes of drafting."""

from __future__ import annotations

import json

from ragloupe.adapt import drafts, pairs as P
from ragloupe.config import Settings
from ragloupe.models import Chunk


def chunk(page: int, position: int, text: str, kind: str = "text") -> Chunk:
    return Chunk(chunk_id=f"d-p{page}-{position}", doc_id="d", page=page, position=position, text=text,
                 n_tokens=len(text.split()), quality="clean", kind=kind)


def test_a_draft_is_kept_only_when_it_is_a_new_question():
    assert drafts.clean(" How many beds did the new ward add?\nPassage: more text") == \
        "How many beds did the new ward add?"
    assert drafts.clean(" The ward added forty beds.") == ""  # a continuation of the text, no question
    assert drafts.clean(" Why?") == ""  # too short to ask anything
    assert drafts.clean(" " + drafts.EXAMPLES[0][1].upper()) == ""  # the prompt's example repeated


def test_the_prompt_shows_the_examples_then_the_passage_cut_to_its_first_words():
    text = drafts.prompt(" ".join(f"w{i}" for i in range(500)))
    assert text.count("Question:") == len(drafts.EXAMPLES) + 1 and text.endswith("\nQuestion:")
    shown = text.rsplit("Passage: ", 1)[1].removesuffix("\nQuestion:").split()
    assert shown == [f"w{i}" for i in range(drafts.PASSAGE_WORDS)]


def test_one_passage_per_page_the_longest_text_chunk():
    chunks = [chunk(1, 0, "short text"), chunk(1, 1, "a much longer text on the first page"),
              chunk(2, 0, "| a | b |\n|---|---|\n| long table row with many words |", kind="table"),
              chunk(2, 1, "the second page")]
    assert [c.chunk_id for c in drafts.one_per_unit(chunks)] == ["d-p1-1", "d-p2-1"]


def test_drafted_questions_pair_with_their_whole_passage_only_when_the_kind_is_asked_for():
    passage = chunk(3, 0, "Forty beds were added when the new ward opened in the spring.")
    drafted = [(passage, "How many beds did the new ward add?")]
    rules = P.PairRules(kinds=("drafted",), hard_negatives=False)
    [pair] = P.make_pairs([passage], None, rules, drafted)
    assert (pair.kind, pair.query, pair.positive, pair.unit) == \
        ("drafted", "How many beds did the new ward add?", passage.text, "d#p3")
    assert P.make_pairs([passage], None, P.PairRules(kinds=("sentence",), hard_negatives=False), drafted) == []


def test_the_drafts_of_this_content_are_read_back_without_the_model(tmp_path):
    settings = Settings.from_env(index_dir=tmp_path, models_dir=tmp_path / "no-model-here")
    chunks = [chunk(1, 0, "first page text"), chunk(2, 0, "second page text")]
    lines = [{"fingerprint": "abc", "model": "m"}, {"chunk_id": "d-p2-0", "question": "What is on page two?"},
             {"chunk_id": "gone", "question": "Of a chunk no longer indexed?"}]
    (tmp_path / drafts.CACHE_NAME).write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    got = drafts.for_corpus(settings, chunks, "abc")
    assert [(c.chunk_id, q) for c, q in got] == [("d-p2-0", "What is on page two?")]


def test_the_index_page_says_how_many_pages_are_drafted_while_the_llm_drafts():
    from ragloupe.adapt.run import AdaptProgress
    from ragloupe.ui.adapt_view import AdaptJob

    job = AdaptJob()
    job.update(AdaptProgress("pairs"))
    job.update(AdaptProgress("draft", 64, 573))
    assert job.describe().startswith("drafting questions with the embedded LLM · 64/573 pages · ")
