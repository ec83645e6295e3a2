"""An attached Python retriever: ``ragloupe attach NAME --python package.module:function``.

The function takes the question (a str) and returns its ranked units, best first,
in any form attached/outside_hits.py reads (``"doc_id#pN"``, ``[doc_id, page]``,
``{"doc_id", "page", "score", "text"}`` ...). It is imported on the first search,
from the Python path of the process that searches (set PYTHONPATH for your module).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ragloupe.attached.base import AttachedEngine
from ragloupe.attached.outside_hits import hits_of
from ragloupe.errors import AttachRefused, EngineBadReply, EngineUnavailable
from ragloupe.evaluate import outside
from ragloupe.retrieve.engines import EngineHit, Question, Scope


def load_function(spec: str) -> Callable[[str], Any]:
    """The function named ``package.module:function``; AttachRefused saying what is wrong."""
    return outside.load_function(spec, "--python", AttachRefused)


class PythonEngine(AttachedEngine):
    score_meaning = "the function's own score for the unit (1/rank where it gives none)"

    def __init__(self, attachment, settings):
        super().__init__(attachment, settings)
        self._function: Callable[[str], Any] | None = None

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        if self._function is None:
            try:
                self._function = load_function(self.attachment.options.get("function", ""))
            except AttachRefused as exc:
                raise EngineUnavailable(f"engine {self.name}: {exc}") from None
        try:
            ranked = self._function(question.text)
        except Exception as exc:  # the user's function: its failure is reported, not ours
            raise EngineUnavailable(f"engine {self.name}: the function raised {type(exc).__name__}: {exc}") from None
        if ranked is None or isinstance(ranked, (str, bytes, Mapping)) or not hasattr(ranked, "__iter__"):
            raise EngineBadReply(f"engine {self.name}: the function returned {type(ranked).__name__}, "
                                 "not a ranked list")
        return hits_of(self.name, list(ranked), self.index_units(scope.workspace), scope.filters, k)


def attach_options(spec: str) -> dict:
    """Check the function imports now, so a typo is refused at attach, not at the first search."""
    load_function(spec)
    return {"function": spec}
