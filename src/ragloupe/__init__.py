"""ragloupe: see why a RAG pipeline over technical documents retrieved what it did."""

__version__ = "0.1.0"
