"""The index: embeddings in Chroma, a manifest that says what they are, one writer at a time.

- ``pipeline``       plan / run_index / status: incremental, repairable indexing
- ``store``          the Chroma collection (embedded, or a Chroma server via CHROMA_HOST)
- ``manifest``       what the index holds per source: sha256, state, pages, findings
- ``lock``           the flock that keeps a second indexer out
- ``embedder``       the sentence-transformers model (bundled all-MiniLM-L6-v2 by default);
  ``onnx_encoder``, ``remote_embedder`` and ``model_files`` its other back ends and what a model says
- ``lexical``        BM25 over chunk texts (bm25s or rank-bm25, same scores)
- ``chunk_columns``  every chunk of a store in columns, read instead of Chroma's metadata
- ``lexical_saved``, ``derived_saved``  the chunk BM25 and the other things built from the store's
  content, saved beside it and loaded after a restart

See docs/INTERFACES.md for the signatures other stages use.
"""
