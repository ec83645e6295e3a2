"""Word lists that several stages use, defined once so their differences are deliberate and visible.

Every stage drops the same function words (FUNCTION_WORDS). Each then adds
the few its job needs, and the additions are spelled out here rather than
in three separate lists:

- BM25_STOPWORDS (index.lexical, the reranker): also question words and
  auxiliaries, which carry no retrieval signal (BM25's idf discounts the rest);
- ANSWER_STOPWORDS (numbers: "is this answer in that text?"): also "no",
  "not", "yes" and a few connectives, so an answer is matched on its content;
- HIGHLIGHT_STOPWORDS (the app's query-term highlighting): also question
  words, so "what" is never marked in a passage.

Changing a list changes what BM25 indexes or what matches: measure it
(benchmarks/) before and after.
"""

from __future__ import annotations

FUNCTION_WORDS = frozenset("""
a an and are as at be by for from has have in is it its of on or that the their there this
to was were which with
""".split())

QUESTION_WORDS = frozenset("did do does had how what when where who why will".split())

BM25_STOPWORDS = FUNCTION_WORDS | QUESTION_WORDS | frozenset("""
about been being can could during into over than them these they those whom would
""".split())

ANSWER_STOPWORDS = FUNCTION_WORDS | frozenset("into over than within no not yes our we per".split())

HIGHLIGHT_STOPWORDS = FUNCTION_WORDS | QUESTION_WORDS | frozenset({"within"})
