"""Candidate relevance signals beyond the two engines' fusion, each measured against the default and BM25 alone.

    RAGLOUPE_INDEX_DIR=<benchmark index> .venv/bin/python benchmarks/signals.py
        [--parts lexical,reader,held_out] [--reader-cache PATH] [--out PATH]

On an index holding every family's documents (the three Grampian reports,
data/benchmarks/natech/guidance.csv and the PDFs of data/benchmarks/manuals,
as benchmarks/tune_oof.py says). Every question is asked in its own document's
scope at page (or record) level, as `ragloupe tune` asks the tuning sets.

Families (tuning sets only, as benchmarks/tune_oof.py reads them): whole-report
(grampian/whole/*.whole.json), benchmark (grampian/eval/*.eval.json), manuals
(manuals/eval/*.eval.json), natech (guidance.gold.json) and the paraphrased
sets (every data/benchmarks/<corpus>/paraphrased/*.json that is not held out,
as ``<corpus>-paraphrased``, and natech/paraphrased.gold.json). ``held_out`` scores the default, BM25 alone and the
options this script marks as winners on the *.holdout.json sets and
guidance2.gold.json, reported apart as held out.

Options, each beside the default (mode hybrid, the settings in force) and BM25
alone (mode bm25, query analysis and the period boost off, as tune's "BM25
alone"):

- ``lexical``: BM25 pseudo-relevance feedback (RM3-style words of the first
  pass's best chunks added to a second pass) in the hybrid default and in BM25
  alone; term proximity (the shortest run of the chunk's words holding the
  question's words it holds, blended over the first candidates). Both lost and
  live only here.
- ``reader``: the hybrid+read mode (retrieve/reader.py) with the embedded Gemma
  3 270M: yes/no log-probability and query likelihood, reading the first 3 or 5
  candidates, replacing the fused score or blended with it.

Per family and option: Hit@1 / Hit@3 / MRR@10, the paired permutation test
(evaluate/stats.py) on Hit@1 and reciprocal rank against the default and against
BM25 alone, and seconds per question (the fetch, the replay, the reader's
reading at the load the JSON states). An option "wins" when its Hit@1 is at
least the default's on every family and above it on one.
Written to benchmarks/results/signals.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragloupe.config import PROJECT_ROOT, bootstrap_environment, get_settings

bootstrap_environment()

from ragloupe.evaluate import metrics as M  # noqa: E402
from ragloupe.evaluate.goldset import load_goldset  # noqa: E402
from ragloupe.evaluate.stats import paired_permutation_p  # noqa: E402
from ragloupe.index import lexical  # noqa: E402
from ragloupe.index.lexical import tokenize  # noqa: E402
from ragloupe.retrieve import reader as R  # noqa: E402
from ragloupe.retrieve.engines import EngineHit  # noqa: E402
from ragloupe.retrieve.search import ReplayConfig, fetch, normalise_filters, replay  # noqa: E402
from ragloupe.workspace import Workspace  # noqa: E402

BENCH = PROJECT_ROOT / "data/benchmarks"
RESULTS = PROJECT_ROOT / "benchmarks/results/signals.json"
PARTS = ("lexical", "reader", "held_out")
K = 10
OFF = {"query_analysis": False, "period_boost": 0.0}  # BM25 alone, as tune's baseline
FEEDBACK = [(10, 10, 0.3), (10, 5, 0.5), (20, 10, 0.2), (5, 3, 0.3)]  # (terms, docs, weight)
PROXIMITY = [(5, 0.2), (10, 0.3), (5, 0.5)]  # (window, weight)
READER = [(signal, window, weight) for signal in ("yesno", "likelihood") for window in (3, 5)
          for weight in (1.0, 0.5, 0.3)]
READER_CHARS = 600


def families() -> dict[str, list[Path]]:
    """Tuning gold sets by family (never a *.holdout.json, guidance2 or anything under confirm/)."""
    found = {"whole-report": sorted(BENCH.glob("grampian/whole/*.whole.json")),
             "benchmark": sorted(BENCH.glob("grampian/eval/*.eval.json")),
             "manuals": sorted(BENCH.glob("manuals/eval/*.eval.json")),
             "natech": [BENCH / "natech/guidance.gold.json"]}
    for folder in sorted(BENCH.glob("*/paraphrased")):
        found[f"{folder.parent.name}-paraphrased"] = sorted(p for p in folder.glob("*.json")
                                                            if not p.name.endswith(".holdout.json"))
    found["natech-paraphrased"] = [BENCH / "natech/paraphrased.gold.json"]
    return {name: [p for p in paths if p.is_file() and "confirm" not in p.parts] for name, paths in found.items()
            if any(p.is_file() for p in paths)}


def held_out() -> dict[str, list[Path]]:
    found = {"whole-report": sorted(BENCH.glob("grampian/whole/*.holdout.json")),
             "manuals": sorted(BENCH.glob("manuals/eval/*.holdout.json")),
             "natech": [BENCH / "natech/guidance2.gold.json"]}
    for folder in sorted(BENCH.glob("*/paraphrased")):
        found[f"{folder.parent.name}-paraphrased"] = sorted(folder.glob("*.holdout.json"))
    return {name: [p for p in paths if p.is_file()] for name, paths in found.items() if any(p.is_file() for p in paths)}


def questions_of(paths: list[Path], held: set[str]) -> list:
    out = []
    for path in paths:
        out += [q for q in load_goldset(path).queries if q.doc_id in held]
    return out


class Bench:
    """One fetch per question and engine setting, replays for every option, metrics and timings."""

    def __init__(self, settings, workspace):
        self.settings, self.workspace = settings, workspace
        self.fetched: dict[tuple, list] = {}
        self.fetch_s: dict[tuple, list[float]] = {}

    def candidates(self, family: str, questions: list, engine: dict) -> list:
        key = (family, tuple(sorted(engine.items())))
        if key not in self.fetched:
            s = self.settings.replace(**engine)
            found, seconds = [], []
            for q in questions:
                started = time.perf_counter()
                found.append(fetch(q.question, "hybrid", K, normalise_filters({"doc_ids": [q.doc_id]}),
                                   workspace=self.workspace.with_settings(s), with_periods=True))
                seconds.append(time.perf_counter() - started)
            self.fetched[key], self.fetch_s[key] = found, seconds
        return self.fetched[key]

    def rows(self, questions: list, candidates: list, mode: str, replay_settings: dict, after=None,
             reader=None) -> tuple[list[dict], list[float]]:
        """Per question: hit@1, hit@3, rr (cut at 10) under the option, and the replay's seconds."""
        config = ReplayConfig.of(self.settings.replace(**replay_settings), mode, K)
        out, seconds = [], []
        for q, c in zip(questions, candidates):
            if reader is not None:
                c = dataclasses.replace(c, reader=reader, mode=mode)
            started = time.perf_counter()
            ranking = replay(c, config)
            units = M.dedupe(p.unit for p in ranking.pages)
            if after is not None:
                units = after(q, c, ranking)
            seconds.append(time.perf_counter() - started)
            m = M.query_metrics(units, q.expected_units, (1, 3, 10))
            out.append({"hit@1": m["hit@1"], "hit@3": m["hit@3"], "rr": m["rr"]})
        return out, seconds


def figures(rows: list[dict]) -> dict:
    n = len(rows)
    return {"n": n, **{k: round(sum(r[k] for r in rows) / n, 4) for k in ("hit@1", "hit@3", "rr")}}


def paired(a: list[dict], b: list[dict]) -> dict:
    out = {}
    for k in ("hit@1", "rr"):
        x, y = [r[k] for r in a], [r[k] for r in b]
        out[k] = {"difference": round((sum(x) - sum(y)) / len(x), 4), "p": round(paired_permutation_p(x, y), 4),
                  "better": sum(u > v for u, v in zip(x, y)), "worse": sum(u < v for u, v in zip(x, y))}
    return out


# -- term proximity (measured here only) ------------------------------------------

def proximity(question_tokens: set[str], text: str) -> float:
    """How close together the chunk holds the question's words: the share of them it holds over the
    length (in words) of the shortest run of its words that holds all of those, as words per run word."""
    words = tokenize(text)
    wanted = [i for i, w in enumerate(words) if w in question_tokens]
    held = {words[i] for i in wanted}
    if len(held) < 2:
        return 0.0
    need, count, best, left = len(held), {}, len(words), 0
    for right in wanted:
        count[words[right]] = count.get(words[right], 0) + 1
        while len(count) == need:
            best = min(best, right - wanted[left] + 1)
            w = words[wanted[left]]
            count[w] -= 1
            if not count[w]:
                del count[w]
            left += 1
    return (len(held) / len(question_tokens)) * (need / best)


def proximity_after(window: int, weight: float):
    def after(q, c, ranking):
        wanted = set(tokenize(q.question))
        hits = list(ranking.hits)
        head = hits[:window]
        if not head or not wanted:
            return M.dedupe(p.unit for p in ranking.pages)
        scores = R.blend([h.score for h in head], [proximity(wanted, h.chunk.text) for h in head], weight)
        order = [h for _, _, h in sorted(zip(scores, range(len(head)), head), key=lambda t: (-t[0], t[1]))]
        units = [h.chunk.unit for h in order] + [p.unit for p in ranking.pages]
        return M.dedupe(units)
    return after


# -- BM25 pseudo-relevance feedback (measured here only; it lost) ----------------------

def feedback_terms(index, query_tokens: list[str], first, eligible, terms: int, docs: int,
                   weight: float) -> list[tuple[str, float]]:
    """RM3-style: each word of the first pass's ``docs`` best chunks weighs its share of the chunk x
    the chunk's share of the first-pass score x idf; the ``terms`` heaviest the question lacks (no
    figures, no word of one chunk only), each at up to ``weight`` (a question word weighs 1)."""
    rows = np.flatnonzero(eligible & (first > 0))
    if not rows.size:
        return []
    top = rows[np.lexsort((rows, -first[rows]))][:docs]
    shares = first[top] / first[top].sum()
    freq, n, own = document_frequencies(index), len(index), set(query_tokens)
    weights: Counter = Counter()
    for row, share in zip(top, shares):
        tokens = tokenize(index.chunks[row].search_text)
        for token, count in Counter(t for t in tokens if t not in own
                                    and not any(ch.isdigit() for ch in t)).items():
            if freq.get(token, 0) >= 2:
                weights[token] += share * count / len(tokens) * math.log(n / freq[token])
    chosen = weights.most_common(terms)
    return [(t, weight * w / chosen[0][1]) for t, w in chosen] if chosen else []


def document_frequencies(index) -> Counter:
    found = index.__dict__.get("_signals_df")
    if found is None:
        found = Counter()
        for chunk in index.chunks:
            found.update(set(tokenize(chunk.search_text)))
        index.__dict__["_signals_df"] = found
    return found


def with_feedback(c, terms: int, docs: int, weight: float):
    """The candidates with their BM25 list made by a second pass: the question plus the feedback words."""
    index = c.corpus
    question = tokenize(c.search_text) + list(c.expansion)
    mask = index.mask(c.filters)
    eligible = mask if mask is not None else np.ones(len(index), dtype=bool)
    first = index.scores(question)
    scores = first.copy()
    for token, w in feedback_terms(index, question, first, eligible, terms, docs, weight):
        scores += w * index.scores([token])
    hits = [EngineHit(chunk, score) for chunk, score in lexical.ranked(index, scores, c.window, c.filters)]
    return dataclasses.replace(c, lists={**c.lists, "bm25": hits})



def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--out", default=str(RESULTS))
    parser.add_argument("--reader-cache", default="", help="a JSON file the reader's scores are kept in between runs")
    parser.add_argument("--families", default="", help="only these families (comma-separated)")
    args = parser.parse_args(argv)
    settings = get_settings()
    workspace = Workspace(settings)
    held = {c.doc_id for c in workspace.store.all_chunks()}
    out_path = Path(args.out)
    results = json.loads(out_path.read_text(encoding="utf-8")) if out_path.is_file() else {}
    results.update({"what": "candidate relevance signals against the default and BM25 alone (benchmarks/signals.py)",
                    "index": str(settings.path("index_dir")), "scope": "each question in its own document",
                    "command": "python benchmarks/signals.py " + " ".join(argv if argv is not None else sys.argv[1:])})
    bench = Bench(settings, workspace)
    wanted = {f.strip() for f in args.families.split(",") if f.strip()}
    fams = {n: p for n, p in families().items() if not wanted or n in wanted}
    for part in [p.strip() for p in args.parts.split(",") if p.strip()]:
        load = [round(os.getloadavg()[0], 1)]
        started = time.perf_counter()
        if part == "lexical":
            entry = lexical_part(bench, fams, held)
        elif part == "reader":
            entry = reader_part(bench, fams, held, settings, args.reader_cache)
        elif part == "held_out":
            entry = held_out_part(bench, held, results)
        else:
            raise SystemExit(f"unknown part {part!r}; use {', '.join(PARTS)}")
        entry["load_average"] = load + [round(os.getloadavg()[0], 1)]
        entry["seconds"] = round(time.perf_counter() - started, 1)
        previous = results.get(part, {})
        if part != "held_out" and wanted and isinstance(previous.get("families"), dict):
            entry["families"] = {**previous["families"], **entry["families"]}
        results[part] = entry
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{part}: {entry['seconds']} s", flush=True)
    return 0


def baselines(bench: Bench, family: str, qs: list) -> tuple[dict, dict, list]:
    plain = bench.candidates(family, qs, {})
    default, default_s = bench.rows(qs, plain, "hybrid", {})
    bm25, _ = bench.rows(qs, plain, "bm25", OFF)
    return {"rows": default, "replay_s": default_s}, {"rows": bm25}, plain


def option_entry(rows, default, bm25, seconds: float) -> dict:
    return {**figures(rows), "vs_default": paired(rows, default), "vs_bm25": paired(rows, bm25),
            "seconds_per_question": round(seconds, 4)}


def lexical_part(bench: Bench, fams: dict, held: set[str]) -> dict:
    out = {}
    for family, paths in fams.items():
        qs = questions_of(paths, held)
        if not qs:
            continue
        default, bm25, plain = baselines(bench, family, qs)
        fetch_s = statistics.median(bench.fetch_s[(family, ())])
        row = {"default": option_entry(default["rows"], default["rows"], bm25["rows"],
                                       fetch_s + statistics.median(default["replay_s"])),
               "bm25": option_entry(bm25["rows"], default["rows"], bm25["rows"], fetch_s)}
        for terms, docs, weight in FEEDBACK:
            label = f"prf t{terms} d{docs} w{weight:g}"
            started = time.perf_counter()
            cands = [with_feedback(c, terms, docs, weight) for c in plain]
            s = fetch_s + (time.perf_counter() - started) / len(plain)
            rows, replay_s = bench.rows(qs, cands, "hybrid", {})
            row[f"hybrid {label}"] = option_entry(rows, default["rows"], bm25["rows"], s + statistics.median(replay_s))
            rows, _ = bench.rows(qs, cands, "bm25", OFF)
            row[f"bm25 {label}"] = option_entry(rows, default["rows"], bm25["rows"], s)
        for window, weight in PROXIMITY:
            rows, replay_s = bench.rows(qs, plain, "hybrid", {}, after=proximity_after(window, weight))
            row[f"hybrid proximity top{window} w{weight:g}"] = option_entry(
                rows, default["rows"], bm25["rows"], fetch_s + statistics.median(replay_s))
        out[family] = row
        print(family, {k: v["hit@1"] for k, v in row.items()}, flush=True)
    return {"families": out, "winners": winners(out)}


def reader_part(bench: Bench, fams: dict, held: set[str], settings, cache_path: str) -> dict:
    reader_settings = settings.replace(llm_backend="embedded")
    reader = R.Reader(reader_settings)
    cache = Path(cache_path) if cache_path else None
    if cache and cache.is_file():
        for key, value in json.loads(cache.read_text()).items():
            R._cache_put(key, value)
    passes, pass_s = 0, 0.0
    out = {}
    for family, paths in fams.items():
        qs = questions_of(paths, held)
        if not qs:
            continue
        default, bm25, plain = baselines(bench, family, qs)
        fetch_s = statistics.median(bench.fetch_s[(family, ())])
        row = {"default": figures(default["rows"]), "bm25": figures(bm25["rows"])}
        for signal, window, weight in sorted(READER, key=lambda t: -t[1]):  # the widest first: it reads
            before = len(R._cache)
            started = time.perf_counter()
            rows, replay_s = bench.rows(qs, plain, "hybrid+read",
                                        {"reader_window": window, "reader_weight": weight,
                                         "reader_passage_chars": READER_CHARS, "reader_signal": signal},
                                        reader=reader)
            read = (len(R._cache) - before) // len(R.SIGNALS)  # passages read now (both signals kept per pass)
            if read:
                passes, pass_s = passes + read, pass_s + time.perf_counter() - started
            label = f"hybrid+read {signal} top{window} w{weight:g}"
            per_pass = pass_s / passes if passes else 0.0
            row[label] = option_entry(rows, default["rows"], bm25["rows"], fetch_s + window * per_pass)
        if cache:
            with R._cache_lock:
                cache.write_text(json.dumps(dict(R._cache)))
        out[family] = row
        print(family, {k: v["hit@1"] for k, v in row.items()}, flush=True)
    return {"families": out, "winners": winners(out), "backend": reader.label,
            "passage_chars": READER_CHARS, "passages_read": passes,
            "seconds_per_passage": round(pass_s / passes, 3) if passes else None,
            "seconds_for_20_candidates": round(20 * pass_s / passes, 2) if passes else None}


def winners(by_family: dict) -> list[str]:
    """Options whose Hit@1 is at least the default's on every family and above it on one."""
    names = set.intersection(*(set(r) for r in by_family.values())) - {"default", "bm25"} if by_family else set()
    won = []
    for name in sorted(names):
        diffs = [r[name]["hit@1"] - r["default"]["hit@1"] for r in by_family.values()]
        if all(d >= 0 for d in diffs) and any(d > 0 for d in diffs):
            won.append(name)
    return won


def held_out_part(bench: Bench, held: set[str], results: dict) -> dict:
    """The default, BM25 alone and every option that won on the tuning families, on the held-out sets."""
    won = [name for part in ("lexical", "reader") for name in results.get(part, {}).get("winners", [])]
    out = {}
    for family, paths in held_out().items():
        qs = questions_of(paths, held)
        if not qs:
            continue
        default, bm25, plain = baselines(bench, f"held-out {family}", qs)
        row = {"default": figures(default["rows"]), "bm25": figures(bm25["rows"])}
        for name in won:
            match = re.match(r"(hybrid|bm25) prf t(\d+) d(\d+) w([\d.]+)$", name)
            if match:
                cands = [with_feedback(c, int(match[2]), int(match[3]), float(match[4])) for c in plain]
                rows, _ = bench.rows(qs, cands, match[1], {} if match[1] == "hybrid" else OFF)
                row[name] = {**figures(rows), "vs_default": paired(rows, default["rows"]),
                             "vs_bm25": paired(rows, bm25["rows"])}
        out[family] = row
    return {"families": out, "options": won, "note": "held out: never used to choose an option"}


if __name__ == "__main__":
    sys.exit(main())
