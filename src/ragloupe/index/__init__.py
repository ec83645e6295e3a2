"""The index: embeddings in Chroma, a manifest that says what they are, one writer at a time.

- ``embedder``  the sentence-transformers model (bundled all-MiniLM-L6-v2 by default)
- ``store``     the Chroma collection (embedded, or a Chroma server via CHROMA_HOST)
- ``manifest``  what the index holds per source: sha256, state, pages, findings
- ``pipeline``  plan / run_index / status: incremental, repairable indexing
- ``lock``      the flock that keeps a second indexer out
- ``lexical``   BM25 over the chunks the store holds (retrieval's)

See docs/INTERFACES.md for the signatures other stages use.
"""
