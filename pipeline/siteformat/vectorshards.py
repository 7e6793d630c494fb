"""The ``_search/vectors/<hash>.bin`` layout: every chunk's vector in site order, a row's scale
beside its values, so that one document's rows are one contiguous byte range, grouped into
shard files of whole documents of one topic each.

A row is ``ROW_HEADER`` (a little-endian float32 scale) then ``dimension`` 4-bit values packed
two a byte (``pack_int4``: value + 8, low nibble first); the vector is ``scale * values``, values
in -7..7, ``scale`` the better (``encode_rows``) of ``CLIP_RMS * rms(x) / 7`` (a component beyond
``CLIP_RMS`` times the row's root mean square saturates) and ``max|x| / 7``. A chunk without a vector (its topic has no ``_embeddings.bin``, or that
file lacks the chunk) has scale 0 and no vector evidence. A shard file is the rows of whole
documents back to back, no header: row ``n - start`` is chunk ``n`` (``start``: the first chunk of
its first document). A shard never crosses a topic (a topic-scoped query never reads another
topic's rows); within a topic the documents are cut into content-defined groups of about
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
CLIP_RMS = 2.5
"""Where a row's values saturate, in root mean squares: on the sample site's MiniLM rows the
decoded row's cosine to the float one is 0.9935 on average (min 0.986), where scaling by the
largest component gives 0.991 (min 0.980); hosts send ``.bin`` files uncompressed, so 4 bits a
value are half the bytes int8 were, R@5 within a question of int8's on each set
(docs/decisions/search.md "Vector rows of four bits, shards of ~12 rows; a word's term's rows")."""
SHARD_ROWS = 12
"""A shard's rows, about (~15 on average with the groups' minimum, ~3 kB of 384 dimensions;
``pipeline.search.groups``). A query reads the shards of up to 5 documents and uses only those
documents' rows, so the rest of a shard is waste; each shard costs a name in the manifest
(~11 bytes gzipped), which every query's first request carries. At 10,583 synthetic chunks
(``bench.encoder_page``, mean kB of a cold / warm hybrid query): 24 rows 207.5 / 57.6, 12 rows
205.2 / 45.3, 6 rows 210.0 / 40.2 (the manifest's growth outweighs the smaller shards)."""
SHARD_CAP = 32
"""No shard holds more rows (~6.4 kB), unless one document alone is bigger."""


def row_bytes(dimension: int) -> int:
    return ROW_HEADER + (dimension + 1) // 2


def pack_int4(values: np.ndarray) -> np.ndarray:
    """Rows of int values in -7..7 as uint8 rows of ``ceil(dimension / 2)`` bytes: value + 8, two a
    byte, the even column in the low nibble (an odd dimension's last high nibble is 8: zero)."""
    values = np.asarray(values, dtype=np.int16)
    if values.shape[1] % 2:
        values = np.hstack([values, np.zeros((len(values), 1), np.int16)])
    nibbles = (values + 8).astype(np.uint8)
    return (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)


def unpack_int4(packed: np.ndarray, dimension: int) -> np.ndarray:
    """``pack_int4``'s inverse: int8 rows of ``dimension`` values in -8..7."""
    packed = np.asarray(packed, dtype=np.int16)
    out = np.empty((len(packed), 2 * packed.shape[1]), dtype=np.int8)
    out[:, 0::2] = (packed & 0x0F) - 8
    out[:, 1::2] = (packed >> 4) - 8
    return out[:, :dimension]


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
    """Rows of ``matrix`` (float32) as scale + packed 4-bit values (module docstring); rows not
    ``present`` (or zero) as scale 0, values 0. Each row takes the better of two scales, by the
    squared error of its decoded row (direction and length: a word row is summed with others):
    ``CLIP_RMS`` root mean squares (a dense row, a model's), or its largest value (a sparse one,
    whose few values clipping would flatten); a tie takes the first."""
    matrix = np.asarray(matrix, dtype=np.float32)
    n, dimension = matrix.shape
    rms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix) / max(dimension, 1)) if matrix.size else np.zeros(n, np.float32)
    live = present & (rms > 0)
    best = np.zeros((n, dimension), np.int16)
    scales = np.zeros(n, "<f4")
    best_error = np.full(n, np.inf)
    peak = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(n, np.float32)
    for candidate in (CLIP_RMS * rms / 7.0, peak / 7.0):
        scale = np.where(live, candidate, 1.0).astype("<f4")
        values = np.clip(np.rint(matrix / scale[:, None]), -7, 7).astype(np.int16)
        error = np.square(values * scale.astype(np.float64)[:, None] - matrix).sum(axis=1)
        better = error < best_error
        best[better], scales[better], best_error[better] = values[better], scale[better], error[better]
    best[~live], scales[~live] = 0, 0.0
    return np.hstack([scales.view(np.uint8).reshape(-1, ROW_HEADER), pack_int4(best)]).tobytes()


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
    exact = unpack_int4(raw[:, ROW_HEADER:], dimension).astype(np.float64) * scales[:, None]
    if not np.all(np.isfinite(exact)):
        raise ValueError("rows contain NaN or infinity")
    norms = np.sqrt(np.einsum("ij,ij->i", exact, exact))[:, None]
    present = norms[:, 0] > 0
    norms[norms == 0] = 1.0
    return (exact.astype(np.float32).astype(np.float64) / norms).astype(np.float32), present
