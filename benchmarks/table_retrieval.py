"""Retrieval with and without table chunks: which table strategy, and does "prefer tables" help?

    .venv/bin/python benchmarks/table_retrieval.py

Writes benchmarks/results/table_retrieval.json.

1. The shipped Grampian corpus. Its PDFs were re-rendered from the reports'
   page text, so its tables are flattened into running text (SOURCE.md) and
   no table is found on any of its 433 pages (benchmarks/table_cells.py).
   This part checks that the chunks of the three reports are identical with
   tables on (the default strategy) and off: if they are, every Grampian
   figure (Hit@1, MRR, on the 31 gold questions whose evidence_layout is
   "table" and overall) is the same by construction, and none is re-run.

2. A generated corpus with real tables, where the strategy can matter: six
   "annual reports" (tests/pdf_factory.py), each with two prose pages naming
   sites, a page with a 36-row expenditure table by ward and a page with a
   36-row activity table (the same ward labels, other columns), and a mixed
   page (prose above a staffing table by site). Each report's figures are
   random. As flattened text, a long table's lower rows sit in chunks that
   no longer hold its header, so the two table pages look alike there. The
   questions are written from templates ("How many admissions did Ward 27
   have?", "What was the 2023 expenditure of Ward 5?") and asked
   with the default search settings, scoped to their report like the
   Grampian gold sets; the gold unit is the page of the cell. Prose
   questions ask what the prose pages say. Each configuration
   (table_strategy x prefer_tables) is scored by page Hit@1 and MRR@10, and
   at the chunk level by answer@1 / answer MRR: the rank of the first hit
   that holds the answer (for a table question, a line with the row label
   and the figure), which is what an answer generator is handed.

   The default is chosen leave-one-report-out: for each report, the
   configuration with the best answer@1 (then answer MRR, then Hit@1) on the
   other five is scored on the held-out one; the held-out mean is the
   figure to quote. It is done twice: over every configuration, and over
   those with prefer_tables off (the strategy's default, the boost being an
   option that is off by default).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "tests"))
sys.path.insert(0, str(PROJECT_ROOT / "src"))

import pdf_factory as pf  # noqa: E402

from ragloupe.chunking import chunk_document  # noqa: E402
from ragloupe.config import Settings  # noqa: E402
from ragloupe.index.embedder import get_embedder  # noqa: E402
from ragloupe.index.pipeline import run_index  # noqa: E402
from ragloupe.index.store import open_store  # noqa: E402
from ragloupe.ingest import load_source  # noqa: E402
from ragloupe.retrieve.search import search  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

RESULTS = PROJECT_ROOT / "benchmarks" / "results" / "table_retrieval.json"
GRAMPIAN = PROJECT_ROOT / "data" / "benchmarks" / "grampian" / "pdf"
STRATEGIES = ("off", "whole", "rows", "row_blocks", "two_stage")
REPORTS = ("Ardmore", "Bellhaven", "Carnwath", "Dunmore", "Elgarth", "Fintry")
SITES = ("Woodend Hospital", "Royal Cornhill", "Pharmacy", "Maternity", "Dental services",
         "Mental health", "Primary care", "Ambulance transfers", "Public health", "Estates")


def figure(rng: random.Random) -> str:
    return f"{rng.randint(100, 99_999):,}"


def write_report(folder: Path, name: str, rng: random.Random) -> tuple[Path, list[dict]]:
    """One generated report and its questions (question, page, kind)."""
    sites = rng.sample(SITES, 8)
    wards = [f"Ward {n}" for n in range(1, 37)]
    spend = tuple((w, figure(rng), figure(rng), figure(rng)) for w in wards)
    activity = tuple((w, figure(rng), figure(rng), figure(rng)) for w in wards)
    staff = tuple((s, str(rng.randint(10, 900)), str(rng.randint(1, 60)), f"{rng.randint(1, 20)}%")
                  for s in sites[:5])
    praise = {s: rng.choice(("shorter waiting times", "a new electronic record",
                             "more weekend clinics", "a refurbished ward", "fewer cancelled operations",
                             "a volunteer drivers scheme", "longer opening hours", "a new day unit"))
              for s in sites}
    prose = [f"In {name} this year {s} introduced {praise[s]}, which patients welcomed." for s in sites]
    columns = (50, 250, 350, 450)
    pages = [
        dict(columns=columns, header_rows=(), rows=(), top=780, above=prose[:4], below=()),
        dict(columns=columns, header_rows=(), rows=(), top=780, above=prose[4:], below=()),
        dict(columns=columns, header_rows=(("Expenditure by ward", "2023 £'000", "2022 £'000",
                                            "Budget £'000"),), rows=spend, top=790, size=8,
             row_height=12, above=(f"Table 3: {name} expenditure by ward",), below=(),
             right_aligned=True),
        dict(columns=columns, header_rows=(("Activity by ward", "Admissions", "Outpatients",
                                            "Day cases"),), rows=activity, top=790, size=8,
             row_height=12, above=(f"Table 4: {name} activity by ward",), below=(),
             right_aligned=True),
        dict(columns=columns, header_rows=(("Staffing", "Staff", "Vacancies", "Turnover"),),
             rows=staff, top=640, right_aligned=True,
             above=(f"The {name} board reviewed staffing at each site against its workforce plan,",
                    "and the table below shows staff in post, vacancies and staff turnover."),
             below=("Vacancies were highest where recruitment of specialist nurses was slowest.",)),
    ]
    path = folder / f"{name}.pdf"
    path.write_bytes(pf.build_pdf([{"content": pf.table_content(**p) if p["rows"] else
                                    pf.text_content(p["above"])} for p in pages]))
    questions = []
    for ward, this_year, *_ in rng.sample(spend, 6):
        questions.append({"question": f"What was the 2023 expenditure of {ward}?", "page": 3,
                          "kind": "table", "answer": this_year})
    for ward, admissions, *_ in rng.sample(activity, 6):
        questions.append({"question": f"How many admissions did {ward} have?", "page": 4,
                          "kind": "table", "answer": admissions})
    for site, _, vacancies, _ in staff[:3]:
        questions.append({"question": f"How many vacancies were there at {site}?", "page": 5,
                          "kind": "table", "answer": vacancies})
    for i, site in enumerate(sites[:6]):
        questions.append({"question": f"What did {site} introduce this year that patients welcomed?",
                          "page": 1 if i < 4 else 2, "kind": "prose", "answer": praise[site]})
    for q in questions:
        q["doc_id"] = name
    return path, questions


def score(settings: Settings, questions: list[dict], prefer: bool) -> list[dict]:
    workspace = Workspace.open(settings, store=open_store(settings), embedder=get_embedder(settings))
    out = []
    for q in questions:
        ranking = search(q["question"], k=10, filters={"doc_ids": [q["doc_id"]]},
                         workspace=workspace, prefer_tables=prefer)
        ranks = [p.rank for p in ranking.pages if p.page == q["page"] and p.doc_id == q["doc_id"]]
        rank = ranks[0] if ranks and ranks[0] <= 10 else None
        # The chunk level: is the answer (the cell, with its row label) in the first chunk?
        answered = [h.rank for h in ranking.hits if h.chunk.page == q["page"]
                    and _holds_answer(h.chunk.text, q)]
        out.append({**q, "rank": rank, "answer_rank": answered[0] if answered else None})
    return out


def _holds_answer(text: str, q: dict) -> bool:
    """The chunk holds the answer: for a table question, a line with the row label and the
    figure (a row of a table chunk, or the flattened row in page text); for prose, the phrase."""
    if q["kind"] == "prose":
        return q["answer"] in text
    label = q["question"].split(" of ")[-1].split(" did ")[-1].split(" at ")[-1]
    label = label.replace(" have?", "").replace(" see?", "").rstrip("?")
    return any(label in line and q["answer"] in line for line in text.splitlines())


def summarise(rows: list[dict]) -> dict:
    if not rows:
        return {"n": 0}
    n = len(rows)
    return {"n": n, "hit1": round(sum(r["rank"] == 1 for r in rows) / n, 3),
            "mrr": round(sum(1 / r["rank"] for r in rows if r["rank"]) / n, 3),
            "answer_at_1": round(sum(r["answer_rank"] == 1 for r in rows) / n, 3),
            "answer_mrr": round(sum(1 / r["answer_rank"] for r in rows if r["answer_rank"]) / n, 3)}


def leave_one_report_out(results: dict[str, list[dict]], candidates: list[str]) -> dict:
    """For each report, the candidate best on the other five (answer@1, answer MRR, Hit@1),
    scored on the held-out report; the held-out rows pooled."""
    def on(rows, docs):
        return summarise([r for r in rows if r["doc_id"] in docs])

    folds, held_out = [], []
    for name in REPORTS:
        others = [n for n in REPORTS if n != name]
        best = max(candidates, key=lambda key: (on(results[key], others)["answer_at_1"],
                                                on(results[key], others)["answer_mrr"],
                                                on(results[key], others)["hit1"]))
        folds.append({"held_out": name, "chosen": best, **on(results[best], [name])})
        held_out += [r for r in results[best] if r["doc_id"] == name]
    return {"folds": folds, "held_out": summarise(held_out),
            "held_out_table": summarise([r for r in held_out if r["kind"] == "table"]),
            "held_out_prose": summarise([r for r in held_out if r["kind"] == "prose"])}


def grampian_identity() -> dict:
    """Are the Grampian chunks the same with the default table strategy and with tables off?"""
    embedder = get_embedder(Settings.from_env())
    out = {}
    for pdf in sorted(GRAMPIAN.glob("*.pdf")):
        texts = {}
        for strategy in ("off", Settings.from_env().table_strategy):
            settings = Settings.from_env(table_strategy=strategy)
            doc = load_source(pdf, settings)
            texts[strategy] = [(c.page, c.text) for c in chunk_document(
                doc, embedder.tokenizer, settings, embedder.max_seq_length)]
        values = list(texts.values())
        out[pdf.stem] = {"chunks": len(values[0]), "identical": values[0] == values[-1]}
    return out


def main() -> None:
    identity = grampian_identity()
    print("Grampian chunks identical with tables on and off:", identity)
    rng = random.Random(11)
    results: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "raw"
        folder.mkdir()
        questions = []
        for name in REPORTS:
            _, asked = write_report(folder, name, rng)
            questions += asked
        for strategy in STRATEGIES:
            settings = Settings.from_env(index_dir=Path(tmp) / f"index-{strategy}",
                                         table_strategy=strategy, chroma_host="")
            summary = run_index([folder], settings)
            assert not summary.errors, summary.errors
            for prefer in (False, True):
                if prefer and strategy == "off":
                    continue  # no table chunk to prefer
                key = f"{strategy}{'+prefer' if prefer else ''}"
                results[key] = score(settings, questions, prefer)
                print(key, summarise([r for r in results[key] if r["kind"] == "table"]),
                      summarise([r for r in results[key] if r["kind"] == "prose"]), summarise(results[key]))

    configurations = {key: {"table": summarise([r for r in rows if r["kind"] == "table"]),
                            "prose": summarise([r for r in rows if r["kind"] == "prose"]),
                            "all": summarise(rows)} for key, rows in results.items()}
    lodo = {"any_configuration": leave_one_report_out(results, list(results)),
            "prefer_tables_off": leave_one_report_out(results, [k for k in results if "+prefer" not in k])}
    print(json.dumps(lodo))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "command": "python benchmarks/table_retrieval.py", "grampian_chunks_identical": identity,
        "generated": {"reports": len(REPORTS), "questions": len(results["off"]),
                      "configurations": configurations, "leave_one_report_out": lodo,
                      "per_question": results},
        "machine": {"cpus": os.cpu_count(), "load_after": [round(x, 2) for x in os.getloadavg()]},
    }, indent=1) + "\n")


if __name__ == "__main__":
    main()
