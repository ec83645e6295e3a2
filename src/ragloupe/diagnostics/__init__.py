"""What the workbench shows, as plain data for the pages (no Streamlit here).

- comparison.py   several retrieval modes in one table, a row per page or chunk
- labels.py       a row of Search & compare made a gold item
- explorer.py     the Chunk Explorer's queries; ingestion.py: what ingestion did per document
- index_view.py   the Index page's view of the next run
- gold.py         which gold question a typed question is
- outside_view.py an uploaded run file scored and compared with ragloupe's modes
- projections.py  2-D maps of the embeddings; run_map.py: a run's misses on that map
- system.py       what is in force and what it runs on; doctor.py: `ragloupe doctor`'s checks
"""
