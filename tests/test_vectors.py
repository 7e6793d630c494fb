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
        ({"version": 1}, "unsupported version"),
        ({"page": 0}, "page must be a positive integer"),
        ({"next": "_index/embeddings-3.bin"}, "is not '_index/embeddings-2.bin'"),
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


# --- pages ------------------------------------------------------------------------------------


def topic_documents(n: int, seed: int = 3, dim: int = 16) -> list[tuple[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(f"doc-{i:04d}", unit_rows(rng, 1 + i % 4, dim)) for i in range(n)]


def read_pages(files: dict[str, bytes]):
    return vectors.read(files.get)


@pytest.mark.parametrize("n", [0, 1, 32, 33, 64, 65, 100])
def test_pages_hold_32_documents_and_join_back_to_the_table(n):
    documents = topic_documents(n)
    pages = vectors.encode_pages("m", documents)
    names = [name for name, _ in pages]
    assert names == vectors.page_names(n)
    assert names[0] == "_embeddings.bin" and all(name == f"_index/embeddings-{p}.bin" for p, name in enumerate(names[1:], 2))
    decoded = [decode(data) for _, data in pages]
    assert [len(t.documents) for t in decoded[:-1]] == [32] * (len(pages) - 1)
    assert [t.page for t in decoded] == list(range(1, len(pages) + 1))
    assert [t.next for t in decoded] == names[1:] + [None]
    whole = read_pages(dict(pages))
    single = decode(encode("m", documents))
    assert whole.documents == single.documents
    assert np.array_equal(whole.vectors, single.vectors)


def test_a_small_topic_is_one_page_without_next():
    data = encode("m", topic_documents(5))
    (head_len,) = struct.unpack_from("<I", data, 8)
    header = orjson.loads(data[12 : 12 + head_len])
    assert header["version"] == 2 and header["page"] == 1 and "next" not in header
    assert vectors.encode_pages("m", topic_documents(5)) == [("_embeddings.bin", data)]


def test_changing_one_document_changes_only_its_page():
    documents = topic_documents(100)
    before = dict(vectors.encode_pages("m", documents))
    edited = list(documents)
    name, rows = edited[40]
    edited[40] = (name, np.vstack([rows, rows[:1]]))  # one chunk more
    after = dict(vectors.encode_pages("m", edited))
    assert before.keys() == after.keys()
    assert [n for n in before if before[n] != after[n]] == ["_index/embeddings-2.bin"]


@given(st.integers(min_value=0, max_value=120))
@settings(max_examples=25, deadline=None)
def test_page_names_follow_from_the_document_count(n):
    pages = vectors.encode_pages("m", topic_documents(n, dim=4))
    assert [name for name, _ in pages] == vectors.page_names(n)
    assert vectors.page_count(n) == len(pages)
    assert all(vectors.is_page_file(name.split("/", 1)[1]) for name, _ in pages[1:])


def test_is_page_file_names_only_later_pages():
    assert vectors.is_page_file("embeddings-2.bin") and vectors.is_page_file("embeddings-314.bin")
    for name in ("embeddings-1.bin", "embeddings-02.bin", "embeddings-.bin", "embeddings-2.json", "page-2.json",
                 "x.doc.json", "embeddings-2x.bin"):
        assert not vectors.is_page_file(name), name


def test_a_missing_later_page_is_an_error_naming_it():
    files = dict(vectors.encode_pages("m", topic_documents(70)))
    del files["_index/embeddings-3.bin"]
    with pytest.raises(VectorFormatError, match="page 3 of the embeddings table is missing") as caught:
        vectors.read(files.get, locate=lambda name: f"site/notes/{name}")
    assert "site/notes/_index/embeddings-3.bin" in str(caught.value)
    assert vectors.read({}.get) is None


def test_join_rejects_pages_that_are_not_one_table():
    pages = [decode(data) for _, data in vectors.encode_pages("m", topic_documents(70))]
    with pytest.raises(VectorFormatError, match="page 2 where page 1"):
        vectors.join(pages[1:])
    with pytest.raises(VectorFormatError, match="page 3 where page 2"):
        vectors.join([pages[0], pages[2]])
    ended = decode(encode("m", topic_documents(70)[:32], page=1))  # no next: the last page
    with pytest.raises(VectorFormatError, match="page 1 is the last but 3 pages"):
        vectors.join([ended, pages[1], pages[2]])
    with pytest.raises(VectorFormatError, match="names a next page"):
        vectors.join(pages[:2])
    short = decode(encode("m", topic_documents(31), page=1, next="_index/embeddings-2.bin"))
    with pytest.raises(VectorFormatError, match="holds 31 documents, expected 32"):
        vectors.join([short, pages[1], pages[2]])
    other = decode(encode("other-model", topic_documents(70)[32:64], page=2, next="_index/embeddings-3.bin"))
    with pytest.raises(VectorFormatError, match="page 2 is other-model"):
        vectors.join([pages[0], other, pages[2]])
    twice = decode(encode("m", topic_documents(70)[:6], page=3))
    with pytest.raises(VectorFormatError, match="listed on two pages"):
        vectors.join([pages[0], pages[1], twice])
