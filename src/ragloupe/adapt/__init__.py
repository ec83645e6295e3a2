"""Adapting the embedding model to the indexed corpus (`ragloupe adapt`): pairs made from the
corpus's own text (pairs.py), fine-tuning (training.py), the before/after comparison and the
rule that keeps or drops the adapted model (compare.py), and the run that ties them to the
index (run.py; the re-embedding swap itself is index/swap.py)."""
