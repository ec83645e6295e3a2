"""Retrieval: engines (dense, BM25), fusion, reranking, query rewriting, page view, dynamic cut.

The entry point is ``search.search(query, mode, k, filters, settings) -> Ranking``;
the other modules are its stages, each usable on its own.
"""
