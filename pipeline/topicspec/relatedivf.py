"""Related lists of a big topic, approximate: an inverted file over centroids fitted by content.

``context.related`` is exact and O(n^2 * dimension): 100-230 s at 43,000 chunks on one loaded
core, hours at 427,000. From ``APPROXIMATE_ROWS`` rows on it uses ``related_of`` here instead.
The rows whose ``context.row_keys`` key lies below ``2**128 >> (level(n) - SAMPLE_BITS)`` (distinct
keys, ascending) are the sample; spherical k-means of the sample, started from its rows below
``2**128 >> level(n)`` (about sqrt(n) of them), gives the centroids. Each row probes its
``PROBES`` nearest centroids (float32 similarity, ties to the lower centroid) and belongs to the
list of the first. A row's related rows are the ``k`` best, by the float64 similarity rounded to
4 decimals (ties to the lower row, as ``related``), among the rows of the lists it probes.

Guarantees: the answer is a function of the rows alone (no random seed; sums in key order), so
a build gives the same bytes every time; a row's list depends only on its own vector, the
centroids and the rows of the lists it probes, so ``context.related_update`` keeps a row's list
when the sample did not change (an edited row is in it once in ``2**(level - SAMPLE_BITS)``
rows), merges in only the new rows of the lists it probes, and gives what ``related`` gives.
Recall of the exact k best: docs/DECISIONS.md.
"""

from __future__ import annotations

import numpy as np

APPROXIMATE_ROWS = 50_000  # rows from which related lists are approximate; below, exact (``context``)
PROBES = 16  # lists a row looks in
SAMPLE_BITS = 3  # the centroids are fitted to 2**SAMPLE_BITS rows each
ROUNDS = 8  # rounds of k-means


def level(n: int) -> int:
    """floor(log2(n) / 2): a topic of n rows has about n / 2**level(n) ~ sqrt(n) centroids."""
    return max(0, (n.bit_length() - 1) // 2)


def sample_keys(keys: list[int], at_level: int) -> list[int]:
    """The distinct keys below ``2**128 >> (at_level - SAMPLE_BITS)``, ascending: the rows the
    centroids are fitted to, chosen by content (about ``2**SAMPLE_BITS`` per centroid)."""
    limit = 1 << min(128, 128 - at_level + SAMPLE_BITS)
    return sorted({key for key in keys if key < limit})


def fitted_on(keys: list[int]) -> tuple[int, list[int]] | None:
    """``(level, keys of the rows the centroids are fitted to)`` for rows with ``keys``: equal,
    the same centroids, so the same lists for the rows kept; None where ``related`` is exact:
    fewer than ``APPROXIMATE_ROWS`` rows, or not one key below the centroids' limit."""
    if len(keys) < APPROXIMATE_ROWS:
        return None
    at_level = level(len(keys))
    sample = sample_keys(keys, at_level)
    return (at_level, sample) if sample and sample[0] < 1 << (128 - at_level) else None


def fit_centroids(sample: np.ndarray, count: int) -> np.ndarray:
    """Spherical k-means of ``sample``'s rows (ascending keys) from its first ``count`` rows (the
    lowest keys), ``ROUNDS`` rounds; a centroid that loses every row keeps its place. float32,
    sums in a fixed order: the same bits for the same sample."""
    centres = sample[:count].copy()
    for _ in range(ROUNDS):
        own = np.argmax(sample @ centres.T, axis=1)  # ties: the lower centroid
        sums = np.zeros_like(centres)
        np.add.at(sums, own, sample)
        norms = np.linalg.norm(sums, axis=1)
        moved = norms > 0
        centres[moved] = sums[moved] / norms[moved, None]
    return centres


class Lists:
    """The inverted file of a topic's rows: each row's probed lists, and the members of each list."""

    def __init__(self, exact: np.ndarray, keys: list[int], fitted: tuple[int, list[int]], probes: int | None = None):
        self.fitted = fitted  # ``fitted_on(keys)``
        at_level, sample = fitted
        first = {}
        for row, key in enumerate(keys):
            first.setdefault(key, row)
        self.fast = exact.astype(np.float32)
        count = len([key for key in sample if key < 1 << (128 - at_level)])
        centres = fit_centroids(self.fast[[first[key] for key in sample]], count)
        self.probes = _nearest(self.fast, centres, min(probes or PROBES, len(centres)))  # n x p, best first
        order = np.argsort(self.probes[:, 0], kind="stable")  # rows by own list, ascending within
        bounds = np.searchsorted(self.probes[order, 0], np.arange(len(centres) + 1))
        self.members = [order[bounds[c] : bounds[c + 1]] for c in range(len(centres))]

    def probing(self, rows: np.ndarray) -> list[np.ndarray]:
        """For each list, the rows of ``rows`` that probe it, ascending."""
        probed = self.probes[rows]
        lists, queried = probed.ravel(), np.repeat(rows, probed.shape[1])
        order = np.lexsort((queried, lists))
        bounds = np.searchsorted(lists[order], np.arange(len(self.members) + 1))
        queried = queried[order]
        return [queried[bounds[c] : bounds[c + 1]] for c in range(len(self.members))]


def _nearest(fast: np.ndarray, centres: np.ndarray, p: int) -> np.ndarray:
    """Each row's ``p`` most similar centres (float32), best first, ties to the lower centre."""
    out = np.empty((len(fast), p), dtype=np.intp)
    c = len(centres)
    block = max(1, (1 << 22) // c)
    for first in range(0, len(fast), block):
        sims = fast[first : first + block] @ centres.T
        kth = np.partition(sims, c - p, axis=1)[:, c - p] if p < c else np.full(len(sims), -np.inf, dtype=np.float32)
        at_row, col = np.nonzero(sims >= kth[:, None])  # the p best and any tie with the p-th
        order = np.lexsort((col, -sims[at_row, col], at_row))
        starts = np.concatenate(([0], np.cumsum(np.bincount(at_row, minlength=len(sims)))[:-1]))
        out[first : first + len(sims)] = col[order][starts[:, None] + np.arange(p)]
    return out


def related_of(exact: np.ndarray, rows: np.ndarray, k: int, lists: Lists, error: float, cells: int) -> list[list[tuple[int, float]]]:
    """The related list of each row of ``rows`` (ascending), as the module docstring defines it.
    ``error``: ``context._screen_error(exact)``; ``cells``: similarities held at once."""
    pairs_q, pairs_m, pairs_s = [], [], []
    margin = 2.0 * error + 1e-4  # as ``context._top_k``: the float32 screen keeps every float64 candidate
    for members, queries in zip(lists.members, lists.probing(rows)):
        if not len(queries) or not len(members):
            continue
        block = max(1, cells // len(members))
        others = lists.fast[members].T
        for first in range(0, len(queries), block):
            own = queries[first : first + block]
            sims = lists.fast[own] @ others
            at = np.searchsorted(members, own)  # a row among the members: never itself
            mine = (at < len(members)) & (members[np.minimum(at, len(members) - 1)] == own)
            sims[np.nonzero(mine)[0], at[mine]] = -np.inf
            if len(members) - 1 > k:
                kth = np.partition(sims, len(members) - k, axis=1)[:, len(members) - k]
                keep = (sims >= (kth - margin)[:, None]) & (sims > -np.inf)
            else:
                keep = sims > -np.inf
            at_row, col = np.nonzero(keep)
            pairs_q.append(own[at_row])
            pairs_m.append(members[col])
            pairs_s.append(sims[at_row, col])
    if not pairs_q:
        return [[] for _ in range(len(rows))]
    queries, columns, screen = np.concatenate(pairs_q), np.concatenate(pairs_m), np.concatenate(pairs_s)
    # the k-th best float32 similarity of each row over all its lists: the same screen again
    order = np.lexsort((-screen, queries))
    queries, columns, screen = queries[order], columns[order], screen[order]
    starts = np.searchsorted(queries, queries)  # each pair's row's first pair
    ranks = np.arange(len(queries)) - starts
    kth = np.full(len(exact), -np.inf, dtype=np.float32)
    kth[queries[ranks == k - 1]] = screen[ranks == k - 1]
    keep = screen >= kth[queries] - margin
    return _best(exact, rows, k, queries[keep], columns[keep], cells)


def _best(exact, rows, k, queries, columns, cells) -> list[list[tuple[int, float]]]:
    """For each row of ``rows``, the ``k`` best of its candidate pairs by rounded float64 similarity."""
    order = np.lexsort((columns, queries))
    queries, columns = queries[order], columns[order]
    step = max(1, cells // exact.shape[1])
    values = [v for lo in range(0, len(columns), step)
              for v in np.einsum("ij,ij->i", exact[queries[lo : lo + step]], exact[columns[lo : lo + step]]).tolist()]
    starts, ends = np.searchsorted(queries, rows).tolist(), np.searchsorted(queries, rows, side="right").tolist()
    columns = columns.tolist()
    out = []
    for lo, hi in zip(starts, ends):
        scored = [(round(values[x], 4), columns[x]) for x in range(lo, hi)]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        out.append([(j, s) for s, j in scored[:k]])
    return out
