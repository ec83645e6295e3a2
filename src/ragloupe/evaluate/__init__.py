"""Evaluation: gold sets in, deterministic run reports out, runs compared, misses explained.

- goldset.py   load the three gold-set formats; validate them against the index
- metrics.py   Hit@k, Recall@k, MRR, nDCG@k, rank survival, where recall stops improving
- stats.py     bootstrap CIs and the paired randomisation test (scipy.stats)
- taxonomy.py  failure codes FP1-FP7 and HIT, pure classifiers with evidence
- audit.py     suspected gold-label errors (the answer is on another page)
- runs.py      evaluate() -> RunReport JSON under runs_dir; load_run, list_runs
- not_indexed.py  questions about documents the index does not hold: not scored, and said
- compare.py   compare(run_a, run_b): paired deltas, p-values and a plain verdict
- coverage.py  where the gold pages sit (tenth, section, table or prose) against the documents'
               pages, flagged skews, and a warning when a learned model leans on one (pure;
               coverage_text.py words it, coverage_sources.py reads the index and the model)
- ci_gates.py  quality gates for CI: floors on a run, a candidate worse than its baseline
- outside.py   rankings made outside ragloupe (run files, retrievers) scored like its own runs
- query_path.py, reports.py  the path a question took, and run reports written on disk
- drafting.py, usersets.py  gold questions drafted with an LLM; the user's own gold sets
- tuning.py    out-of-fold tuning, with tune_space, tune_folds, tune_replay, tune_indexes,
               tune_trainer (learned fusion) and tune_report
- table_structure.py  the ICDAR 2013 table structure metric
"""
