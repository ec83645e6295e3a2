"""Progress on stderr, so stdout keeps only the result (--json stays parseable): the indexer's
bar, and the sentence vectors a command's searches would otherwise stop to encode unseen."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

from ragloupe.index.pipeline import encoding_sentences_line
from ragloupe.retrieve.modes import runs_dense


FILE_STAGES = ("ingest", "embed", "write")


class ProgressBar:
    """A tqdm bar on stderr, one ``unit`` per source (a file indexed, a document's sentences
    encoded), filled within one as it embeds (index.pipeline.Progress). An index run's bar holds
    its files, then the unchanged documents whose sentence vectors it encodes after them."""

    def __init__(self, unit: str = "file"):
        self.unit, self.bar = unit, None
        self.files = 0  # the run's files, counted before its "sentences" steps

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def update(self, event) -> None:
        from tqdm import tqdm

        if event.stage == "hash":
            return  # hashing is quick; the bar counts the files that are really read
        if event.stage in FILE_STAGES:
            self.files = event.total
        before = self.files if event.stage == "sentences" else 0
        if self.bar is None:
            total = before + event.total + getattr(event, "later", 0)
            if total == 0:
                return
            self.bar = tqdm(total=total, unit=self.unit, file=sys.stderr, dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} " + self.unit
                                       + "s [{elapsed}<{remaining}]")
        if event.stage == "done":  # close() draws the last line, once
            self.bar.n = self.bar.total
            self.bar.set_description_str("done", refresh=False)
            return
        # Never backwards: "write" reports a file's start again (part 0) after its embedding.
        self.bar.n = max(self.bar.n, min(before + event.done + event.part, self.bar.total))
        name = Path(event.path).name[:40] if event.path else ""
        if event.stage == "sentences":
            label = f"encoding sentence vectors of {name} ({event.done + 1} of {event.total})"
        else:
            label = f"{event.stage:<6} {name}".rstrip()
        self.bar.set_description_str(label, refresh=False)
        self.bar.refresh()


def encode_missing_sentences(workspace, modes: Iterable[str] = (), doc_ids: Iterable[str] | None = None,
                             explain: bool = False) -> None:
    """Before a command searches ``doc_ids`` (default: the whole index) in ``modes``: encode the
    sentence vectors its first search would otherwise stop to encode with nothing shown
    (Workspace.encode_missing_sentences), with one line on stderr saying why, then a bar.
    Nothing when no mode runs the dense engine or none are missing."""
    if not runs_dense(modes, explain):
        return
    doc_ids = list(doc_ids) if doc_ids is not None else None
    missing = workspace.missing_sentences(doc_ids)
    if not missing:
        return
    print(f"ragloupe: {encoding_sentences_line(len(missing))} ...", file=sys.stderr, flush=True)
    with ProgressBar(unit="document") as bar:
        workspace.encode_missing_sentences(doc_ids, progress=bar.update)
