"""The one registry of engines: the built-ins, plugins, and outside systems attached by name.

Every engine a mode can name comes from here (fetch asks the face's
workspace for its registry: Workspace.engines()). Three sources, in order:

- the built-ins of retrieve/engines.py (dense, bm25);
- plugins: each entry point of the group ``ragloupe.engines`` (importlib.metadata)
  names an Engine object, or a class or function that makes one when called with
  no arguments. A package adds an engine with one module and one line in its
  metadata; ragloupe's own files do not change;
- engines attached beside the index with ``ragloupe attach`` (ragloupe.attached).

A plugin or an attachment that cannot be loaded, or whose name is taken or
malformed, is left out with a one-line reason in ``problems``: one bad part never
stops a search that does not name it. The unit signals (unit_bm25, unit_dense)
are listed too, with what their scores mean, but they rank whole units, not
chunks, and fetch computes them beside the built-ins (retrieve/units.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import metadata
from typing import Iterable, Mapping

from ragloupe.errors import InvalidSearch
from ragloupe.retrieve.engines import BUILT_IN, Engine
from ragloupe.retrieve.modes import engine_name_problem

PLUGIN_GROUP = "ragloupe.engines"
UNIT_SIGNALS = {
    "unit_bm25": "BM25 score of the whole unit (a record, or a page under unit_view=all) for the question",
    "unit_dense": "cosine similarity of the question to the unit (its chunks' best, or their mean vector)",
}


@dataclass(frozen=True)
class EngineEntry:
    """One engine of the registry and where it came from."""

    engine: Engine
    origin: str  # built-in | plugin | attached
    source: str = ""  # the plugin's entry point (module:attr, distribution) or the attachment's kind and target

    @property
    def name(self) -> str:
        return self.engine.name


@dataclass(frozen=True)
class EngineRegistry:
    """The engines a face can search, by name, in the order fetch runs them."""

    entries: Mapping[str, EngineEntry]
    problems: tuple[str, ...] = field(default_factory=tuple)

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def get(self, name: str) -> Engine:
        entry = self.entries.get(name)
        if entry is None:
            raise InvalidSearch(f"no engine is called {name!r}; engines: {', '.join(self.entries)}")
        return entry.engine

    def built_in(self) -> tuple[str, ...]:
        """The built-in engines: what ``explain`` runs beside a mode's own engines."""
        return tuple(name for name, entry in self.entries.items() if entry.origin == "built-in")

    def outside(self) -> tuple[str, ...]:
        """The engines that are not built in (plugins and attachments): each is a mode of its own."""
        return tuple(name for name, entry in self.entries.items() if entry.origin != "built-in")

    def describe(self) -> list[dict]:
        """One row per engine (and unit signal) for `ragloupe engines` and the API."""
        rows = [{"name": e.name, "origin": e.origin, "source": e.source, "score": e.engine.score_meaning}
                for e in self.entries.values()]
        rows += [{"name": name, "origin": "unit signal", "source": "retrieve/units.py", "score": meaning}
                 for name, meaning in UNIT_SIGNALS.items()]
        return rows


def build(others: Iterable[EngineEntry] = (), problems: Iterable[str] = ()) -> EngineRegistry:
    """The built-ins, then ``others`` in order (plugins, then attached engines); ``problems``: lines
    already found while loading them."""
    entries: dict[str, EngineEntry] = {e.name: EngineEntry(e, "built-in") for e in BUILT_IN}
    problems = list(problems)
    for entry in others:
        why = _name_problem(entry, entries)
        if why:
            problems.append(why)
        else:
            entries[entry.name] = entry
    return EngineRegistry(entries, tuple(problems))


def plugin_entries(problems: list[str]) -> list[EngineEntry]:
    """Every engine the installed distributions register under ``ragloupe.engines``, sorted by name."""
    found = []
    for point in sorted(metadata.entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
        where = f"{point.value} ({point.dist.name if point.dist else 'unknown distribution'})"
        try:
            loaded = point.load()
            engine = loaded if isinstance(loaded, Engine) and not isinstance(loaded, type) else loaded()
        except Exception as exc:  # a plugin's failure is reported in one line, never a stop
            problems.append(f"plugin engine {point.name!r} from {where} did not load: {type(exc).__name__}: {exc}")
            continue
        if not isinstance(engine, Engine):
            problems.append(f"plugin engine {point.name!r} from {where} has no name, score_meaning and search()")
            continue
        found.append(EngineEntry(engine, "plugin", where))
    return found


def _name_problem(entry: EngineEntry, taken: Mapping[str, EngineEntry]) -> str:
    why = engine_name_problem(entry.name)
    if why:
        return f"{entry.origin} engine from {entry.source}: {why}"
    if entry.name in taken:
        return (f"{entry.origin} engine {entry.name!r} from {entry.source} is left out: the name is "
                f"taken by the {taken[entry.name].origin} one")
    return ""
