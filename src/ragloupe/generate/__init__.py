"""Answers you can check: LLM clients, answers with citations, and their audit.

- llm.get_client(settings) -> LlmClient: Ollama, OpenAI-compatible, embedded (Gemma 3 270M) or none;
- answer.answer(query, ranking, settings) -> Answer: text, citations, passages kept, chunks cut;
- groundedness.screen(answer_text, citations, passages) -> Screen: a model-free check of figures,
  standards and legal acts against the cited passages;
- spans.find_span(quote, source_text) -> Span | None: where a quoted piece of evidence sits;
- claims.check_claims(answer, client) -> ClaimReport: LLM claim extraction, verification and a 0-10 score
  (claim_evidence, claim_report, modelfree: its excerpts, its report, the checks without a model);
- answer_gates.check_gates(chunks, indexed_units) -> GateReport: the context checked before generation;
- prompt, citations, evidence, derivation: the prompt, citations parsed, each citation's backing
  span, the arithmetic the screen accepts; conversation: a chat over the index; check: an answer
  ragloupe did not write; calllog: every LLM call logged; embedded: the bundled Gemma model.
"""
