"""A small hand-written corpus for the retrieval tests, indexed into a real Chroma store.

Twelve chunks in two documents: a "report" of PDF pages (two chunks on page
3, one degraded page) and a "guidance" records file. Small enough to embed
in a second, varied enough that dense and BM25 disagree on some queries.
Built with the real embedder and the index engineer's Store, without the
ingest pipeline, so these tests do not depend on PDF extraction.
"""

from __future__ import annotations

from pathlib import Path

from ragloupe.config import Settings
from ragloupe.models import Chunk

REPORT = [
    (1, 0, "clean", "NHS Grampian annual report and accounts for the year ended 31 March 2021."),
    (2, 0, "clean", "The Board met its revenue resource limit of £1,278,771 thousand with an "
                    "underspend of £769 thousand against the core revenue resource limit."),
    (3, 0, "clean", "Staff wellbeing was supported throughout the COVID-19 pandemic with "
                    "rest areas, counselling and flexible working."),
    (3, 1, "clean", "Vaccination clinics delivered over 500,000 doses across Aberdeen, "
                    "Aberdeenshire and Moray during 2020/21."),
    (4, 0, "degraded", "A&E four hour performance was 90% in March against a 95% standard."),
    (5, 0, "clean", "Capital expenditure of £45.2m funded the Baird Family Hospital and "
                    "the ANCHOR Centre construction."),
    (6, 0, "clean", "The Integration Joint Boards reported a combined deficit for the year, "
                    "funded from reserves."),
]
GUIDANCE = [
    ("1", "Introduction", "The Seveso III Directive 2012/18/EU requires operators of hazardous "
                          "sites to prevent major accidents involving dangerous substances."),
    ("3.2", "Risk management", "Risk management for Natech events follows ISO 31000, the "
                               "international standard for risk management frameworks."),
    ("4.1", "Natural hazards", "Floods, earthquakes and lightning can trigger releases of "
                               "hazardous materials from storage tanks."),
    ("4.6.1", "Equipment", "Pipes of DN50 and below with a wall thickness of 10 mm are "
                           "vulnerable to flood-borne debris."),
    ("5.5", "Databases", "The eNATECH database collects Natech accident reports for lessons learned."),
]


RETRIEVAL_SETTINGS = dict(fusion="rrf", rrf_k=60, weight_dense=1.0, weight_bm25=1.0,
                          candidate_window=50, page_aggregation="max", lexical_rerank=False,
                          lexical_rerank_weight=0.3, rerank_window=0, dynamic_cut="none",
                          cross_encoder_model="", bm25_k1=1.5, bm25_b=0.75)


def corpus_chunks() -> list[Chunk]:
    chunks = [Chunk(chunk_id=f"report-p{page}-{pos}", doc_id="report", page=page, position=pos,
                    text=text, n_tokens=len(text.split()), quality=quality,
                    section="PERFORMANCE REPORT" if page in (2, 4) else "",
                    reason="" if quality == "clean" else "many non-alphabetic characters")
              for page, pos, quality, text in REPORT]
    chunks += [Chunk(chunk_id=f"guidance-{rid}", doc_id="guidance", page=n, position=0, text=text,
                     n_tokens=len(text.split()), quality="clean", section=title,
                     record_id=rid, title=title)
               for n, (rid, title, text) in enumerate(GUIDANCE, start=1)]
    return chunks


def build_index(root: Path, embedder, chunks: list[Chunk] | None = None) -> Settings:
    """Index ``chunks`` (default: the corpus above) under root; return settings pointing there."""
    from ragloupe.index.store import open_store

    # The retrieval settings the tests reason about are pinned here, so a change
    # of defaults (the evaluation tunes them) does not change what a test checks.
    settings = Settings.from_env(index_dir=root / "index", runs_dir=root / "runs",
                                 raw_dir=root / "raw", logs_dir=root / "logs", chroma_host="",
                                 llm_backend="none", **RETRIEVAL_SETTINGS)
    for name in ("index_dir", "runs_dir", "raw_dir", "logs_dir"):
        settings.path(name).mkdir(parents=True, exist_ok=True)
    chunks = corpus_chunks() if chunks is None else chunks
    store = open_store(settings)
    store.upsert(chunks, embedder.encode([c.text for c in chunks]))
    store.set_content_marker(f"test-{len(chunks)}")
    return settings
