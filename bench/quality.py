"""Embeddings cached per text, and paired comparisons of per-question scores.

Embeddings are cached per text (``bench/.work/textemb.sqlite``: sha256(model, text) -> vector),
so variants of a chunker that share most chunks only embed what changed (``chroma_eval.evaluate``,
the search evals). A vector computed in a different batch differs by float noise only (≤ 1.2e-7,
see bench/README.md). Paired comparisons: ``paired`` and the budget-averaged helpers below it.
"""

from __future__ import annotations

import hashlib
import math
import sqlite3
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from bench import WORK
from bench import chroma_eval as ce

TEXT_CACHE = WORK / "textemb.sqlite"
DIM = 384


# --------------------------------------------------------------------------- embeddings


class TextCache:
    """sha256(model id, text) -> float32 vector, in one sqlite file."""

    def __init__(self, path: Path = TEXT_CACHE):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), timeout=60)
        self.db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB)")

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256((ce.MODEL_ID + "\0" + text).encode("utf-8")).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), 500):
            part = uniq[i : i + 500]
            q = f"SELECT key, vec FROM emb WHERE key IN ({','.join('?' * len(part))})"
            for k, blob in self.db.execute(q, part):
                out[k] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO emb VALUES (?, ?)",
            [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
        )
        self.db.commit()


def embed_cached(texts: Sequence[str], *, batch_size: int = 32, progress: bool = False) -> tuple[np.ndarray, int, float]:
    """(normalized MiniLM vectors of ``texts``, how many were computed, seconds spent computing)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32), 0, 0.0
    cache = TextCache()
    keys = [TextCache.key(t) for t in texts]
    have = cache.get_many(keys)
    missing = list(dict.fromkeys(k for k in keys if k not in have))
    seconds = 0.0
    if missing:
        first = {k: t for k, t in zip(keys, texts) if k in set(missing)}
        todo = [first[k] for k in missing]
        t0 = time.perf_counter()
        vecs = ce.embed(todo, batch_size=batch_size, progress=progress)
        seconds = time.perf_counter() - t0
        fresh = dict(zip(missing, vecs))
        cache.put_many(fresh)
        have.update(fresh)
    return np.stack([have[k] for k in keys]).astype(np.float32), len(missing), seconds


def question_vectors(dataset: ce.Dataset) -> np.ndarray:
    return embed_cached([q.text for q in dataset.questions])[0]


# --------------------------------------------------------------------------- paired comparison


def budget_averaged(per_budget: dict[str, dict[str, dict[str, list[float]]]]) -> dict[str, dict[str, list[float]]]:
    """Per method and metric, each question's score averaged over the chunk budgets
    (``per_budget[chunker][method][metric]``: per-question values, every chunker the same methods)."""
    first = next(iter(per_budget.values()))
    return {m: {x: np.mean([per_budget[c][m][x] for c in per_budget], axis=0).tolist() for x in first[m]} for m in first}


def summarise(averaged: dict[str, dict[str, list[float]]]) -> dict[str, dict[str, float]]:
    """Per method and metric, the mean over questions, in percent."""
    return {m: {x: 100 * float(np.mean(v)) for x, v in scores.items()} for m, scores in averaged.items()}


def paired_methods(averaged: dict[str, dict[str, list[float]]], pairs) -> dict[str, dict[str, dict[str, float]]]:
    """``paired`` per metric for each (a, b) of ``pairs``, named ``"a vs b"``."""
    return {f"{a} vs {b}": {x: paired(averaged[a][x], averaged[b][x]) for x in averaged[a]} for a, b in pairs}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided binomial sign test (ties dropped)."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def paired(a: Sequence[float], b: Sequence[float], *, n_boot: int = 10000, seed: int = 0) -> dict[str, float]:
    """Paired comparison of per-question scores ``a`` vs ``b`` (same questions, same order),
    in percentage points: mean(a - b), bootstrap 95 % CI and two-sided p, sign test."""
    d = 100 * (np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n_boot, len(d)))
    means = d[idx].mean(axis=1)
    p_boot = 2 * min(float(np.mean(means <= 0)), float(np.mean(means >= 0)))
    eps = 1e-9
    wins, losses = int(np.sum(d > eps)), int(np.sum(d < -eps))
    return {
        "mean_diff": float(d.mean()),
        "ci_low": float(np.percentile(means, 2.5)),
        "ci_high": float(np.percentile(means, 97.5)),
        "p_bootstrap": min(1.0, p_boot),
        "wins": wins,
        "losses": losses,
        "ties": int(len(d) - wins - losses),
        "p_sign": sign_test(wins, losses),
    }
