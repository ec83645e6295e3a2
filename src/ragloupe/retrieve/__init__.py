"""Retrieval: the engines and every stage of a search after them.

The entry point is ``search.search(query, mode, k, filters, workspace=...) -> Ranking``,
which is ``replay(fetch(...))``; the other modules are its stages, each usable on its own.

- search.py          search() and ranking_to_dict()
- fetch.py           fetch(): the part that reads the index, once per question -> Candidates
- replay.py          replay(): the pure rest of a search over Candidates -> Ranking
- modes.py           what a search asks for (mode, k, filters) and its checks
- stage_configs.py   the frozen settings each stage reads
- engines.py         dense (Chroma) and BM25 search over the chunks
- units.py           whole-unit signals (a record or page scored as a whole)
- query_analysis.py  the periods, amounts and codes a question names; expansion.py: their BM25 variants
- rewrite.py         LLM query rewriting
- fusion.py          weighted RRF and min-max fusion; learned.py + features.py + term_arrays.py: learned fusion
- rerank.py          the lexical and cross-encoder rerankers
- prefer_tables.py   table chunks up for questions that ask for a figure
- doc_periods.py     each document's fiscal period
- cut.py             the dynamic cut; aggregate.py: the page view
"""
