"""ragloupe: see why a RAG pipeline over technical documents retrieved what it did.

The pipeline, one stage per package (docs/INTERFACES.md has the signatures):
- ingest/      source files (PDF, HTML, DOCX, CSV/JSONL records) -> pages with quality and findings
- chunking.py, table_chunks.py  pages -> prose and table chunks
- index/       embeddings in Chroma, the manifest, the chunk columns and BM25 saved beside them
- retrieve/    fetch (the engines) and replay (fusion, rerank, cut, page view): search()
- generate/    answers with citations, the gates before generation, groundedness and claim checks
- evaluate/    gold sets, run reports, paired comparison, failure taxonomy, out-of-fold tuning
- diagnostics/ the workbench's view models (no Streamlit)
- workspace.py what one face opens once (Workspace.open): the store, the model, the caches
- cli/, api/, ui/  the three faces: the command, the HTTP API, the app's Streamlit helpers
- config.py (Settings), models.py (the records), errors.py (named errors), content_cache.py, and
  small shared helpers (numbers, textrules, logs, devices, httpjson, collections, source_pages,
  setting_rules)
"""

__version__ = "0.1.0"
