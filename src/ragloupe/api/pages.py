"""Cited pages over HTTP: the indexed file itself, and one page of it as an image.

    GET /api/v1/docs/{doc_id}/file                 the PDF as indexed (a link "#page=N" opens it at N)
    GET /api/v1/docs/{doc_id}/pages/{page}/image   page N rendered as PNG (?width=px)

Only files the manifest names, unchanged since indexing (source_pages.py),
are served; a citation in an answer carries both links (``citation_links``).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, Response

from ragloupe.source_pages import MAX_RENDER_WIDTH_PX, RENDER_WIDTH_PX, render_page, source_file

router = APIRouter(prefix="/api/v1/docs", tags=["documents"])


def citation_links(doc_id: str, page: int | None, record_id: str = "") -> dict[str, str | None]:
    """Where a client opens a cited page: the file at that page, and the page as an image
    (None for a record, which has no page to show)."""
    if not doc_id or record_id or not page:
        return {"link": None, "page_image": None}
    return {"link": f"/api/v1/docs/{doc_id}/file#page={page}",
            "page_image": f"/api/v1/docs/{doc_id}/pages/{page}/image"}


@router.get("/{doc_id}/file")
def document_file(doc_id: str, request: Request) -> Any:
    """The file the document was indexed from (404 when it is gone or changed since)."""
    path = source_file(request.app.state.resources.settings, doc_id)
    return FileResponse(path, media_type="application/pdf" if path.suffix.lower() == ".pdf" else None,
                        content_disposition_type="inline", filename=path.name)


@router.get("/{doc_id}/pages/{page_no}/image")
def page_image(doc_id: str, page_no: int, request: Request,
               width: int = Query(RENDER_WIDTH_PX, ge=100, le=MAX_RENDER_WIDTH_PX)) -> Response:
    """Page ``page_no`` (1-based) of the document's PDF as PNG."""
    path = source_file(request.app.state.resources.settings, doc_id)
    return Response(render_page(path, page_no, width), media_type="image/png")
