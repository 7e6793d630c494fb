"""pipeline.siteformat.vectors: the _embeddings.bin format round-trips and rejects damaged files."""

from __future__ import annotations

import struct

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.siteformat import vectors
from pipeline.siteformat.vectors import MAGIC, VectorFormatError, decode, encode, encoded_size


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def docs():
    rng = np.random.default_rng(7)
    return [("alpha", unit_rows(rng, 5, 384)), ("beta", unit_rows(rng, 3, 384)), ("empty", np.zeros((0, 384)))]


@pytest.mark.parametrize("dtype", vectors.DTYPES)
def test_round_trip_keeps_layout_and_rows(docs, dtype):
    table = decode(encode("model-x", docs, dtype=dtype))
    assert table.model == "model-x" and table.dtype == dtype
    assert table.documents == (("alpha", 5), ("beta", 3), ("empty", 0))
    assert table.vectors.shape == (8, 384) and table.vectors.dtype == np.float32
    original = np.vstack([d[1] for d in docs if len(d[1])])
    tolerance = {"float32": 1e-7, "float16": 1e-3, "int8": 1.5e-2}[dtype]
    assert np.abs(table.vectors - original).max() < tolerance
    assert np.allclose(np.linalg.norm(table.vectors, axis=1), 1.0, atol=1e-5)
    assert table.rows()[5] == ("beta", 0)
    assert table.row_of("beta", 2) == 7 and table.row_of("beta", 3) is None and table.row_of("gamma", 0) is None


@pytest.mark.parametrize("dtype", vectors.DTYPES)
def test_size_is_header_plus_announced_rows(docs, dtype):
    data = encode("m", docs, dtype=dtype)
    (head_len,) = struct.unpack_from("<I", data, 8)
    start = 12 + head_len
    header = orjson.loads(data[12:start])
    assert header["data_bytes"] == encoded_size(8, 384, dtype)
    assert len(data) == start + (-start % 8) + header["data_bytes"]
    assert (start + (-start % 8)) % 8 == 0


def test_int8_quantisation_error_is_within_half_a_step():
    rng = np.random.default_rng(1)
    rows = unit_rows(rng, 50, 64)
    data = encode("m", [("d", rows)], dtype="int8")
    offset = len(data) - encoded_size(50, 64, "int8")
    scales = np.frombuffer(data[offset : offset + 200], dtype="<f4")
    q = np.frombuffer(data[offset + 200 :], dtype=np.int8).reshape(50, 64)
    assert np.all(np.abs(q.astype(np.float32) * scales[:, None] - rows) <= scales[:, None] / 2 + 1e-7)


def test_int8_keeps_the_best_match_when_the_margin_exceeds_the_error():
    rng = np.random.default_rng(3)
    rows = unit_rows(rng, 200, 384)
    table = decode(encode("m", [("d", rows)], dtype="int8"))
    for query in unit_rows(rng, 40, 384):
        exact = rows @ query
        best, second = np.sort(exact)[::-1][:2]
        if best - second > 0.01:  # quantisation moves a cosine by well under 0.005 here
            assert np.argmax(table.vectors @ query) == np.argmax(exact)


def test_every_truncation_is_reported_with_sizes(docs):
    data = encode("m", docs[:2], dtype="int8")
    for cut in [0, 5, 11, 12, 30, len(data) // 2, len(data) - 1]:
        with pytest.raises(VectorFormatError) as info:
            decode(data[:cut], source="http://h/t/_embeddings.bin")
        message = str(info.value)
        assert message.startswith("http://h/t/_embeddings.bin: not a valid embeddings file")
        assert "truncated" in message or "header is not JSON" in message


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_prefix_or_extension_fails_cleanly(data):
    blob = encode("m", [("a", unit_rows(np.random.default_rng(0), 3, 8))], dtype="float16")
    cut = data.draw(st.integers(0, len(blob) - 1))
    with pytest.raises(VectorFormatError):
        decode(blob[:cut])
    extra = data.draw(st.binary(min_size=1, max_size=16))
    with pytest.raises(VectorFormatError, match="unexpected bytes"):
        decode(blob + extra)


def _with_header(blob: bytes, **changes) -> bytes:
    (head_len,) = struct.unpack_from("<I", blob, 8)
    header = orjson.loads(blob[12 : 12 + head_len])
    header.update(changes)
    head = orjson.dumps(header)
    start = 12 + len(head)
    old_start = 12 + head_len
    body = blob[old_start + (-old_start % 8) :]
    return MAGIC + struct.pack("<I", len(head)) + head + b"\0" * (-start % 8) + body


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"format": "other"}, "format"),
        ({"version": 2}, "unsupported version"),
        ({"dtype": "int4"}, "unknown dtype"),
        ({"count": 4}, "documents hold 3 rows but count is 4"),
        ({"documents": [{"name": "a", "count": 2}, {"name": "a", "count": 1}]}, "listed twice"),
        ({"dimension": -1}, "non-negative"),
        ({"data_bytes": 5}, "does not match"),
        ({"model": ""}, "no model"),
    ],
)
def test_inconsistent_headers_are_rejected(changes, message):
    blob = encode("m", [("a", unit_rows(np.random.default_rng(0), 3, 8))], dtype="float32")
    with pytest.raises(VectorFormatError, match=message):
        decode(_with_header(blob, **changes))


def test_wrong_magic_and_garbage_are_rejected():
    with pytest.raises(VectorFormatError, match="wrong magic"):
        decode(b"<!doctype html><html>not found</html>")
    with pytest.raises(VectorFormatError, match="not JSON"):
        decode(MAGIC + struct.pack("<I", 3) + b"{x}")


def test_encode_refuses_mixed_dimensions_and_non_finite_values():
    with pytest.raises(ValueError, match="different dimensions"):
        encode("m", [("a", np.ones((1, 4))), ("b", np.ones((1, 5)))])
    with pytest.raises(ValueError, match="NaN"):
        encode("m", [("a", np.array([[np.nan, 1.0]]))])
    with pytest.raises(ValueError, match="unknown dtype"):
        encode("m", [("a", np.ones((1, 4)))], dtype="int4")


def test_zero_rows_stay_zero_and_empty_tables_round_trip():
    table = decode(encode("m", [("a", np.zeros((2, 4)))], dtype="int8"))
    assert np.all(table.vectors == 0)
    empty = decode(encode("m", []))
    assert empty.vectors.shape == (0, 0) and empty.documents == ()
