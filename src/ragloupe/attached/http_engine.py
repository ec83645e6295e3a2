"""An attached HTTP retriever: ``ragloupe attach NAME --http URL``.

For every question ragloupe POSTs a JSON object to URL::

    {"question": "What was the total capital expenditure?", "k": 100,
     "filters": {"doc_ids": ["Grampian-2020-2021"], "pages": [1, 40]}}

(``filters`` holds only what the search was filtered by; a retriever may ignore it:
ragloupe drops the units outside the filters itself) and reads back a JSON object::

    {"ranked": [{"doc_id": "Grampian-2020-2021", "page": 28, "score": 12.3, "text": "..."},
                "guidance#4.6.1", ["Grampian-2021-2022", 4], ...]}

best first, each entry in a form attached/outside_hits.py reads (``score`` and
``text`` optional). An answer later than RAGLOUPE_ATTACHED_TIMEOUT_S, an HTTP
error or a reply that is no such object is one line naming the engine.
"""

from __future__ import annotations

from urllib.parse import urlparse

from ragloupe.attached.base import AttachedEngine
from ragloupe.attached.outside_hits import hits_of
from ragloupe.errors import AttachRefused, EngineBadReply, EngineUnavailable
from ragloupe.httpjson import Service, request_json
from ragloupe.retrieve.engines import EngineHit, Question, Scope


class HttpEngine(AttachedEngine):
    score_meaning = "the retriever's own score for the unit (1/rank where it gives none)"

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        url = self.attachment.options["url"]
        filters = {key: list(value) for key, value in scope.filters.items() if key in ("doc_ids", "pages")}
        service = Service(who=f"engine {self.name} ({url})", unavailable=EngineUnavailable,
                          bad_output=EngineBadReply, timeout_hint="raise RAGLOUPE_ATTACHED_TIMEOUT_S",
                          kind="a retriever")
        reply = request_json("POST", url, {"question": question.text, "k": int(k), "filters": filters},
                             float(self.settings.attached_timeout_s), service)
        ranked = reply.get("ranked")
        if not isinstance(ranked, list):
            raise EngineBadReply(f"engine {self.name} ({url}) answered without a 'ranked' list")
        return hits_of(self.name, ranked, self.index_units(scope.workspace), scope.filters, k)


def attach_options(url: str) -> dict:
    parsed = urlparse(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise AttachRefused(f"--http wants an http:// or https:// URL, got {url!r}")
    return {"url": url}
