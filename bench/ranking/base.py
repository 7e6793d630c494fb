"""What every ranking variant reads and how its orders are scored: one set at one chunk budget
(``Context``, pickled under ``bench/.work/`` so variants iterate in seconds), the site's ranking
(``v_score``: ``rank.fuse(lexical, vector, "score")``) and the two single-list baselines, and
``score`` (Chroma's metrics: R@5, IoU, recall at a 1,000-token budget). A ``Variant`` maps one
question's inputs to a full reading order of the set's chunks; none of them embeds anything.
"""

from __future__ import annotations

import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from bench import chroma_eval as ce
from bench import quality
from bench import search_eval as se
from bench.chunkers import OURS_EXTRA
from bench.metrics import retrieval_scores
from pipeline.search import rank


@dataclass
class Context:
    """One set at one chunk budget: everything a variant may look at."""

    questions: list[ce.Question]
    corpus_ids: list[str]
    starts: list[int]
    ends: list[int]
    costs: list[int]
    vecs: np.ndarray  # chunks x dim, unit rows
    qvecs: np.ndarray  # questions x dim
    sims: np.ndarray  # questions x chunks cosine
    lexical: list[list[tuple[int, int]]]  # per question, the site's lexical ranking
    doc: np.ndarray  # chunk -> document number
    chunks: ce.ChunkSet  # for the budget metric
    alt: dict | None = None  # name -> per question lexical ranking (``bigram_lexical``)
    term_max: list | None = None  # per question, the largest impact of each known query term
    sentences: list | None = None  # per question, chunk -> best sentence cosine (``sentence_cosines``)
    sentence_terms: list | None = None  # per question, chunk -> best sentence's share of the query's idf

    def __len__(self) -> int:
        return len(self.corpus_ids)


def load_cached(cache: Path, dataset: ce.Dataset, key: str):
    """What ``save_cached`` pickled at ``cache`` under ``key`` for a dataset of the same digest,
    else None (no file, or the set changed since)."""
    if cache.exists():
        saved = pickle.loads(cache.read_bytes())
        if saved["digest"] == dataset.digest:
            return saved[key]
    return None


def save_cached(cache: Path, dataset: ce.Dataset, key: str, value) -> None:
    """Pickle ``value`` at ``cache`` with ``dataset``'s digest (``load_cached`` reads it)."""
    cache.write_bytes(pickle.dumps({"digest": dataset.digest, key: value}))


def prepare(name: str, chunker_names: Sequence[str]) -> list[Context]:
    cache = ce.WORK_DIR / f"ranking_ctx_{name}_{'_'.join(c.rsplit('-', 1)[-1] for c in chunker_names)}.pkl"
    dataset = se.load(name)
    saved = load_cached(cache, dataset, "contexts")
    if saved is not None:
        return [Context(**fields) for fields in saved]
    qvecs = quality.question_vectors(dataset)
    out = []
    for cname in chunker_names:
        chunks = quality.build_chunks(OURS_EXTRA[cname](), dataset)
        vecs, computed, _ = quality.embed_cached(chunks.texts, progress=True)
        index = se.lexical_index(dataset, chunks)
        lexical = [se.lexical_ranking(index, q.text) for q in dataset.questions]
        docs = {c: i for i, c in enumerate(sorted(set(chunks.corpus_ids)))}
        out.append(Context(
            dataset.questions, list(chunks.corpus_ids), chunks.starts.tolist(), chunks.ends.tolist(),
            ce.count_tokens_many(chunks.texts, special=False), vecs.astype(np.float32), qvecs.astype(np.float32),
            (qvecs @ vecs.T).astype(np.float64), lexical, np.array([docs[c] for c in chunks.corpus_ids]), chunks,
        ))
        print(f"{name} {cname}: {len(chunks)} chunks ({computed} embedded)", file=sys.stderr)
    save_cached(cache, dataset, "contexts", [vars(c) for c in out])
    return out


Variant = Callable[[Context, int], list[int]]


def vector_of(ctx: Context, qi: int, sims: np.ndarray | None = None) -> list[tuple[int, float]]:
    s = ctx.sims[qi] if sims is None else sims
    order = np.argsort(-s, kind="stable")
    return [(int(i), float(s[i])) for i in order]


def ids(xs) -> list[int]:
    return [n for n, _ in xs]


def full(ranked: Sequence[int], ctx: Context, qi: int) -> list[int]:
    return se.full_order(ranked, np.argsort(-ctx.sims[qi], kind="stable").tolist())


def v_vector(ctx, qi):
    return ids(vector_of(ctx, qi))


def v_lexical(ctx, qi):
    return se.full_order(ids(ctx.lexical[qi]), list(range(len(ctx))))


def v_score(ctx, qi):
    return full(ids(rank.fuse(ctx.lexical[qi], vector_of(ctx, qi), "score")), ctx, qi)


VARIANTS: dict[str, Variant] = {
    "vector": v_vector,
    "lexical": v_lexical,
    "score": v_score,
}


def score(ctx: Context, orders: list[list[int]], k: int = 5, budget: int = 1000) -> dict[str, np.ndarray]:
    out = {m: [] for m in se.METRICS}
    for q, order in zip(ctx.questions, orders):
        top = [(ctx.corpus_ids[i], ctx.starts[i], ctx.ends[i]) for i in order[:k]]
        r = retrieval_scores(top, q.refs, q.corpus_id)
        out["recall"].append(r["recall"])
        out["iou"].append(r["iou"])
        delivered = ce.budget_ranges(order, ctx.chunks, ctx.costs, budget)
        out["recall_at_budget"].append(retrieval_scores(delivered, q.refs, q.corpus_id)["recall"] if delivered else 0.0)
    return {m: np.array(v) for m, v in out.items()}
