"""A static query encoder's table: one vector per WordPiece token, in the site model's space.

A query's vector is the sum of its word pieces' rows (each occurrence counted; no [CLS]/[SEP]),
scaled to unit length: a table lookup and a mean instead of a transformer (the Model2Vec idea;
``staticfit`` regresses the rows onto the model's own sentence vectors). The documents' vectors
stay the model's, so a static query ranks against them as the model's query would.

The table holds only the *reachable* tokens (``reachable_tokens``): those the model's tokenizer
can ever emit for some text (a lowercasing tokenizer never emits ``"A"``, an accent-stripping one
never ``"é"``, punctuation never continues a word, ``[unused7]`` never matches). Greedy
WordPiece over the reachable ones gives the same pieces as over the whole vocabulary
(tests/test_statictable.py checks random texts against the tokenizer), and the table is smaller.
Tokens are ordered ASCII first, then the rest, each part sorted: a client tokenising an ASCII
query needs only the first part.

File format (``encode``/``decode``, little-endian): ``PIPESTA1``, a uint32 header length, a
UTF-8 JSON header ``{format, version, model, dimension, count, ascii, dtype, tokenizer,
source}``, the tokens joined by ``\\n`` (``header.tokens_bytes`` long), zero padding to 8 bytes,
then the rows: ``float32`` (count x dimension), or ``int8``/``int4`` with a float32 scale per row
(``quantise``). Deterministic: the same table gives the same bytes.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

import numpy as np

from pipeline.errors import PipelineError
from pipeline.siteformat.vectorshards import pack_int4, unpack_int4

MAGIC = b"PIPESTA1"
FORMAT = "pipeline-static-encoder"
VERSION = 1
DTYPES = ("float32", "int8", "int4")


@dataclass
class StaticTable:
    """``tokens[i]``'s row is ``rows[i]`` (float32, count x dimension; quantised tables are
    stored with ``dtype`` and decoded back to float32 here). ``ascii``: the first ``ascii``
    tokens are pure ASCII, the rest not. ``tokenizer``: the settings ``wordpiece.js`` reads
    (``browser_model.tokenizer_files``)."""

    model: str
    tokens: list[str]
    rows: np.ndarray
    tokenizer: dict
    ascii: int
    dtype: str = "float32"
    source: dict = field(default_factory=dict)  # what it was fitted from (key, corpus, settings)

    @property
    def dimension(self) -> int:
        return int(self.rows.shape[1])

    def index(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tokens)}

    def vector(self, pieces: list[str]) -> np.ndarray:
        """The unit query vector of ``pieces`` (a tokenizer's output without [CLS]/[SEP]); zero
        when none is in the table."""
        index = self.index()
        return query_vector(self.rows, [index[p] for p in pieces if p in index])


def query_vector(rows: np.ndarray, ids: list[int]) -> np.ndarray:
    """Sum of ``rows[ids]`` (repeats counted), unit length; zeros when ``ids`` is empty or sums
    to zero. Summed in float64 in id order, as ``staticembed.js`` does."""
    out = np.zeros(rows.shape[1], dtype=np.float64)
    for i in ids:
        out += rows[i]
    norm = float(np.sqrt(np.dot(out, out)))
    return (out / norm if norm > 0 else out).astype(np.float32)


def order_tokens(tokens) -> list[str]:
    """ASCII tokens sorted, then the others sorted (the table's order)."""
    tokens = set(tokens)
    return sorted(t for t in tokens if t.isascii()) + sorted(t for t in tokens if not t.isascii())


def reachable_tokens(tokenizer_json: dict) -> list[str]:
    """The vocabulary entries a BERT WordPiece tokenizer can emit (module docstring), in the
    table's order. A start piece ``t`` is reachable when normalising and pre-tokenising ``t``
    gives ``[t]``; a continuing piece ``##t`` when doing so to ``"a" + t`` gives ``["a" + t]``
    (nothing in ``t`` is split off or changed). The unknown token is kept; other added tokens
    (``[CLS]``, ``[SEP]``, ``[MASK]``...) are not pieces of a text's words."""
    from tokenizers import normalizers, pre_tokenizers

    norm = tokenizer_json.get("normalizer") or {}
    normalizer = normalizers.BertNormalizer(
        clean_text=norm.get("clean_text", True), handle_chinese_chars=norm.get("handle_chinese_chars", True),
        strip_accents=norm.get("strip_accents"), lowercase=norm.get("lowercase", True))
    pre = pre_tokenizers.BertPreTokenizer()
    model = tokenizer_json["model"]
    prefix = model.get("continuing_subword_prefix", "##")
    unk = model.get("unk_token", "[UNK]")
    added = {t["content"] for t in tokenizer_json.get("added_tokens", [])}

    def whole(text: str) -> bool:
        return [w for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(text))] == [text]

    kept = []
    for token in model["vocab"]:
        if token == unk:
            kept.append(token)
        elif token in added or not token:
            continue
        elif prefix and token.startswith(prefix) and len(token) > len(prefix):
            if whole("a" + token[len(prefix):]):
                kept.append(token)
        elif whole(token):
            kept.append(token)
    return order_tokens(kept)


def quantise(rows: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(scales float32 [n], values) of symmetric per-row quantisation: ``int8`` values in
    -127..127 (scale = max|x|/127), ``int4`` in -7..7 (scale = max|x|/7) packed two a byte, low
    nibble first, as unsigned value + 8. A row decodes as scale x value."""
    rows = np.asarray(rows, dtype=np.float32)
    top = 127 if dtype == "int8" else 7
    peak = np.abs(rows).max(axis=1)
    scales = (peak / top).astype(np.float32)
    safe = np.where(scales > 0, scales, 1).astype(np.float32)
    values = np.clip(np.rint(rows / safe[:, None]), -top, top).astype(np.int8)
    if dtype == "int8":
        return scales, values
    if rows.shape[1] % 2:
        raise PipelineError("int4 rows need an even dimension")
    return scales, pack_int4(values)


def dequantise(scales: np.ndarray, values: np.ndarray, dtype: str, dimension: int) -> np.ndarray:
    if dtype == "int8":
        return scales[:, None] * values.astype(np.float32)
    return scales[:, None] * unpack_int4(values, dimension).astype(np.float32)


def row_bytes(dtype: str, dimension: int) -> int:
    """Bytes of one stored row: its float32 scale and its values (float32: no scale)."""
    return {"float32": 4 * dimension, "int8": 4 + dimension, "int4": 4 + dimension // 2}[dtype]


def encode_rows(rows: np.ndarray, dtype: str) -> bytes:
    """Rows as stored: float32 values, or per row a float32 scale then the values (so a shard of
    rows is a slice of these bytes)."""
    if dtype == "float32":
        return np.ascontiguousarray(rows, dtype="<f4").tobytes()
    scales, values = quantise(rows, dtype)
    n = len(rows)
    out = np.zeros((n, row_bytes(dtype, rows.shape[1])), dtype=np.uint8)
    out[:, :4] = scales.astype("<f4").view(np.uint8).reshape(n, 4)
    out[:, 4:] = values.view(np.uint8).reshape(n, -1)
    return out.tobytes()


def decode_rows(data: bytes, dtype: str, dimension: int) -> np.ndarray:
    """The float32 rows of ``encode_rows``' bytes."""
    if dtype == "float32":
        return np.frombuffer(data, dtype="<f4").reshape(-1, dimension).astype(np.float32)
    width = row_bytes(dtype, dimension)
    if len(data) % width:
        raise PipelineError(f"static encoder rows: {len(data)} bytes is not a whole number of {width}-byte rows")
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, width)
    scales = raw[:, :4].copy().view("<f4").reshape(-1).astype(np.float32)
    values = raw[:, 4:].view(np.int8) if dtype == "int8" else raw[:, 4:]
    return dequantise(scales, values, dtype, dimension).astype(np.float32)


def encode(table: StaticTable) -> bytes:
    """The table's file (module docstring)."""
    if table.dtype not in DTYPES:
        raise PipelineError(f"unknown static table dtype {table.dtype!r}")
    tokens = "\n".join(table.tokens).encode("utf-8")
    header = {"format": FORMAT, "version": VERSION, "model": table.model, "dimension": table.dimension,
              "count": len(table.tokens), "ascii": table.ascii, "dtype": table.dtype, "tokenizer": table.tokenizer,
              "source": table.source, "tokens_bytes": len(tokens)}
    head = json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")
    body = MAGIC + struct.pack("<I", len(head)) + head + tokens
    body += b"\0" * (-len(body) % 8)
    return body + encode_rows(table.rows, table.dtype)


def decode(data: bytes, *, source: str = "static table") -> StaticTable:
    if data[:8] != MAGIC or len(data) < 12:
        raise PipelineError(f"{source}: not a static encoder table")
    (length,) = struct.unpack("<I", data[8:12])
    header = json.loads(data[12 : 12 + length])
    start = 12 + length
    tokens = data[start : start + header["tokens_bytes"]].decode("utf-8").split("\n")
    start += header["tokens_bytes"]
    start += -start % 8
    rows = decode_rows(data[start:], header["dtype"], header["dimension"])
    if len(tokens) != header["count"] or len(rows) != header["count"]:
        raise PipelineError(f"{source}: {header['count']} tokens announced, {len(tokens)} tokens and {len(rows)} rows found")
    return StaticTable(header["model"], tokens, rows, header["tokenizer"], header["ascii"], header["dtype"], header["source"])
