"""An attached run file: ``ragloupe attach NAME --run FILE [--goldset PATH ...]``.

The file is what ``ragloupe eval --run`` reads (evaluate/outside.py): TREC
``qid Q0 docno rank score tag`` or JSON Lines ``{"query_id", "ranked"}``. A run
ranks gold questions by id, so the engine finds a question's id in the gold sets
named at attach (by default every gold set ragloupe knows: diagnostics/gold.py),
matching the question's words (case and spacing aside). A question no run line
answers finds nothing. The file is read again when it changes; a file with bad
lines is refused at attach with its first problems.
"""

from __future__ import annotations

from pathlib import Path

from ragloupe.attached.base import AttachedEngine
from ragloupe.attached.outside_hits import hits_of
from ragloupe.errors import AttachRefused, EngineUnavailable, RagloupeError
from ragloupe.evaluate.goldset import load_goldsets
from ragloupe.evaluate.outside import OutsideRanking, parse_run_file
from ragloupe.retrieve.engines import EngineHit, Question, Scope


def question_key(text: str) -> str:
    return " ".join(text.casefold().split())


class RunFileEngine(AttachedEngine):
    score_meaning = "the run file's score for the unit"

    def __init__(self, attachment, settings):
        super().__init__(attachment, settings)
        self._read: tuple[tuple, OutsideRanking, dict[str, list[str]]] | None = None

    def search(self, question: Question, scope: Scope, k: int) -> list[EngineHit]:
        ranking, ids_of = self._ranking()
        entries = next((ranking.rankings[qid] for qid in ids_of.get(question_key(question.asked or question.text), ())
                        if qid in ranking.rankings), [])
        return hits_of(self.name, [{"unit": e.value, "score": e.score} if e.score is not None else e.value
                                   for e in entries], self.index_units(scope.workspace), scope.filters, k)

    def _ranking(self) -> tuple[OutsideRanking, dict[str, list[str]]]:
        path = Path(self.attachment.options["path"])
        try:
            info = path.stat()
        except OSError as exc:
            raise EngineUnavailable(f"engine {self.name}: cannot read {path} ({exc.strerror or exc})") from None
        stamp = (info.st_mtime_ns, info.st_size)
        if self._read is None or self._read[0] != stamp:
            try:
                ranking = parse_run_file(path)
            except RagloupeError as exc:
                raise EngineUnavailable(f"engine {self.name}: {exc}") from None
            self._read = (stamp, ranking, questions_by_text(self.attachment.options.get("goldsets") or [],
                                                            self.settings))
        return self._read[1], self._read[2]


def questions_by_text(goldsets: list[str], settings) -> dict[str, list[str]]:
    """Each gold question's words -> its query ids, over the gold sets named (default: all known)."""
    from ragloupe.diagnostics.gold import find_goldsets  # the gold sets a face lists; diagnostics sits above

    paths = [Path(p) for p in goldsets] or find_goldsets(settings)
    ids: dict[str, list[str]] = {}
    for goldset in load_goldsets(paths):
        for query in goldset.queries:
            ids.setdefault(question_key(query.question), []).append(query.query_id)
    return ids


def attach_options(path: str, goldsets: list[str]) -> dict:
    """The run file read now: a file with bad lines (or none) is refused with its first problems."""
    file = Path(path).expanduser().resolve()
    ranking = parse_run_file(file)
    if ranking.problems:
        shown = "; ".join(str(p) for p in ranking.problems[:3])
        raise AttachRefused(f"{file.name}: {len(ranking.problems)} problem(s) in the run file: {shown}")
    if not ranking.rankings:
        raise AttachRefused(f"{file.name}: the run file ranks no question")
    named = [str(Path(g).expanduser().resolve()) for g in goldsets]
    for g in named:
        if not Path(g).is_file():
            raise AttachRefused(f"--goldset {g}: no such file")
    return {"path": str(file), "goldsets": named}
