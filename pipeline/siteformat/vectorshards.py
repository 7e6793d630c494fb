"""The ``_search/vectors/<hash>.bin`` layout: every chunk's vector in site order, a row's scale
beside its values, so that one document's rows are one contiguous byte range, grouped into
shard files of whole documents of one topic each.

A row is ``ROW_HEADER`` (a little-endian float32 scale) then ``dimension`` int8 values; the
vector is ``scale * values`` (symmetric per-row quantisation, as ``_embeddings.bin``'s int8,
``scale = max|x| / 127``). A chunk without a vector (its topic has no ``_embeddings.bin``, or
that file lacks the chunk) has scale 0 and no vector evidence. A shard file is the rows of
whole documents back to back, no header: row ``n - start`` is chunk ``n`` (``start``: the first
chunk of its first document). A shard never crosses a topic (a topic-scoped query never reads
another topic's rows); within a topic the documents are cut into content-defined groups of about
``SHARD_ROWS`` rows (``pipeline.search.groups``: an edit of one document changes its shard's
bytes, not where the other shards start), at most ``SHARD_CAP`` unless one document is bigger.

The manifest (``meta.json``'s ``vectors``) says ``dimension`` and ``shards``: ``[[first
document, documents, hash]]``, the file ``vectors/<hash>.bin``; ``meta.json``'s ``documents``
gives each document's row count (site order). Clients read a query's documents from the shards
holding them (``pipeline.client.searchindex``, ``searchindex.js``: the same rule, the same
decoding).
"""

from __future__ import annotations

import numpy as np

VECTORS_DIR = "vectors"
ROW_HEADER = 4
SHARD_ROWS = 24
"""A shard's rows, about (~30 on average with the groups' minimum, ~12 kB of 384 dimensions;
``pipeline.search.groups``). A query reads the shards of up to 5 documents and uses only those
documents' rows, so the rest of a shard is waste: at 10,583 synthetic chunks 32 kB shards made
the uncapped cold query 284 / 299 kB (mean / max), at the 300 kB target, and groups about 32
rows (at most 96) 236 / 272 kB; smaller shards cost files (one per document at the limit) and
a name each in the manifest."""
SHARD_CAP = 64
"""No shard holds more rows (~25 kB), unless one document alone is bigger."""


def row_bytes(dimension: int) -> int:
    return ROW_HEADER + dimension


def topic_rows(table, documents: list[list], dimension: int) -> bytes:
    """The rows of a topic's chunks in site order (``documents``: its index's [name, chunk count]
    in order) from its decoded ``_embeddings.bin`` ``table`` (None: no vectors, zero rows).
    Rows are matched by document name, as the clients map a topic file's rows."""
    count = sum(c for _, c in documents)
    matrix = np.zeros((count, dimension), np.float32)
    present = np.zeros(count, bool)
    if table is not None and table.vectors.shape[1] == dimension:
        offsets, start = {}, 0
        for name, c in documents:
            offsets[name] = (start, c)
            start += c
        row = 0
        for name, c in table.documents:
            first, listed = offsets.get(name, (None, 0))
            take = min(c, listed)
            if first is not None and take:
                matrix[first:first + take] = table.vectors[row:row + take]
                present[first:first + take] = True
            row += c
    return encode_rows(matrix, present)


def encode_rows(matrix: np.ndarray, present: np.ndarray) -> bytes:
    """Rows of ``matrix`` (float32) as scale + int8 values; rows not ``present`` (or zero) as zeros."""
    peak = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(len(matrix), np.float32)
    live = present & (peak > 0)
    scales = np.where(live, peak / 127.0, 0.0).astype("<f4")
    safe = np.where(live, scales, 1.0).astype(np.float32)
    values = np.clip(np.rint(matrix / safe[:, None]), -127, 127).astype(np.int8)
    values[~live] = 0
    return np.hstack([scales.view(np.uint8).reshape(-1, ROW_HEADER), values.view(np.uint8)]).tobytes()


def decode_rows(data: bytes, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """(unit float32 rows, which rows hold a vector) of a shard file's bytes, rescaled as
    ``pipeline.siteformat.vectors.decode`` does (the browser's ``decodeRows`` is its twin)."""
    width = row_bytes(dimension)
    if len(data) % width:
        raise ValueError(f"{len(data)} bytes is not a whole number of {width}-byte rows")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)
    # the browser's arithmetic step by step (products and norm in doubles, rows stored as float32,
    # each divided in doubles), so equal rows stay equal and near-ties break the same way there
    scales = raw[:, :ROW_HEADER].copy().view("<f4").reshape(-1).astype(np.float64)
    exact = raw[:, ROW_HEADER:].view(np.int8).astype(np.float64) * scales[:, None]
    if not np.all(np.isfinite(exact)):
        raise ValueError("rows contain NaN or infinity")
    norms = np.sqrt(np.einsum("ij,ij->i", exact, exact))[:, None]
    present = norms[:, 0] > 0
    norms[norms == 0] = 1.0
    return (exact.astype(np.float32).astype(np.float64) / norms).astype(np.float32), present
