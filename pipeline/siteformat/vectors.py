"""The ``_embeddings.bin`` format: a topic's chunk embeddings, compact and self-describing (pure).

A reader that embeds its query with the same model ranks a topic's chunks with one fetch and a
matrix product: no vector database, no server. Layout (all numbers little-endian)::

    offset  size       field
    0       8          magic  b"PIPEVEC1"
    8       4          H: byte length of the JSON header (uint32)
    12      H          header: UTF-8 JSON object (below)
    12+H    0..7       zero bytes, so the data starts at a multiple of 8
    data    data_bytes rows (below)

Header: ``{"format": "pipeline-embeddings", "version": 2, "model": str, "dtype": "int8" |
"float16" | "float32", "dimension": D, "count": N, "documents": [{"name": stem, "count": n},
...], "data_bytes": int, "page": p, "next": href}``. Rows are the chunks of ``documents`` in that
order, each document's chunks by chunk index (row ``sum of earlier counts + i`` is chunk ``i`` of
its document).

Pages: a topic's table is cut into pages of ``PAGE_DOCUMENTS`` documents (the listing's 32, in
the same order: a flat topic's vectors page ``p`` holds the documents of its listing page ``p``),
so an edit to one document's vectors rewrites one page of tens of kB, whatever the topic's size.
Page 1 is ``_embeddings.bin``, page ``p`` > 1 ``_index/embeddings-<p>.bin`` (``page_name``, both
relative to the topic's directory); ``next`` names the next page and is absent on the last; no
page holds a total, so a page changes only with its own documents. Every page but the last holds
exactly ``PAGE_DOCUMENTS`` documents (``join`` checks), so a reader knows a topic's page names
from its document count (``page_names``).

Rows: ``int8``: N float32 scales, then N*D int8 values; row ``r`` is ``scale[r] * q[r]``
(symmetric per-row quantisation, ``scale = max|x| / 127``). ``float16`` / ``float32``: N*D
values. Encoders receive unit-length rows; ``decode`` returns float32 rows rescaled to unit
length, so a dot product with a unit query is the cosine similarity.

Guarantees: ``decode(encode(...))`` gives back the model, dtype and documents exactly and the
rows within the dtype's precision (int8: every component within ``scale / 2`` before the
final renormalisation). ``decode`` never returns a partial table: a wrong magic, a header that
is not the JSON above, counts that disagree, or a file shorter or longer than the header
announces raise ``VectorFormatError`` saying what is wrong and how many bytes were expected;
``join`` never returns a table of pages that are not one topic's pages 1..n in order.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable

import numpy as np
import orjson

from pipeline.errors import PipelineError
from pipeline.siteformat.indexnames import INDEX_DIR, LISTING_ENTRIES

MAGIC = b"PIPEVEC1"
FORMAT = "pipeline-embeddings"
VERSION = 2
"""2 since a topic's table is paged (``page``, ``next``); 1 held every row of a topic in one file."""
FILE_NAME = "_embeddings.bin"
"""The first page's name in every topic directory, beside the topic's ``index.json``."""
PAGE_DOCUMENTS = LISTING_ENTRIES
"""Documents on one page (the last may hold fewer): the listing's count, so a flat topic's pages
break where its listing pages do, and an edit moves no page boundary."""
_PAGE_FILE = "embeddings-{}.bin"
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
    page: int = 1  # the page's number (a joined table: 1)
    next: str | None = None  # the next page's href, relative to the topic's directory (None: the last)

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


def page_name(page: int) -> str:
    """The file of page ``page`` (from 1) of a topic's table, relative to the topic's directory."""
    return FILE_NAME if page == 1 else f"{INDEX_DIR}/{_PAGE_FILE.format(page)}"


def is_page_file(name: str) -> bool:
    """True for the name (in ``_index/``) of a page after the first (the index stage keeps them)."""
    head, _, tail = name.partition("-")
    number = tail.removesuffix(".bin")
    return head == "embeddings" and tail.endswith(".bin") and number.isdigit() and number[0] != "0" and number != "1"


def page_count(documents: int) -> int:
    """Pages of a table of ``documents`` documents (one at least)."""
    return max(1, -(-documents // PAGE_DOCUMENTS))


def page_names(documents: int) -> list[str]:
    """The files of a table of ``documents`` documents, in page order."""
    return [page_name(p) for p in range(1, page_count(documents) + 1)]


def encode_pages(model: str, documents: list[tuple[str, np.ndarray]], *, dtype: str = DEFAULT_DTYPE) -> list[tuple[str, bytes]]:
    """[(page name, its bytes)] of the table of ``documents`` (``encode``'s arguments), in page
    order: ``PAGE_DOCUMENTS`` documents a page, each page linked to the next."""
    pages = page_count(len(documents))
    return [(page_name(p), encode(model, documents[(p - 1) * PAGE_DOCUMENTS : p * PAGE_DOCUMENTS], dtype=dtype,
                                  page=p, next=page_name(p + 1) if p < pages else None))
            for p in range(1, pages + 1)]


def encoded_size(count: int, dimension: int, dtype: str) -> int:
    """Bytes of the row data for ``count`` rows of ``dimension`` values in ``dtype``."""
    if dtype == "int8":
        return count * 4 + count * dimension
    if dtype == "float16":
        return count * dimension * 2
    if dtype == "float32":
        return count * dimension * 4
    raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")


def encode(model: str, documents: list[tuple[str, np.ndarray]], *, dtype: str = DEFAULT_DTYPE,
           page: int = 1, next: str | None = None) -> bytes:
    """The file for ``documents``: (stem, rows of that document's chunks in index order), as page
    ``page`` of its topic's table, ``next`` the next page's name (``encode_pages`` cuts a topic).

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
        "page": page,
    }
    if next is not None:
        header["next"] = next
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
    model, dtype, dimension, count, documents, data_bytes, page, following = _check_header(header, fail)
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
    return EmbeddingTable(model, dtype, documents, (matrix / norms).astype(np.float32), page, following)


def join(pages: list[EmbeddingTable], *, source: str = FILE_NAME) -> EmbeddingTable:
    """One table of a topic's pages (``decode``d, in order): VectorFormatError unless they are
    pages 1..n of one model, dtype and dimension, each but the last holding ``PAGE_DOCUMENTS``
    documents and naming the next, no document twice."""

    def fail(message: str) -> VectorFormatError:
        return VectorFormatError(f"not a valid embeddings table: {message}", path=source)

    if not pages:
        raise fail("no page")
    first = pages[0]
    for number, page in enumerate(pages, 1):
        if page.page != number:
            raise fail(f"page {page.page} where page {number} was expected")
        if (page.model, page.dtype) != (first.model, first.dtype) or (len(page.vectors) and len(first.vectors)
                                                                    and page.dimension != first.dimension):
            raise fail(f"page {number} is {page.model} {page.dtype} x{page.dimension}, page 1 {first.model} {first.dtype} x{first.dimension}")
        last = number == len(pages)
        if (page.next is None) != last:
            raise fail(f"page {number} {'names a next page' if last else 'is the last'} but {len(pages)} pages were read")
        if not last and len(page.documents) != PAGE_DOCUMENTS:
            raise fail(f"page {number} holds {len(page.documents)} documents, expected {PAGE_DOCUMENTS}")
    if len(pages) == 1:
        return first
    documents = tuple(d for page in pages for d in page.documents)
    if len({name for name, _ in documents}) != len(documents):
        raise fail("a document is listed on two pages")
    filled = [page.vectors for page in pages if len(page.vectors)]
    vectors = np.vstack(filled) if filled else first.vectors
    return EmbeddingTable(first.model, first.dtype, documents, vectors)


def read(get: Callable[[str], bytes | None], *, locate: Callable[[str], str] = str) -> EmbeddingTable | None:
    """A topic's whole table: ``get(page name)`` (bytes, None when page 1 is missing) for each page
    from ``_embeddings.bin`` along ``next``; None when the topic has no first page. A later page
    missing, or pages that do not ``join``, raise VectorFormatError (``locate`` names a page)."""
    data = get(FILE_NAME)
    if data is None:
        return None
    pages = [decode(data, source=locate(FILE_NAME))]
    while pages[-1].next is not None:
        name = pages[-1].next
        data = get(name)
        if data is None:
            raise VectorFormatError(f"page {len(pages) + 1} of the embeddings table is missing", path=locate(name))
        pages.append(decode(data, source=locate(name)))
    return join(pages, source=locate(FILE_NAME))


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
    page, following = header.get("page"), header.get("next")
    if not isinstance(page, int) or isinstance(page, bool) or page < 1:
        raise fail(f"header page must be a positive integer, got {page!r}")
    if following is not None and following != page_name(page + 1):
        raise fail(f"header next {following!r} of page {page} is not {page_name(page + 1)!r}")

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
    return model, dtype, dimension, count, tuple(docs), data_bytes, page, following
