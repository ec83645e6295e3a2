"""Engines as parts: the registry, a plugin added by one file, and outside systems attached by name.

Real parts throughout: the small retrieval corpus in a real Chroma store, a plugin
installed as a real distribution (a dist-info directory with entry_points.txt on
sys.path), a real Python module, a real local HTTP server, a real run file, and
Chroma collections written with chromadb itself in LangChain's and LlamaIndex's layouts.
"""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import write_records
from pdf_factory import write_text_pdf
from retrieval_corpus import GUIDANCE, REPORT, RETRIEVAL_SETTINGS
from test_chroma_server import chroma_server  # noqa: F401 (fixture: a real `chroma run`)

from ragloupe import attached
from ragloupe.cli import main
from ragloupe.config import Settings
from ragloupe.diagnostics.comparison import comparison_rows, comparison_table
from ragloupe.diagnostics.labels import rank_modes
from ragloupe.errors import AttachRefused
from ragloupe.evaluate.runs import evaluate
from ragloupe.index.pipeline import run_index
from ragloupe.retrieve.search import InvalidSearch, fetch, replay, search
from ragloupe.ui.charts import bump_chart
from ragloupe.workspace import Workspace

GOLD = [
    {"query_id": "G1", "question": "How much was capital expenditure?", "doc_id": "report",
     "expected_pages": [5], "expected_answer": "£45.2m", "answer_type": "number", "difficulty": "LEX"},
    {"query_id": "G2", "question": "Which clinics delivered vaccination doses?", "doc_id": "report",
     "expected_pages": [3], "expected_answer": "500,000", "answer_type": "number", "difficulty": "LEX"},
]

PLUGIN_MODULE = '''
"""A plugin engine in one file: ranks the store's chunks by how many of the question's words they hold."""


class WordCountEngine:
    name = "wordcount"
    score_meaning = "how many distinct question words the chunk holds"

    def search(self, question, scope, k):
        from ragloupe.retrieve.engines import EngineHit

        words = {w.strip("?.,").lower() for w in question.text.split() if len(w) > 3}
        scored = []
        for chunk in scope.workspace.chunks():
            if scope.filters.get("doc_ids") and chunk.doc_id not in scope.filters["doc_ids"]:
                continue
            held = len(words & {w.strip("?.,").lower() for w in chunk.text.split()})
            if held:
                scored.append(EngineHit(chunk, float(held)))
        scored.sort(key=lambda hit: (-hit.score, hit.chunk.chunk_id))
        return scored[:k]
'''


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """The retrieval corpus's report as a PDF (a page per line) and its guidance as records, indexed."""
    root = tmp_path_factory.mktemp("engines")
    corpus = root / "corpus"
    corpus.mkdir()
    pages: dict[int, list[str]] = {}
    for page, _, _, text in REPORT:
        pages.setdefault(page, []).append(text)
    write_text_pdf(corpus / "report.pdf", [pages[n] for n in sorted(pages)], title="report")
    write_records(corpus / "guidance.csv", GUIDANCE)
    settings = Settings.from_env(index_dir=root / "index", runs_dir=root / "runs", chroma_host="",
                                 llm_backend="none", **RETRIEVAL_SETTINGS)
    summary = run_index([corpus], settings)
    assert not summary.errors
    return settings


@pytest.fixture
def settings(index, tmp_path):
    """The module's index with this test's own attachments file and runs directory."""
    index_dir = tmp_path / "index"
    if not index_dir.exists():
        import shutil

        shutil.copytree(index.path("index_dir"), index_dir)
    return index.replace(index_dir=index_dir, runs_dir=tmp_path / "runs")


@pytest.fixture
def gold_path(tmp_path) -> Path:
    path = tmp_path / "mini.eval.json"
    path.write_text(json.dumps({"_meta": {"doc_id": "report"}, "queries": GOLD}), encoding="utf-8")
    return path


def workspace(settings, embedder) -> Workspace:
    return Workspace(settings, embedder=embedder)


# --- the registry and modes ---------------------------------------------------------------

def test_the_built_ins_go_through_the_registry_and_say_what_their_scores_mean(settings, embedder):
    registry = workspace(settings, embedder).engines()
    assert registry.names()[:2] == ("dense", "bm25")
    meanings = {row["name"]: row["score"] for row in registry.describe()}
    assert "cosine similarity" in meanings["dense"] and "BM25" in meanings["bm25"]
    assert {"unit_bm25", "unit_dense"} <= set(meanings)


def test_an_unknown_engine_in_a_mode_is_refused_naming_the_mode(settings, embedder):
    with pytest.raises(InvalidSearch, match="unknown search mode 'hybrid\\+nosuch'"):
        search("capital expenditure", "hybrid+nosuch", workspace=workspace(settings, embedder))


# --- a plugin: one file and its distribution's entry point ---------------------------------

@pytest.fixture
def plugin_on_path(tmp_path, monkeypatch):
    """A distribution installed the way pip leaves one: a module and a dist-info with entry_points.txt."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "wordcount_engine.py").write_text(textwrap.dedent(PLUGIN_MODULE), encoding="utf-8")
    info = site / "wordcount_engine-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wordcount-engine\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[ragloupe.engines]\nwordcount = wordcount_engine:WordCountEngine\n",
                                           encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("wordcount_engine", None)


def test_a_plugin_engine_is_searched_compared_and_scored_with_no_other_file_changed(
        plugin_on_path, settings, embedder, gold_path):
    held = workspace(settings, embedder)
    entry = held.engines().entries["wordcount"]
    assert entry.origin == "plugin" and "wordcount-engine" in entry.source

    # Search & compare's view model: the plugin is a mode beside ragloupe's, with its own rank and score.
    rankings = rank_modes("How much was capital expenditure?", ["hybrid", "wordcount"], 5, {}, {}, settings,
                          workspace=held)
    top = rankings["wordcount"].hits[0]
    assert top.chunk.unit == "report#p5"
    assert top.per_engine["wordcount"].rank == 1 and top.per_engine["wordcount"].score == 2.0
    rows = comparison_rows(rankings, level="page", k=5)
    row = next(r for r in rows if r.unit == "report#p5")
    assert row.cells["wordcount"].rank == 1
    table = comparison_table(rows, ["hybrid", "wordcount"], k=5, level="page")
    record = next(r for r in table.records if r["page"] == "5")
    assert (record["wordcount engine #"], record["wordcount engine score"], record["wordcount mode #"]) == (1, 2.0, 1)
    line = bump_chart(rankings["wordcount"], k=3).data[0]  # the first hit's line: an axis per engine
    assert tuple(line.x) == ("dense", "bm25", "wordcount", "final") and line.y[2] == 1 and line.y[3] == 1

    # Evaluation scores it like any mode.
    report = evaluate([gold_path], mode="wordcount", ks=(1, 3), workspace=held, write=False)
    assert report.data["mode"] == "wordcount"
    assert report.data["metrics"]["all"]["hit@1"]["mean"] == 1.0


def test_search_is_replay_of_fetch_for_a_mode_fusing_a_plugin(plugin_on_path, settings, embedder):
    held = workspace(settings, embedder)
    question = "Which clinics delivered vaccination doses?"
    direct = search(question, "hybrid+wordcount", k=5, workspace=held)
    replayed = replay(fetch(question, "hybrid+wordcount", 5, None, workspace=held), settings,
                      mode="hybrid+wordcount", k=5)
    assert [(h.chunk.chunk_id, h.score) for h in direct.hits] == [(h.chunk.chunk_id, h.score) for h in replayed.hits]
    assert set(direct.hits[0].per_engine) == {"dense", "bm25", "wordcount"}


def test_learned_fusion_falls_back_for_a_mode_with_an_engine_it_was_not_trained_on(
        plugin_on_path, settings, embedder):
    ranking = search("capital expenditure", "hybrid+wordcount", k=3,
                     workspace=workspace(settings, embedder), fusion="learned", learned_fallback="rrf")
    assert ranking.fusion.startswith("rrf") and "trained on dense and bm25" in ranking.fusion


# --- outside systems attached by name --------------------------------------------------------

def test_a_python_retriever_attached_ranks_its_units_with_its_scores(settings, embedder, tmp_path, monkeypatch):
    (tmp_path / "my_retriever.py").write_text(textwrap.dedent('''
        def retrieve(question):
            return [{"doc_id": "report", "page": 6, "score": 0.9, "text": "our own chunk"},
                    "report#p5", ["guidance", "4.1"]]
    '''), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    attached.attach(settings, "myfn", "python", function="my_retriever:retrieve")
    ranking = search("anything at all", "myfn", k=5, workspace=workspace(settings, embedder))
    assert [h.chunk.unit for h in ranking.hits] == ["report#p6", "report#p5", "guidance#4.1"]
    assert [h.per_engine["myfn"].score for h in ranking.hits] == [0.9, 0.5, 1 / 3]
    assert ranking.hits[0].chunk.text == "our own chunk"
    assert "Capital expenditure of £45.2m" in ranking.hits[1].chunk.text  # the unit's text in the index
    sys.modules.pop("my_retriever", None)


def test_a_python_retriever_that_does_not_import_is_refused_at_attach_in_one_line(settings):
    with pytest.raises(AttachRefused, match="cannot import no_such_module_here"):
        attached.attach(settings, "broken", "python", function="no_such_module_here:retrieve")
    assert attached.load(settings) == ([], [])


class _Retriever(BaseHTTPRequestHandler):
    asked: list = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Retriever.asked.append(body)
        reply = json.dumps({"ranked": [{"doc_id": "report", "page": 3, "score": 7.5},
                                       {"doc_id": "report", "page": 2, "score": 3.0}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_retriever():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Retriever)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Retriever.asked = []
    yield f"http://127.0.0.1:{server.server_address[1]}/search"
    server.shutdown()
    server.server_close()


def test_an_http_retriever_gets_the_question_and_its_ranking_is_compared_with_ragloupes(
        settings, embedder, http_retriever):
    attached.attach(settings, "svc", "http", url=http_retriever)
    rankings = rank_modes("Which clinics delivered vaccination doses?", ["bm25", "svc"], 5,
                          {"doc_ids": ["report"]}, {}, settings, workspace=workspace(settings, embedder))
    asked = _Retriever.asked[0]
    assert asked["question"] == "Which clinics delivered vaccination doses?"
    assert asked["filters"] == {"doc_ids": ["report"]} and asked["k"] >= 5
    assert [(h.chunk.unit, h.per_engine["svc"].score) for h in rankings["svc"].hits] == [
        ("report#p3", 7.5), ("report#p2", 3.0)]
    row = next(r for r in comparison_rows(rankings, level="page", k=5) if r.unit == "report#p3")
    assert row.cells["svc"].rank == 1 and row.cells["bm25"] is not None


def test_the_api_lists_an_attached_engine_and_searches_it_by_name(settings, http_retriever):
    from api_server import ApiServer

    attached.attach(settings, "svc", "http", url=http_retriever)
    with ApiServer(settings) as api:
        listed = api.client.get("/api/v1/engines").json()
        assert {"name": "svc", "origin": "attached"}.items() <= next(
            e for e in listed["engines"] if e["name"] == "svc").items()
        answer = api.client.post("/api/v1/search", json={"question": "vaccination clinics", "mode": "svc", "k": 5})
    assert answer.status_code == 200
    ranked = answer.json()["ranking"]
    assert ranked["mode"] == "svc"
    assert [(h["chunk"]["page"], h["per_engine"]["svc"]["score"]) for h in ranked["hits"]] == [(3, 7.5), (2, 3.0)]


def test_a_run_file_attached_answers_its_gold_questions_and_evaluates(settings, embedder, tmp_path, gold_path):
    run = tmp_path / "theirs.run"
    run.write_text("G1 Q0 report#p6 1 9.0 theirs\nG1 Q0 report#p5 2 8.0 theirs\n"
                   "G2 Q0 report#p3 1 5.0 theirs\n", encoding="utf-8")
    attached.attach(settings, "theirs", "run", path=str(run), goldsets=[str(gold_path)])
    held = workspace(settings, embedder)
    ranking = search("how much was CAPITAL expenditure?", "theirs", k=5, workspace=held)
    assert [(h.chunk.unit, h.per_engine["theirs"].score) for h in ranking.hits] == [
        ("report#p6", 9.0), ("report#p5", 8.0)]
    report = evaluate([gold_path], mode="theirs", ks=(1, 3), workspace=held, write=False)
    assert report.data["metrics"]["all"]["hit@1"]["mean"] == 0.5  # G1's gold page is second, G2's first
    assert report.data["metrics"]["all"]["hit@3"]["mean"] == 1.0


def test_a_run_file_with_bad_lines_is_refused_at_attach(settings, tmp_path):
    run = tmp_path / "bad.run"
    run.write_text("G1 Q0 report#p6 first 9.0 x\n", encoding="utf-8")
    with pytest.raises(AttachRefused, match="1 problem"):
        attached.attach(settings, "bad", "run", path=str(run))


# --- Chroma collections made by others, read only ----------------------------------------------

def _write_collection(directory: Path, name: str, metadatas, texts, vectors) -> None:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.PersistentClient(path=str(directory), settings=ChromaSettings(anonymized_telemetry=False))
    collection = client.create_collection(name)
    collection.add(ids=[f"n{i}" for i in range(len(texts))], documents=texts, metadatas=metadatas,
                   embeddings=[list(map(float, v)) for v in vectors])


def _files(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


REPORT_PAGES = [(page, text) for page, _, _, text in REPORT]


@pytest.mark.parametrize("layout", ["langchain", "llamaindex"])
def test_a_chroma_collection_attached_is_searched_evaluated_and_left_byte_for_byte_unchanged(
        layout, settings, embedder, tmp_path, gold_path):
    directory = tmp_path / f"{layout}-db"
    if layout == "langchain":  # LangChain's PyPDFLoader: the file path, 0-based pages
        metadatas = [{"source": "/home/me/docs/report.pdf", "page": page - 1} for page, _ in REPORT_PAGES]
    else:  # LlamaIndex's readers: the file name, 1-based page labels as text
        metadatas = [{"file_name": "report.pdf", "page_label": str(page), "_node_type": "TextNode"}
                     for page, _ in REPORT_PAGES]
    texts = [text for _, text in REPORT_PAGES]
    _write_collection(directory, "their-docs", metadatas, texts, embedder.encode(texts))
    before = _files(directory)

    attached.attach(settings, "theirs", "chroma", embedder=embedder, collection="their-docs", path=str(directory))
    held = workspace(settings, embedder)
    ranking = search("How much was capital expenditure?", "theirs", k=3, workspace=held)
    assert ranking.hits[0].chunk.unit == "report#p5"
    best = ranking.hits[0].per_engine["theirs"]
    assert best.score == -best.distance and -2.0 < best.score < 0  # their collection's l2: negated distance
    filtered = search("capital", "theirs", k=5, filters={"pages": (1, 2)}, workspace=held)
    assert {h.chunk.page for h in filtered.hits} <= {1, 2} and filtered.hits
    report = evaluate([gold_path], mode="theirs", ks=(1, 3), workspace=held, write=False)
    assert report.data["metrics"]["all"]["hit@3"]["mean"] == 1.0

    assert _files(directory) == before


def test_a_collection_of_another_dimension_is_refused_in_one_line(settings, embedder, tmp_path):
    directory = tmp_path / "small-db"
    _write_collection(directory, "tiny-vectors", [{"source": "report.pdf", "page": 0}], ["text"], [[0.1] * 8])
    with pytest.raises(AttachRefused, match="8-dimensional vectors and the model .* makes 384") as refused:
        attached.attach(settings, "tiny", "chroma", embedder=embedder, collection="tiny-vectors", path=str(directory))
    assert "\n" not in str(refused.value)
    assert attached.load(settings) == ([], [])


def test_an_unknown_layout_asks_for_the_fields(settings, embedder, tmp_path):
    directory = tmp_path / "odd-db"
    _write_collection(directory, "odd-layout", [{"doc": "report", "pg": 1}], ["text"], embedder.encode(["text"]))
    with pytest.raises(AttachRefused, match="keys are doc, pg: say --doc-field and --page-field"):
        attached.attach(settings, "odd", "chroma", embedder=embedder, collection="odd-layout", path=str(directory))
    attached.attach(settings, "odd", "chroma", embedder=embedder, collection="odd-layout", path=str(directory),
                    doc_field="doc", page_field="pg", page_base=1)
    assert attached.load(settings)[0][0].options["doc_field"] == "doc"


# --- the command line ----------------------------------------------------------------------

def test_attach_engines_and_remove_on_the_command_line(settings, tmp_path, monkeypatch, capsys, gold_path):
    monkeypatch.setenv("RAGLOUPE_INDEX_DIR", str(settings.path("index_dir")))
    (tmp_path / "cli_retriever.py").write_text("def retrieve(q):\n    return ['report#p2']\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["attach", "mine", "--python", "cli_retriever:retrieve"]) == 0
    assert "search it with --mode mine" in capsys.readouterr().out
    assert main(["engines", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {"name": "mine", "origin": "attached"}.items() <= next(
        e for e in listed["engines"] if e["name"] == "mine").items()
    assert listed["attachments_file"].endswith("attached_engines.json")
    assert main(["search", "vaccination", "--compare", "bm25,mine", "--json"]) == 0
    compared = json.loads(capsys.readouterr().out)["modes"]
    assert compared["mine"]["hits"][0]["per_engine"]["mine"]["rank"] == 1
    assert main(["search", "vaccination", "--mode", "mine"]) == 0
    table = capsys.readouterr().out
    assert "mine rank/score" in table.splitlines()[0] and " 1/1.000 " in table.splitlines()[2]
    monkeypatch.setenv("RAGLOUPE_RUNS_DIR", str(tmp_path / "runs"))
    assert main(["eval", str(gold_path), "--mode", "mine", "--k", "1,3", "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["run_id"].startswith("mine") or "mine" in scored["path"]
    assert scored["metrics"]["hit@3"]["mean"] == 0.0  # it names page 2 only; the gold pages are 5 and 3
    assert main(["attach", "--remove", "mine"]) == 0
    assert main(["attach", "--remove", "mine"]) == 2
    assert "no engine is attached as 'mine'" in capsys.readouterr().err
    sys.modules.pop("cli_retriever", None)


# --- the app: the Index page's attach form and the Chunk Explorer's attached collection ------------

@pytest.fixture
def app_settings(settings, monkeypatch):
    """This test's copy of the engines index, for pages that read settings themselves."""
    monkeypatch.setenv("RAGLOUPE_INDEX_DIR", str(settings.path("index_dir")))
    monkeypatch.setenv("RAGLOUPE_LLM_BACKEND", "none")
    return settings


def test_the_index_page_attaches_a_python_retriever_and_lists_it(app_settings, tmp_path, monkeypatch):
    from app_pages import assert_clean, run_page

    (tmp_path / "page_retriever.py").write_text("def retrieve(q):\n    return ['report#p2']\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    app = run_page("index_manage")
    app.text_input(key="engines.name").set_value("pagefn")
    app.radio(key="engines.kind").set_value("python")
    app.text_input(key="engines.target").set_value("page_retriever:retrieve")
    next(b for b in app.button if b.label == "Attach").click()
    app.run()
    assert_clean(app)
    assert any("pagefn attached" in s.value for s in app.success)
    assert [a.name for a in attached.load(app_settings)[0]] == ["pagefn"]
    app.run()
    assert any(t.value.startswith("pagefn (attached): python page_retriever:retrieve") for t in app.text)
    # ... and it is a mode on the Evaluation page, beside ragloupe's (Search & compare: test_browser_engines).
    evaluation = run_page("evaluation")
    assert {"hybrid", "pagefn"} <= set(evaluation.multiselect(key="evaluation.modes").options)
    sys.modules.pop("page_retriever", None)


def test_the_chunk_explorer_browses_an_attached_collection_and_ranks_its_texts_by_bm25(
        app_settings, embedder, tmp_path):
    from app_pages import assert_clean, run_page

    directory = tmp_path / "lc-db"
    texts = [text for _, text in REPORT_PAGES]
    _write_collection(directory, "their-docs", [{"source": "docs/report.pdf", "page": p - 1} for p, _ in REPORT_PAGES],
                      texts, embedder.encode(texts))
    before = _files(directory)
    attached.attach(app_settings, "theirs", "chroma", embedder=embedder, collection="their-docs", path=str(directory))
    app = run_page("chunk_explorer")
    assert next(m.value for m in app.metric if m.label == "Chunks in theirs") == f"{len(REPORT_PAGES):,}"
    app.text_input(key="explorer.attached_q").set_value("capital expenditure Baird hospital")
    app.run()
    assert_clean(app)
    ranked = app.dataframe[-1].value
    assert ranked.iloc[0]["theirs (BM25)"] == "report#p5" and ranked.iloc[0]["your dense"] == "report#p5"
    # Your dense score is a blend with the best sentence's (index/sentences.py), so it is not called cosine.
    assert list(ranked.columns) == ["rank", "theirs (BM25)", "BM25", "your dense", "dense score"]
    assert _files(directory) == before


@pytest.mark.chroma_server
def test_a_collection_on_a_chroma_server_is_attached_by_host_and_searched(settings, embedder, chroma_server):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    client = chromadb.HttpClient(host="127.0.0.1", port=chroma_server, settings=ChromaSettings(anonymized_telemetry=False))
    texts = [text for _, text in REPORT_PAGES]
    client.create_collection("served-docs").add(
        ids=[f"n{i}" for i in range(len(texts))], documents=texts, embeddings=[list(map(float, v)) for v in embedder.encode(texts)],
        metadatas=[{"file_name": "report.pdf", "page_label": str(page)} for page, _ in REPORT_PAGES])
    attached.attach(settings, "served", "chroma", embedder=embedder, collection="served-docs",
                    host="127.0.0.1", port=chroma_server)
    ranking = search("How much was capital expenditure?", "served", k=3, workspace=workspace(settings, embedder))
    assert ranking.hits[0].chunk.unit == "report#p5"
    assert client.get_collection("served-docs").count() == len(texts)
