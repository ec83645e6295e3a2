"""Ingestion: source files in, SourceDoc records (pages, quality, findings) out.

``discover_sources`` finds the files, ``load_source`` reads one of them; see
docs/INTERFACES.md. ``validate_records`` and ``format_findings`` serve
``ragloupe validate``.
"""

from ragloupe.ingest.sources import discover_sources, load_source
from ragloupe.ingest.validate import format_findings, validate_records

__all__ = ["discover_sources", "load_source", "validate_records", "format_findings"]
