"""The user's steps through EvidenceRAG's Streamlit UI that benchmarks/evidencerag_ui.py walks.

Each step takes the Playwright page and the run's context (the API's URL and an httpx
client on it, for what the page should show) and returns the proof that it rendered, as
text; a step that did not render raises NotRendered saying what was missing. Every
expected value is read from the API in the same run, never written down here.
"""

from __future__ import annotations

import re
import time

DOC = "Grampian-2020-2021"
TABLE_QUESTION = "threshold for releases of carbon dioxide to air"
INSPECT_PAGE = 28  # a page of DOC with several text chunks (tests/test_api_evidencerag.py reads it too)
PROBLEMS = ('[data-testid="stException"]', '[data-testid="stAlertContentError"]',
            '[data-testid="stAlertContentWarning"]')


class NotRendered(Exception):
    """A step's proof was not on the page; the message says what was missing or shown."""


# ---------------------------------------------------------------- the page

def settle(page, timeout_s: float = 240) -> None:
    """Wait until Streamlit's script run is over (two idle polls in a row)."""
    page.wait_for_timeout(400)
    deadline, idle = time.monotonic() + timeout_s, 0
    while time.monotonic() < deadline:
        state = page.locator('[data-testid="stApp"]').first.get_attribute("data-test-script-state")
        idle = idle + 1 if state in ("notRunning", "initial") else 0
        if idle >= 2:
            return
        page.wait_for_timeout(300)
    raise NotRendered(f"the app was still running after {timeout_s:.0f} s")


def problems(page) -> list[str]:
    """The exception blocks and error / warning texts the page shows right now."""
    seen = []
    for selector in PROBLEMS:
        for element in page.locator(selector).all():
            if element.is_visible():
                kind = selector.split('"')[1].replace("stAlertContent", "st.").lower()
                seen.append(f"{kind}: {' '.join(element.inner_text().split())[:400]}")
    body = page.locator("body").inner_text()
    if "Traceback" in body and not any("traceback" in s.lower() for s in seen):
        seen.append("Traceback text on the page")
    return seen


def main_area(page):
    return page.locator('[data-testid="stMain"]')


def pick(page, scope, label: str, option_text: str) -> None:
    """Choose the option containing ``option_text`` in the selectbox labelled ``label``."""
    box = scope.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    box.scroll_into_view_if_needed()
    box.get_by_role("button", name="Open").click()
    page.get_by_role("option").filter(has_text=option_text).first.click()
    settle(page)


def chosen_option(scope, label: str) -> str:
    """The option a selectbox shows as chosen (its combobox input holds the text)."""
    box = scope.locator('[data-testid="stSelectbox"]').filter(has_text=label).first
    return box.get_by_role("combobox").input_value()


def open_tab(page, name: str):
    page.get_by_role("tab", name=name, exact=True).click()
    settle(page)
    return page.locator('[data-testid="stTabPanel"]:visible').first


def visible_text(locator) -> str:
    return " ".join(locator.inner_text().split())


def grid_rows(grid) -> tuple[list[str], list[list[str]]]:
    """A st.dataframe's headers and rows as its accessible cells give them."""
    headers = [h.strip() for h in grid.locator("th").all_inner_texts()]
    rows = [[c.strip() for c in row.locator("td").all_inner_texts()] for row in grid.locator('tbody [role="row"]').all()]
    return headers, rows


def need(condition: bool, missing: str) -> None:
    if not condition:
        raise NotRendered(missing)


# ---------------------------------------------------------------- the steps
def load(page, ctx) -> str:
    page.goto(ctx["ui_url"])
    page.get_by_text("RAG Retrieval Debug UI").first.wait_for()
    settle(page)
    ctx["before_api_url"] = visible_text(page.locator('[data-testid="stSidebar"]'))[:300]
    box = page.locator('[data-testid="stSidebar"]').get_by_label("API Base URL")
    box.fill(ctx["api_url"])
    box.press("Enter")
    settle(page)
    need(box.input_value() == ctx["api_url"], "the API Base URL field did not keep the server's URL")
    return f"hero 'RAG Retrieval Debug UI'; sidebar 'API Base URL' set to {ctx['api_url']}"


def health(page, ctx) -> str:
    sidebar = visible_text(page.locator('[data-testid="stSidebar"]'))
    need("API unreachable" not in sidebar, "the sidebar says: API unreachable")
    data = ctx["api"].get("/api/v1/health").json()
    expected = ("Generation: disabled" if not data["generation_enabled"]
                else "Ollama reachable" if data["ollama_reachable"] else "Ollama unreachable")
    need(expected in sidebar, f"the sidebar lacks {expected!r}")
    return f"sidebar: {sidebar[sidebar.index(expected):][:60]!r} (generation_enabled={data['generation_enabled']})"


def documents(page, ctx) -> str:
    docs = ctx["api"].get("/api/v1/docs").json()["docs"]
    box = page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').filter(has_text="Document").first
    box.get_by_role("button", name="Open").click()
    page.get_by_role("option").first.wait_for()
    options = [" ".join(o.split()) for o in page.get_by_role("option").all_inner_texts()]
    page.keyboard.press("Escape")
    settle(page)
    need(len(options) == len(docs), f"{len(options)} options in the sidebar's Document box, the API lists {len(docs)}")
    need(all(any(o.startswith(f"{d} |") for o in options) for d in docs), f"options {options} miss some of {docs}")
    return f"sidebar Document box lists the {len(docs)} documents: {options}"


def pick_document(page, ctx) -> str:
    main = main_area(page)
    main.get_by_text("2) Select Document").wait_for()
    pick(page, main, "Document", f"{DOC} |")
    chosen = chosen_option(main, "Document")
    need(DOC in chosen, f"the main Document box shows {chosen!r}")
    return f"main '2) Select Document' box shows {chosen!r}"


def stats(page, ctx, doc: str = DOC) -> str:
    data = ctx["api"].get(f"/api/v1/docs/{doc}/stats").json()
    page.locator(".doc-stat-card").first.wait_for()
    cards = [visible_text(c).lower() for c in page.locator(".doc-stat-card").all()]
    expected = {"pages": data["page_count"], "chunks": data["chunk_count"],
                "table chunks": data["table_chunk_count"], "extracted tables": data["table_count"]}
    for label, value in expected.items():
        need(f"{label} {value}" in cards, f"no card '{label} {value}' among {cards}")
    caption = page.get_by_text(re.compile(r"^Chunking: ")).first
    need(caption.is_visible(), "no 'Chunking: ...' provenance caption")
    provenance = visible_text(caption)
    need(f"Chunking: {data['chunk_size_tokens']}/{data['chunk_overlap_tokens']}" in provenance,
         f"caption {provenance!r} lacks the chunk size and overlap")
    return f"cards {cards}; caption {provenance!r}"


def eval_items(page, ctx) -> str:
    items = ctx["api"].get(f"/api/v1/docs/{DOC}/eval-items").json()["items"]
    need(bool(items), f"the API has no eval items for {DOC}")
    panel = open_tab(page, "Retrieval")
    question = panel.get_by_label("Question").input_value()
    need(question == items[0]["question"], f"the Question box holds {question!r}, not the first eval item's")
    pick(page, panel, "Optional query_id", items[0]["query_id"])
    ctx["query"] = items[0]
    answer = items[0].get("expected_answer") or ""
    desired = visible_text(panel.locator(".paper-answer-box").first)
    need(not answer or " ".join(answer.split()) in desired, f"Desired Answer shows {desired!r}, not {answer!r}")
    return (f"Question box = first of {len(items)} eval items ({items[0]['query_id']}); query_id picked; "
            f"Desired Answer box: {desired[:80]!r}")


def _run_search(page, panel) -> None:
    panel.get_by_role("button", name="Run Search").click()
    settle(page)
    panel.get_by_text("Result cards").wait_for(timeout=60_000)


def _expected_results(ctx, generate: bool) -> list[dict]:
    body = {"question": ctx["query"]["question"], "k": 10, "query_id": ctx["query"]["query_id"],
            "include_generated_answer": generate}
    return ctx["api"].post(f"/api/v1/docs/{DOC}/search", json=body).json()["results"]


def search(page, ctx) -> str:
    panel = open_tab(page, "Retrieval")
    _run_search(page, panel)
    config = visible_text(panel.get_by_text(re.compile(r"^Retrieval config: ")).first)
    need("=None" not in config, f"the caption shows a setting the answer lacks: {config!r}")
    expected = _expected_results(ctx, generate=False)
    ctx["results"] = expected
    need(bool(expected), "the API returned no results")
    return f"caption {config!r}; 'Result cards' shown; the API gives {len(expected)} results for the same body"


def results_table(page, ctx) -> str:
    panel = open_tab(page, "Retrieval")
    grid = panel.locator('[data-testid="stDataFrame"]').first
    grid.wait_for()
    headers, rows = grid_rows(grid)
    expected = ctx["results"]
    need(len(rows) == len(expected), f"the results table has {len(rows)} rows, the API {len(expected)} results")
    ids = [r["chunk_id"] for r in expected]
    shown = [next((c for c in row if c in ids), None) for row in rows]
    need(shown == ids, f"the table's chunk ids {shown} are not the API's {ids} in rank order")
    return f"st.dataframe with {len(rows)} rows in the API's order; columns {headers}"


def result_cards(page, ctx) -> str:
    panel = open_tab(page, "Retrieval")
    cards = panel.locator('[data-testid="stExpander"]').filter(has_text=re.compile(r"Rank \d+ \|"))
    expected = ctx["results"]
    need(cards.count() == len(expected), f"{cards.count()} result cards, the API {len(expected)} results")
    shown = []
    for card, row in zip(cards.all(), expected):
        card.locator("summary").click()
        code = card.locator('[data-testid="stCode"]').first
        code.wait_for()
        text = code.inner_text().strip()
        need(text and " ".join(text.split())[:60] == " ".join(row["chunk_text"].split())[:60],
             f"card for rank {row['rank']} shows {text[:60]!r}, not its chunk text")
        meta = visible_text(card.locator('[data-testid="stCaptionContainer"]').first)
        need(meta.startswith("dense=") and "fused=" in meta, f"card meta {meta!r}")
        shown.append(len(text))
    return f"{len(shown)} cards, each with its chunk text ({min(shown)}-{max(shown)} chars) and 'dense=|bm25=|fused='"


def search_with_answer(page, ctx) -> str:
    panel = open_tab(page, "Retrieval")
    panel.get_by_text("Generate answer (Local LLM)").click()
    settle(page)
    _run_search(page, panel)
    caption = panel.get_by_text(re.compile(r"^Generation: ")).first
    caption.wait_for()
    status = visible_text(caption)
    error = panel.get_by_text(re.compile(r"^Generation error: ")).first
    why = visible_text(error) if error.count() else ""
    cards = panel.locator('[data-testid="stExpander"]').filter(has_text=re.compile(r"Rank \d+ \|")).count()
    need(cards == len(ctx["results"]), f"{cards} result cards with the answer asked for")
    return f"caption {status!r}; {why[:160]!r}; {cards} result cards still shown"


def page_chunks(page, ctx, doc: str = DOC, page_no: int = INSPECT_PAGE) -> str:
    data = ctx["api"].get(f"/api/v1/docs/{doc}/pages/{page_no}/chunks").json()
    panel = open_tab(page, "Chunk Inspector")
    box = panel.get_by_label("Page", exact=True)
    box.fill(str(page_no))
    box.press("Enter")
    settle(page)
    metrics = {visible_text(m.locator('[data-testid="stMetricLabel"]')): visible_text(m.locator('[data-testid="stMetricValue"]'))
               for m in panel.locator('[data-testid="stMetric"]').all()}
    need(metrics.get("Chunks") == str(data["chunk_count"]) and metrics.get("Page Tokens") == str(data["page_token_count"]),
         f"metrics {metrics}, the API: {data['chunk_count']} chunks, {data['page_token_count']} page tokens")
    cards = panel.locator(".chunk-card").all()
    need(len(cards) == len(data["chunks"]), f"{len(cards)} chunk cards, the API {len(data['chunks'])} chunks")
    for card, chunk in zip(cards, data["chunks"]):
        head = visible_text(card.locator("strong").first)
        need(("| table |" in head) == chunk["is_table"], f"card {head!r} for a chunk with is_table={chunk['is_table']}")
        tokens = card.locator(".tok").count()
        prev = card.locator(".tok-overlap-prev").count()
        need(tokens == len(chunk["tokens"]), f"{chunk['chunk_id']}: {tokens} token spans, {len(chunk['tokens'])} tokens")
        need(prev == min(chunk["overlap_prev_tokens"], tokens), f"{chunk['chunk_id']}: {prev} overlap spans")
    panel.locator('[data-testid="stExpander"]').filter(has_text="Page text").locator("summary").click()
    shown = panel.locator('[data-testid="stExpander"]').filter(has_text="Page text").inner_text()
    need(" ".join(data["page_text"].split())[:80] in " ".join(shown.split()), "the Page text expander lacks the page text")
    overlaps = sum(c["overlap_prev_tokens"] > 0 for c in data["chunks"])
    tables = sum(c["is_table"] for c in data["chunks"])
    return (f"{doc} page {page_no}: {tables} table chunks; metrics {metrics}; {len(cards)} chunk cards with token spans matching the API's "
            f"tokens, {overlaps} with a highlighted overlap; page text shown")


def tables_empty(page, ctx) -> str:
    data = ctx["api"].get(f"/api/v1/docs/{DOC}/tables?limit=500").json()
    panel = open_tab(page, "Tables")
    need(data["total"] == 0, f"{DOC} has {data['total']} tables (expected none in the demo index)")
    need(panel.get_by_text("No extracted tables available for this document.").is_visible(),
         "the empty case's message is missing")
    return f"{DOC}: 'No extracted tables available for this document.' (the API: total 0)"


def tables(page, ctx) -> str:
    doc = ctx["table_doc"]
    data = ctx["api"].get(f"/api/v1/docs/{doc}/tables?limit=500").json()
    pick(page, main_area(page), "Document", f"{doc} |")
    panel = open_tab(page, "Tables")
    need(panel.get_by_text(f"{data['total']} table(s) available").is_visible(), f"no '{data['total']} table(s) available'")
    grids = panel.locator('[data-testid="stDataFrame"]')
    headers, rows = grid_rows(grids.first)
    need(len(rows) == data["total"], f"the tables list has {len(rows)} rows, the API {data['total']} tables")
    first = data["items"][0]
    need(panel.get_by_text(first["table_summary"]).first.is_visible(), "the first table's summary is not shown")
    need(grids.count() >= 2, "the selected table's cells were not parsed into a second table")
    cell_headers, cell_rows = grid_rows(grids.nth(1))
    panel.locator('[data-testid="stExpander"]').filter(has_text="Raw markdown").locator("summary").click()
    raw = panel.locator('[data-testid="stExpander"]').filter(has_text="Raw markdown").locator('[data-testid="stCode"]')
    need(first["table_markdown"].splitlines()[0].strip() in raw.inner_text(), "Raw markdown lacks the table's header row")
    return (f"{doc}: '{data['total']} table(s) available', list of {len(rows)} ({headers}); table "
            f"{first['table_id']} parsed into {len(cell_rows)} rows x {len(cell_headers)} columns; raw markdown shown")


def table_search(page, ctx) -> str:
    """A search in the document with tables: its table hits' cards say table and their rows."""
    doc, question = ctx["table_doc"], TABLE_QUESTION
    panel = open_tab(page, "Retrieval")
    box = panel.get_by_label("Question")
    box.fill(question)
    box.press("Control+Enter")
    settle(page)
    _run_search(page, panel)
    body = {"question": question, "k": 10, "include_generated_answer": False}
    expected = ctx["api"].post(f"/api/v1/docs/{doc}/search", json=body).json()["results"]
    tables = [r for r in expected if r["is_table"]]
    need(bool(tables), f"the API found no table chunk for {question!r} in {doc}")
    titles = [visible_text(c.locator("summary")) for c in
              panel.locator('[data-testid="stExpander"]').filter(has_text=re.compile(r"Rank \d+ \|")).all()]
    need(len(titles) == len(expected), f"{len(titles)} result cards, the API {len(expected)} results")
    for title, row in zip(titles, expected):
        want = f"table | {row['table_chunk_kind']} | rows {row['row_start_idx']}..{row['row_end_idx']}" \
            if row["is_table"] else "narrative"
        need(want in title, f"card {title!r} lacks {want!r}")
    return f"{doc}: {len(titles)} result cards, {len(tables)} of them table chunks titled e.g. {titles[0]!r}"


def table_page_chunks(page, ctx) -> str:
    return page_chunks(page, ctx, doc=ctx["table_doc"], page_no=1)


def metrics(page, ctx) -> str:
    panel = open_tab(page, "System Metrics")
    panel.get_by_role("button", name="Refresh Metrics").click()
    settle(page)
    data = ctx["api"].get("/api/v1/metrics").json()
    shown = {visible_text(m.locator('[data-testid="stMetricLabel"]')): visible_text(m.locator('[data-testid="stMetricValue"]'))
             for m in panel.locator('[data-testid="stMetric"]').all()}
    counts = data["generation_counts"]
    expected = {"Gen Total": counts["total"], "Gen OK": counts["ok"], "Gen Skipped": counts["skipped"],
                "Insufficient": counts["insufficient_evidence"], "Gen Error": counts["error"]}
    for label, value in expected.items():
        need(shown.get(label) == str(value), f"{label} shows {shown.get(label)!r}, the API {value}")
    need(panel.get_by_text("Citation Counters").is_visible(), "no Citation Counters")
    return f"metrics {shown} equal the API's counters at that moment"


def local_artifact_tabs(page, ctx) -> dict[str, list[str]]:
    """What the tabs over EvidenceRAG's own local files say (no API call behind them)."""
    seen = {}
    for name in ("Failure Audit", "Embedding Diagnostics", "Run Info", "Pipeline Architecture"):
        panel = open_tab(page, name)
        texts = [visible_text(a) for a in panel.locator('[data-testid="stAlertContainer"]').all() if a.is_visible()]
        seen[name] = texts + [p for p in problems(page) if p.startswith("stexception")]
    return seen


STEPS = [("load", load), ("health in the sidebar", health), ("list documents", documents),
         ("pick a document", pick_document), ("document stats", stats), ("eval items", eval_items),
         ("search, no generated answer", search), ("results table", results_table),
         ("each result's details", result_cards), ("search with generated answer (no LLM)", search_with_answer),
         ("page chunks with the token inspector", page_chunks), ("tables: a document without any", tables_empty),
         ("tables: a document with tables", tables), ("search in it: table results' cards", table_search),
         ("page chunks of its table page", table_page_chunks), ("metrics", metrics)]
