"""Vector shards by content (IVF-style): a deterministic partition of a site's chunk vectors
into shards of at most ``max_rows`` rows, each with a unit centroid (pure, numpy).

An experiment for issue 11's bytes target (``bench/search_eval.py``'s ``*-ivf`` methods, and
the byte estimates in docs/DECISIONS.md), not yet a ``_search/`` layout: today's clients take
the vectors of the topics whose centroids are closest (``pipeline.client.searchindex``), so a
query's vector bytes are bounded by topic size; shards by content would bound them by
``max_rows`` at every scale.

Partition: k-means (k = ceil(n / max_rows), k-means++ seeding from ``numpy.random.default_rng(seed)``,
``iterations`` Lloyd steps on cosine), then every cluster above ``max_rows`` bisected by 2-means
(same seeding) until none is, a bisection that leaves one side empty splitting in row order.
Same input, same shards: no other randomness, ties go to the lower index.
"""

from __future__ import annotations

import math

import numpy as np


def _unit(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def kmeans(vectors: np.ndarray, k: int, *, seed: int = 0, iterations: int = 20) -> np.ndarray:
    """Cluster label of each row (spherical k-means, k-means++ seeding); deterministic."""
    n = len(vectors)
    if k >= n:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    centres = [int(rng.integers(n))]
    best = 1 - vectors @ vectors[centres[0]]
    for _ in range(1, k):
        weights = np.clip(best, 0, None) ** 2
        total = float(weights.sum())
        pick = int(rng.choice(n, p=weights / total)) if total > 0 else int(np.argmax(best))
        centres.append(pick)
        best = np.minimum(best, 1 - vectors @ vectors[pick])
    c = vectors[centres].copy()
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        labels = np.argmax(vectors @ c.T, axis=1)  # argmax: ties to the lower centroid
        for j in range(k):
            members = vectors[labels == j]
            if len(members):
                c[j] = members.mean(axis=0)
        c = _unit(c)
    return labels


def partition(vectors: np.ndarray, max_rows: int, *, seed: int = 0, iterations: int = 20) -> list[np.ndarray]:
    """Row indices of each shard (ascending within a shard; shards ordered by their first row),
    every shard at most ``max_rows`` rows. ``vectors``: unit rows."""
    vectors = np.asarray(vectors, dtype=np.float32)
    n = len(vectors)
    if n == 0:
        return []
    labels = kmeans(vectors, math.ceil(n / max_rows), seed=seed, iterations=iterations)
    todo = [np.flatnonzero(labels == j) for j in np.unique(labels)]
    out = []
    while todo:
        rows = todo.pop()
        if len(rows) <= max_rows:
            out.append(rows)
            continue
        halves = kmeans(vectors[rows], 2, seed=seed, iterations=iterations)
        left, right = rows[halves == 0], rows[halves == 1]
        if not len(left) or not len(right):
            left, right = rows[: len(rows) // 2], rows[len(rows) // 2 :]
        todo += [left, right]
    return sorted(out, key=lambda r: int(r[0]))


def group_partition(vectors: np.ndarray, groups: np.ndarray, max_rows: int, *, seed: int = 0,
                    iterations: int = 20) -> list[np.ndarray]:
    """Shards of whole groups (documents): groups clustered by their unit mean (k-means, k =
    ceil(rows / max_rows)), each cluster's groups packed in group order into shards of at most
    ``max_rows`` rows; a group bigger than ``max_rows`` is split by ``partition``. A document
    then never straddles two shards unless it must. ``groups``: a label per row."""
    vectors = np.asarray(vectors, dtype=np.float32)
    labels = sorted(set(groups.tolist()))
    members = {g: np.flatnonzero(groups == g) for g in labels}
    means = _unit(np.vstack([vectors[members[g]].mean(axis=0) for g in labels]))
    clusters = kmeans(means, min(len(labels), math.ceil(len(vectors) / max_rows)), seed=seed, iterations=iterations)
    out: list[np.ndarray] = []
    for c in sorted(set(clusters.tolist())):
        current: list[np.ndarray] = []
        size = 0
        for g, label in zip(labels, clusters.tolist()):
            if label != c:
                continue
            rows = members[g]
            if len(rows) > max_rows:
                out += [rows[part] for part in partition(vectors[rows], max_rows, seed=seed, iterations=iterations)]
                continue
            if size + len(rows) > max_rows:
                out.append(np.sort(np.concatenate(current)))
                current, size = [], 0
            current.append(rows)
            size += len(rows)
        if current:
            out.append(np.sort(np.concatenate(current)))
    return sorted(out, key=lambda r: int(r[0]))


def centroids(vectors: np.ndarray, shards: list[np.ndarray]) -> np.ndarray:
    """The unit mean of each shard's rows."""
    return _unit(np.vstack([vectors[rows].mean(axis=0) for rows in shards]))


def probe(query: np.ndarray, centres: np.ndarray, shards: list[np.ndarray], *, shards_max: int, rows_max: int) -> np.ndarray:
    """Rows a query reads: the shards of the closest centroids, at most ``shards_max`` and
    ``rows_max`` rows in all, the closest always (the clients' rule for topics)."""
    order = np.argsort(-(centres @ query), kind="stable")
    chosen, taken = [], 0
    for s in order.tolist():
        if len(chosen) == shards_max or (chosen and taken + len(shards[s]) > rows_max):
            break
        chosen.append(shards[s])
        taken += len(shards[s])
    return np.sort(np.concatenate(chosen))


def neighbourhoods(centres: np.ndarray, shards: list[np.ndarray], size: int) -> list[np.ndarray]:
    """Per shard, its rows and those of the ``size`` - 1 shards whose centroids are closest to
    its own: files a query could read whole, one request for what ``probe`` takes from
    ``size`` shards (each row then stored ``size`` times)."""
    out = []
    for s in range(len(shards)):
        near = np.argsort(-(centres @ centres[s]), kind="stable")[:size]
        near = [s] + [int(t) for t in near if int(t) != s][: size - 1]
        out.append(np.sort(np.concatenate([shards[t] for t in near])))
    return out
