"""`ragloupe adapt` end to end on the small corpus: the real bundled model trained for a few
steps, real Chroma, the index re-embedded by swapping collections, and the decision kept."""

from __future__ import annotations

import json

import pytest

from ragloupe.adapt import pairs as P
from ragloupe.adapt.run import adapt, training_summary
from ragloupe.config import BUNDLED_MODEL, Settings, adopted_model_file
from ragloupe.index.manifest import Manifest
from ragloupe.index.pipeline import run_index
from ragloupe.index.store import open_store
from ragloupe.retrieve.search import search
from ragloupe.workspace import Workspace

NOTES_GOLD = {"_meta": {"doc_id": "notes"}, "queries": [
    {"query_id": "q1", "question": "What keeps the cooling running when the mains power fails?",
     "expected_records": ["n2"]},
    {"query_id": "q2", "question": "How do pipelines survive the ground moving?", "expected_records": ["n3"]},
    {"query_id": "q3", "question": "What protects tanks from high river water?", "expected_records": ["n1"]},
]}


@pytest.fixture
def small_index(tmp_path, small_corpus, monkeypatch) -> Settings:
    """The small corpus indexed by the bundled model (whose adapted averages the shipped query adapter
    carries over to) with torch encoding (no ONNX export of the adapted model), a short training
    budget, and a gold set over its notes."""
    monkeypatch.setenv("RAGLOUPE_EMBEDDING_MODEL", BUNDLED_MODEL)  # what every later read of the settings sees
    settings = Settings.from_env(
        index_dir=tmp_path / "index", runs_dir=tmp_path / "runs", chroma_host="",
        embedding_backend="torch", adapt_max_steps=3, adapt_batch_size=4, adapt_learning_rate=1e-4)
    summary = run_index([small_corpus], settings)
    assert not summary.errors
    (tmp_path / "notes.gold.json").write_text(json.dumps(NOTES_GOLD), encoding="utf-8")
    return settings


def test_pairs_are_cut_from_document_text_with_a_negative_off_the_positive_page(small_index):
    workspace = Workspace.open(small_index)
    made = P.make_pairs(list(workspace.chunks()), workspace.lexical(), P.PairRules())
    kinds = P.count_by_kind(made)
    assert kinds["title"] == 3 and kinds["sentence"] >= 3
    for pair in made:
        assert pair.query not in pair.positive  # the sentence or title is taken out of its passage
        assert pair.negative == "" or pair.negative != pair.positive
    gold_questions = {q["question"] for q in NOTES_GOLD["queries"]}
    assert not gold_questions & {p.query for p in made}


def test_the_bm25_filter_drops_the_pairs_bm25_solves_from_another_chunk_of_the_page():
    from ragloupe.index import lexical
    from ragloupe.models import Chunk

    def chunk(position: int, text: str, page: int = 1) -> Chunk:
        return Chunk(chunk_id=f"d-p{page}-{position}", doc_id="d", page=page, position=position, text=text,
                     n_tokens=len(text.split()), quality="clean")

    # The page's second chunk repeats the first sentence's words (BM25 finds the page from them
    # without the sentence itself), and none of the second sentence's.
    page = [chunk(0, "Reservoir levels fell sharply during the dry summer months of that year. "
                     "Hosepipe bans followed in many towns and villages."),
            chunk(1, "Reservoir levels fell sharply in the dry summer months, the report adds.")]
    # Other pages of the document, on other things (BM25 weighs a word by how few chunks hold it).
    others = [chunk(i, text, page=2) for i, text in enumerate((
        "Staff training budgets rose", "The audit committee met four times", "Pension costs were restated",
        "Capital grants funded two new clinics"))]
    index = lexical.build_index(page + others)
    rules = P.PairRules(kinds=("sentence",), sentences_per_chunk=2, hard_negatives=False)
    everything = [p.query for p in P.make_pairs(page, index, rules)]
    misses = [p.query for p in P.make_pairs(page, index, P.PairRules(**{**rules.__dict__, "bm25_misses_only": True}))]
    assert everything == ["Reservoir levels fell sharply during the dry summer months of that year.",
                          "Hosepipe bans followed in many towns and villages."]
    assert misses == ["Hosepipe bans followed in many towns and villages."]


def test_a_model_that_does_not_win_is_not_kept_and_the_index_is_as_it_was(small_index, tmp_path):
    # Zero training steps: the "adapted" model is the bundled one saved again, so MRR cannot rise.
    settings = small_index.replace(adapt_max_steps=0)
    store = open_store(settings)
    fingerprint, manifest_before = store.fingerprint(), Manifest.load(settings)
    steps = []
    outcome = adapt(Workspace.open(settings), [tmp_path / "notes.gold.json"], progress=steps.append)
    assert not outcome.kept
    # The index has the gold document's sentence vectors; the adapted model encodes its own before
    # the searches after, as a stage of the progress (one step as the document starts, one at the end).
    stages = [step.stage for step in steps]
    assert "sentences-before" not in stages
    assert stages.index("reembed") < stages.index("sentences-after") < stages.index("after")
    assert [(s.done, s.total, s.detail) for s in steps if s.stage == "sentences-after"] == [(0, 1, "notes"), (1, 1, "")]
    assert "MRR over all questions does not rise" in outcome.reason
    row = outcome.comparison["all"]
    assert row["n"] == 3 and row["before"]["rr"] == row["after"]["rr"] and row["p"]["rr"] == 1.0
    assert outcome.training["steps"] == 0
    assert open_store(settings).fingerprint() == fingerprint
    assert Manifest.load(settings).settings_fingerprint == manifest_before.settings_fingerprint
    assert not adopted_model_file(settings).exists()
    assert Settings.from_env(index_dir=settings.index_dir).embedding_model == settings.embedding_model
    assert [c for c in open_store(settings).collection_names()] == [settings.collection]


def test_an_adopted_model_embeds_the_index_and_encodes_the_questions(small_index, tmp_path):
    # Passages cut to 64 tokens in training; the saved model still reads 256, as the index's chunks need.
    outcome = adapt(Workspace.open(small_index.replace(adapt_max_tokens=64)), [], keep_untested=True)
    assert outcome.kept and outcome.training["steps"] == 3
    record = json.loads((tmp_path / "index/models" / outcome.model / "training.json").read_text())
    assert record["pairs"]["title"] == 3 and len(record["loss_curve"]) == 3
    assert "no gold question" in record["trained_on"]
    reread = Settings.from_env(index_dir=tmp_path / "index", runs_dir=tmp_path / "runs", chroma_host="",
                               embedding_backend="torch")
    assert reread.embedding_model == outcome.model_dir
    assert Manifest.load(reread).stale_reason(reread) is None
    store = open_store(reread)
    chunk_id = store.ids({"doc_id": "notes"})[0]
    workspace = Workspace.open(reread, store=store)
    stored = store.get_embeddings([chunk_id])[0]
    text = store.get_chunks([chunk_id])[0].search_text
    assert float(stored @ workspace.embedder.encode([text])[0]) == pytest.approx(1.0, abs=1e-4)
    assert workspace.embedder.max_seq_length == 256
    ranking = search("diesel generators after a power loss", mode="dense", workspace=workspace.with_settings(reread))
    assert ranking.hits
    # Half fine-tuned (the default merge weight): the shipped query adapter carries over to it.
    assert workspace.query_adapter()[1].endswith(
        f"carried over to {outcome.model}, an average of all-MiniLM-L6-v2 with 50% fine-tuned weights")
    off = search("diesel generators after a power loss", mode="dense", workspace=workspace, query_adapter="off")
    assert [round(h.score, 5) for h in ranking.hits] != [round(h.score, 5) for h in off.hits]


def test_the_same_corpus_and_settings_reuse_the_saved_model(small_index, tmp_path):
    first = adapt(Workspace.open(small_index.replace(adapt_max_steps=1)), [])
    again = adapt(Workspace.open(small_index.replace(adapt_max_steps=1)), [])
    assert first.model == again.model and again.reused_model and not again.kept


def test_a_merged_model_averages_the_trained_one_with_the_source_and_reuses_the_training(small_index, tmp_path):
    from sentence_transformers import SentenceTransformer

    from ragloupe.index.embedder import resolve_model_path

    trained = adapt(Workspace.open(small_index.replace(adapt_merge_weight=1.0)), [])
    half = adapt(Workspace.open(small_index.replace(adapt_merge_weight=0.5)), [])
    none = adapt(Workspace.open(small_index.replace(adapt_merge_weight=0.0)), [])
    assert len({trained.model, half.model, none.model}) == 3
    # Trained once: the merged models say which model they averaged and carry its training record.
    for merged in (half, none):
        assert not merged.reused_model and merged.training["merged_from"] == trained.model
        assert merged.training["loss_curve"] == trained.training["loss_curve"]
        assert merged.training["settings"]["merge_weight"] in (0.5, 0.0)
    models = {name: SentenceTransformer(str(tmp_path / "index/models" / name), device="cpu")
              for name in (trained.model, half.model, none.model)}
    source = SentenceTransformer(resolve_model_path(small_index.embedding_model), device="cpu")
    name = "0.attention.self.query.weight"
    layer = {key: dict(model.named_parameters())[f"0.model.encoder.layer.{name}"].detach()
             for key, model in [("trained", models[trained.model]), ("half", models[half.model]),
                                ("none", models[none.model]), ("source", source)]}
    assert not layer["trained"].equal(layer["source"])  # training moved it
    assert layer["none"].equal(layer["source"])  # weight 0: the source model again
    halfway = (layer["trained"] + layer["source"]) / 2
    assert float((layer["half"] - halfway).abs().max()) < 1e-6
    sentence = ["Diesel generators keep the cooling running."]
    assert abs(models[none.model].encode(sentence) - source.encode(sentence)).max() < 1e-6
    # What the CLI and the Index page say of it.
    said = training_summary(half.training)
    assert said.startswith("3 training steps") and \
        f"averaged weight by weight: 50% the fine-tuned model ({trained.model}), 50% bundled:all-MiniLM-L6-v2" in said
    assert "averaged" not in training_summary(trained.training)


def test_index_page_adapts_the_model_and_shows_what_it_kept(settings, small_corpus, monkeypatch):
    from app_pages import finish, run_page
    from ragloupe.ui import adapt_view
    from ragloupe.ui.cache import store_key

    for name, value in {"EMBEDDING_BACKEND": "torch", "ADAPT_MAX_STEPS": "2", "ADAPT_BATCH_SIZE": "4"}.items():
        monkeypatch.setenv(f"RAGLOUPE_{name}", value)
    settings = Settings.from_env()
    assert not run_index([small_corpus], settings).errors
    app = run_page("index_manage")
    assert any("Gold sets to decide on: 0" in m.value for m in app.markdown)
    app.checkbox(key="adapt_keep_untested").check().run()
    app.button(key="adapt_start").click().run()
    job = adapt_view._registry()[0][store_key(settings)]
    finish(job, app)
    assert job.error is None
    assert any(s.value.startswith("Kept: no gold set to compare on") for s in app.success)
    # The page says how the kept model was made: its steps, and half of it the default model.
    assert any(c.value.startswith("Model adapted-") and "2 training steps" in c.value
               and "then averaged weight by weight: 50% the fine-tuned model" in c.value
               and "50% bundled:all-MiniLM-L6-v2+questions" in c.value
               for c in app.caption), [c.value for c in app.caption]
    assert any("This index is embedded by an adapted model" in i.value for i in app.info)
    assert any("2 training steps" in c.value for c in app.caption)
    # And what dense searches with under it: the question's own vector, and why. The default model is
    # itself half fine-tuned, so the average of an average is three quarters away from the bundled
    # model's space the shipped adapter maps: more than the carry-over rule allows.
    assert any(c.value.startswith("Question: dense searches with the question's own embedding: the shipped query "
                                  "adapter maps all-MiniLM-L6-v2's space, not adapted-")
               for c in app.caption), [c.value for c in app.caption]


def test_a_swap_killed_between_its_renames_is_undone_by_the_next_index_run(small_index, small_corpus):
    from ragloupe.index import swap

    store = open_store(small_index)
    fingerprint, count = store.fingerprint(), store.count()
    scratch = swap.reembed(store, Workspace(small_index, store=store).embedder, small_index)
    # What swap_in does up to its first rename, then the process dies.
    swap._write_json(swap.journal_path(small_index), {
        "collection": small_index.collection, "incoming": scratch, "incoming_id": "not-swapped-yet",
        "displaced": small_index.collection + swap.DISPLACED_SUFFIX, "adopted": {"model": "x", "source_model": "y"},
        "manifest": {}})
    store.rename_collection(small_index.collection, small_index.collection + swap.DISPLACED_SUFFIX)
    summary = run_index([small_corpus], small_index)
    assert "an interrupted model swap was undone" in summary.repaired
    reopened = open_store(small_index)
    assert reopened.count() == count and reopened.fingerprint() == fingerprint
    assert not swap.journal_path(small_index).exists() and not adopted_model_file(small_index).exists()
