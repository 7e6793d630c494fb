"""The ``_embeddings.bin`` format: a topic's chunk embeddings, compact and self-describing (pure).

A reader that embeds its query with the same model ranks a topic's chunks with one fetch and a
matrix product: no vector database, no server. Layout (all numbers little-endian)::

    offset  size       field
    0       8          magic  b"PIPEVEC1"
    8       4          H: byte length of the JSON header (uint32)
    12      H          header: UTF-8 JSON object (below)
    12+H    0..7       zero bytes, so the data starts at a multiple of 8
    data    data_bytes rows (below)

Header: ``{"format": "pipeline-embeddings", "version": 1, "model": str, "dtype": "int8" |
"float16" | "float32", "dimension": D, "count": N, "documents": [{"name": stem, "count": n},
...], "data_bytes": int}``. Rows are the chunks of ``documents`` in that order, each document's
chunks by chunk index (row ``sum of earlier counts + i`` is chunk ``i`` of its document).

Rows: ``int8``: N float32 scales, then N*D int8 values; row ``r`` is ``scale[r] * q[r]``
(symmetric per-row quantisation, ``scale = max|x| / 127``). ``float16`` / ``float32``: N*D
values. Encoders receive unit-length rows; ``decode`` returns float32 rows rescaled to unit
length, so a dot product with a unit query is the cosine similarity.

Guarantees: ``decode(encode(...))`` gives back the model, dtype and documents exactly and the
rows within the dtype's precision (int8: every component within ``scale / 2`` before the
final renormalisation). ``decode`` never returns a partial table: a wrong magic, a header that
is not the JSON above, counts that disagree, or a file shorter or longer than the header
announces raise ``VectorFormatError`` saying what is wrong and how many bytes were expected.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import orjson

from pipeline.errors import PipelineError

MAGIC = b"PIPEVEC1"
FORMAT = "pipeline-embeddings"
VERSION = 1
FILE_NAME = "_embeddings.bin"
"""The file's name in every topic directory, beside the topic's ``index.json``."""
DTYPES = ("int8", "float16", "float32")
DEFAULT_DTYPE = "int8"
"""int8 keeps the top-5 ranking of float32 on the sample site (docs/decisions/search.md) at a quarter of the size."""

_PREFIX = struct.Struct("<8sI")
_ALIGN = 8
_MAX_HEADER = 16 * 1024 * 1024


class VectorFormatError(PipelineError):
    """Bytes that are not a complete, valid ``_embeddings.bin``."""


@dataclass(frozen=True)
class EmbeddingTable:
    """A decoded file: ``vectors[r]`` (float32, unit length or zero) is chunk ``rows()[r]``."""

    model: str
    dtype: str
    documents: tuple[tuple[str, int], ...]  # (document stem, chunk count), in row order
    vectors: np.ndarray  # shape (count, dimension), float32

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    def rows(self) -> list[tuple[str, int]]:
        """(document stem, chunk index) of every row, in row order."""
        return [(name, i) for name, count in self.documents for i in range(count)]

    def row_of(self, document: str, index: int) -> int | None:
        """The row of chunk ``index`` of ``document``, or None if the table does not hold it."""
        start = 0
        for name, count in self.documents:
            if name == document:
                return start + index if 0 <= index < count else None
            start += count
        return None


def encoded_size(count: int, dimension: int, dtype: str) -> int:
    """Bytes of the row data for ``count`` rows of ``dimension`` values in ``dtype``."""
    if dtype == "int8":
        return count * 4 + count * dimension
    if dtype == "float16":
        return count * dimension * 2
    if dtype == "float32":
        return count * dimension * 4
    raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")


def encode(model: str, documents: list[tuple[str, np.ndarray]], *, dtype: str = DEFAULT_DTYPE) -> bytes:
    """The file for ``documents``: (stem, rows of that document's chunks in index order).

    Every document's rows must have the same dimension; rows should be unit length (the
    embedders' output). Raises ValueError on an unknown dtype, mixed dimensions, or
    non-finite values.
    """
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    matrices = [_matrix(rows) for _, rows in documents]
    dims = {m.shape[1] for m in matrices if len(m)}
    if len(dims) > 1:
        raise ValueError(f"documents have different dimensions: {sorted(dims)}")
    dimension = dims.pop() if dims else 0
    filled = [m for m in matrices if len(m)]
    matrix = np.vstack(filled) if filled else np.zeros((0, dimension), np.float32)
    if not np.all(np.isfinite(matrix)):
        raise ValueError("embeddings contain NaN or infinity")
    data = _rows_bytes(matrix, dtype)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "model": model,
        "dtype": dtype,
        "dimension": int(dimension),
        "count": int(matrix.shape[0]),
        "documents": [{"name": name, "count": len(m)} for (name, _), m in zip(documents, matrices)],
        "data_bytes": len(data),
    }
    head = orjson.dumps(header)
    start = _PREFIX.size + len(head)
    padding = b"\x00" * (-start % _ALIGN)
    return _PREFIX.pack(MAGIC, len(head)) + head + padding + data


def _matrix(rows) -> np.ndarray:
    array = np.asarray(rows, dtype=np.float32)
    if array.ndim == 1 and array.size == 0:
        return array.reshape(0, 0)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array of rows, got shape {array.shape}")
    return array


def _rows_bytes(matrix: np.ndarray, dtype: str) -> bytes:
    if dtype == "float32":
        return matrix.astype("<f4").tobytes()
    if dtype == "float16":
        return matrix.astype("<f2").tobytes()
    peak = np.abs(matrix).max(axis=1) if matrix.size else np.zeros(len(matrix), np.float32)
    scales = np.where(peak > 0, peak / 127.0, 1.0).astype("<f4")
    quantized = np.clip(np.rint(matrix / scales[:, None]), -127, 127).astype(np.int8)
    return scales.tobytes() + quantized.tobytes()


def decode(data: bytes, *, source: str = "_embeddings.bin") -> EmbeddingTable:
    """The table stored in ``data``; ``source`` (a URL or path) names it in errors."""

    def fail(message: str) -> VectorFormatError:
        return VectorFormatError(f"not a valid embeddings file: {message}", path=source)

    if len(data) < _PREFIX.size:
        raise fail(f"truncated: {len(data)} bytes, shorter than the {_PREFIX.size}-byte prefix")
    magic, head_len = _PREFIX.unpack_from(data)
    if magic != MAGIC:
        raise fail(f"wrong magic {magic!r}, expected {MAGIC!r}")
    if head_len > _MAX_HEADER:
        raise fail(f"header length {head_len} is implausible")
    start = _PREFIX.size + head_len
    if len(data) < start:
        raise fail(f"truncated: header needs {start} bytes, file has {len(data)}")
    try:
        header = orjson.loads(data[_PREFIX.size : start])
    except orjson.JSONDecodeError as exc:
        raise fail(f"header is not JSON ({exc})") from None
    model, dtype, dimension, count, documents, data_bytes = _check_header(header, fail)
    offset = start + (-start % _ALIGN)
    expected = offset + data_bytes
    if len(data) < expected:
        raise fail(f"truncated: expected {expected} bytes, got {len(data)}")
    if len(data) > expected:
        raise fail(f"{len(data) - expected} unexpected bytes after the {expected} announced")
    body = memoryview(data)[offset:expected]
    if dtype == "int8":
        scales = np.frombuffer(body[: 4 * count], dtype="<f4").astype(np.float32)
        values = np.frombuffer(body[4 * count :], dtype=np.int8).reshape(count, dimension)
        matrix = values.astype(np.float32) * scales[:, None]
    else:
        matrix = np.frombuffer(body, dtype="<f2" if dtype == "float16" else "<f4").astype(np.float32)
        matrix = matrix.reshape(count, dimension)
    if not np.all(np.isfinite(matrix)):
        raise fail("rows contain NaN or infinity")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return EmbeddingTable(model, dtype, documents, (matrix / norms).astype(np.float32))


def _check_header(header, fail):
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise fail(f"header format is not {FORMAT!r}")
    if header.get("version") != VERSION:
        raise fail(f"unsupported version {header.get('version')!r} (this reader knows {VERSION})")
    model, dtype = header.get("model"), header.get("dtype")
    dimension, count, data_bytes = header.get("dimension"), header.get("count"), header.get("data_bytes")
    documents = header.get("documents")
    if not isinstance(model, str) or not model:
        raise fail("header has no model name")
    if dtype not in DTYPES:
        raise fail(f"unknown dtype {dtype!r}")
    for name, value in (("dimension", dimension), ("count", count), ("data_bytes", data_bytes)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise fail(f"header {name} must be a non-negative integer, got {value!r}")
    if not isinstance(documents, list):
        raise fail("header documents must be a list")
    docs = []
    for doc in documents:
        if not (isinstance(doc, dict) and isinstance(doc.get("name"), str) and isinstance(doc.get("count"), int)
                and not isinstance(doc.get("count"), bool) and doc["count"] >= 0):
            raise fail(f"bad document entry {doc!r}")
        docs.append((doc["name"], doc["count"]))
    if len({name for name, _ in docs}) != len(docs):
        raise fail("a document is listed twice")
    if sum(n for _, n in docs) != count:
        raise fail(f"documents hold {sum(n for _, n in docs)} rows but count is {count}")
    if count and not dimension:
        raise fail("rows without a dimension")
    if data_bytes != encoded_size(count, dimension, dtype):
        raise fail(f"data_bytes {data_bytes} does not match {count} rows of {dimension} {dtype}")
    return model, dtype, dimension, count, tuple(docs), data_bytes
