"""Progress on stderr, so stdout keeps only the result (--json stays parseable): the indexer's
bar, and the sentence vectors a command's searches would otherwise stop to encode unseen."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable

from ragloupe.index.pipeline import encoding_sentences_line
from ragloupe.retrieve.modes import runs_dense


class ProgressBar:
    """A tqdm bar on stderr, one ``unit`` per source (a file indexed, a document's sentences
    encoded), filled within one as it embeds (index.pipeline.Progress)."""

    def __init__(self, unit: str = "file"):
        self.unit, self.bar = unit, None

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()

    def update(self, event) -> None:
        from tqdm import tqdm

        if event.stage == "hash":
            return  # hashing is quick; the bar counts the files that are really read
        if self.bar is None:
            if event.total == 0:
                return
            self.bar = tqdm(total=event.total, unit=self.unit, file=sys.stderr, dynamic_ncols=True,
                            bar_format="{l_bar}{bar}| {n:.1f}/{total_fmt} " + self.unit
                                       + "s [{elapsed}<{remaining}]")
        if event.stage == "done":  # close() draws the last line, once
            self.bar.n = event.total
            self.bar.set_description_str("done", refresh=False)
            return
        # Never backwards: "write" reports a file's start again (part 0) after its embedding.
        self.bar.n = max(self.bar.n, min(event.done + event.part, event.total))
        name = Path(event.path).name if event.path else ""
        self.bar.set_description_str(f"{event.stage:<6} {name[:40]}".rstrip(), refresh=False)
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
