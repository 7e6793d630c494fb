"""``bench/ivf.py``: shards by content are a partition, bounded, deterministic; probing keeps the
clients' rule (closest first, row budget, the closest always).

Run: .venv/bin/python -m pytest bench/test_ivf.py -q   (no model, no data needed)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ivf  # noqa: E402


def unit_rows(n: int, d: int = 16, seed: int = 3) -> np.ndarray:
    m = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_shards_partition_every_row_within_the_bound():
    vectors = unit_rows(1000)
    for max_rows in (1, 37, 100, 1000, 5000):
        shards = ivf.partition(vectors, max_rows)
        rows = np.concatenate(shards)
        assert sorted(rows.tolist()) == list(range(1000))  # every row once
        assert max(len(s) for s in shards) <= max_rows
        assert all((np.diff(s) > 0).all() for s in shards)


def test_a_cluster_of_identical_rows_is_still_split():
    vectors = np.tile(unit_rows(1), (50, 1))  # k-means cannot separate them: split in row order
    shards = ivf.partition(vectors, 8)
    assert max(len(s) for s in shards) <= 8 and sum(len(s) for s in shards) == 50


def test_the_same_vectors_give_the_same_shards():
    vectors = unit_rows(500)
    a, b = ivf.partition(vectors, 64), ivf.partition(vectors.copy(), 64)
    assert [s.tolist() for s in a] == [s.tolist() for s in b]


def test_probe_takes_the_closest_shards_within_the_row_budget():
    vectors = unit_rows(300)
    shards = ivf.partition(vectors, 40)
    centres = ivf.centroids(vectors, shards)
    query = vectors[7]
    rows = ivf.probe(query, centres, shards, shards_max=3, rows_max=80)
    closest = shards[int(np.argmax(centres @ query))]
    assert set(closest.tolist()) <= set(rows.tolist()) and len(rows) <= 80
    # the closest always, even past the budget
    assert set(ivf.probe(query, centres, shards, shards_max=3, rows_max=1).tolist()) == set(closest.tolist())


def test_shards_of_documents_keep_a_document_whole_unless_it_is_too_big():
    vectors = unit_rows(400)
    groups = np.repeat(np.arange(40), 10)  # 40 documents of 10 rows
    groups[:100] = 0  # and one of 100 rows, bigger than a shard
    shards = ivf.group_partition(vectors, groups, 50)
    assert sorted(np.concatenate(shards).tolist()) == list(range(400))
    assert max(len(s) for s in shards) <= 50
    holding = {g: {i for i, s in enumerate(shards) if set(np.flatnonzero(groups == g).tolist()) & set(s.tolist())} for g in set(groups.tolist())}
    assert all(len(v) == 1 for g, v in holding.items() if g != 0) and len(holding[0]) >= 2


def test_a_neighbourhood_is_its_shard_and_the_nearest_others():
    vectors = unit_rows(300)
    shards = ivf.partition(vectors, 40)
    centres = ivf.centroids(vectors, shards)
    files = ivf.neighbourhoods(centres, shards, 3)
    for s, rows in enumerate(files):
        others = [t for t in range(len(shards)) if t != s]
        nearest = sorted(others, key=lambda t: (-float(centres[t] @ centres[s]), t))[:2]
        assert sorted(rows.tolist()) == sorted(np.concatenate([shards[s], *(shards[t] for t in nearest)]).tolist())
