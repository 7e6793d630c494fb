"""The ``_search/vectors/`` layout: shards of whole documents within one topic, bounded bytes,
rows that round-trip, and the shared vectors searchindex.js is checked against."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.siteformat import vectorshards
from pipeline.search.groups import shard_groups
from pipeline.siteformat.vectorshards import decode_rows, encode_rows, row_bytes

VECTORS = json.loads((Path(__file__).parent / "vectors" / "lexdocs.json").read_text(encoding="utf-8"))


def test_shards_hold_whole_documents_of_a_topic_about_shard_rows_each_and_at_most_the_cap():
    keys = [f"topic/doc-{i}" for i in range(300)]
    rows = [1 + i % 7 for i in range(300)]
    rows[40] = vectorshards.SHARD_CAP + 10  # a document bigger than the cap: a shard alone
    shards = shard_groups(keys, rows)
    assert [first for first, _ in shards] == list(np.cumsum([0] + [n for _, n in shards[:-1]]))  # they tile the run
    assert sum(n for _, n in shards) == 300
    sizes = [sum(rows[f:f + n]) for f, n in shards]
    assert all(size <= vectorshards.SHARD_CAP or n == 1 for size, (_, n) in zip(sizes, shards))
    assert (40, 1) in shards
    mean = sum(sizes) / len(sizes)
    assert vectorshards.SHARD_ROWS / 2 <= mean <= 2 * vectorshards.SHARD_ROWS


def test_rows_round_trip_and_a_missing_vector_stays_missing():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(4, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    data = encode_rows(matrix, np.array([True, False, True, True]))
    assert len(data) == 4 * row_bytes(16)
    rows, present = decode_rows(data, 16)
    assert present.tolist() == [True, False, True, True]
    assert np.all(np.sum(rows[present] * matrix[present], axis=1) > 0.97) and not rows[1].any()
    # one row is one contiguous range: its scale beside its values
    alone, _ = decode_rows(data[2 * row_bytes(16):3 * row_bytes(16)], 16)
    assert np.array_equal(alone[0], rows[2])
    with pytest.raises(ValueError, match="whole number"):
        decode_rows(data[:-1], 16)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 2**32 - 1))
def test_packed_values_round_trip_and_a_decoded_row_keeps_its_direction(dimension, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-7, 8, size=(3, dimension))
    packed = vectorshards.pack_int4(values)
    assert packed.shape == (3, row_bytes(dimension) - vectorshards.ROW_HEADER)
    assert np.array_equal(vectorshards.unpack_int4(packed, dimension), values)
    matrix = rng.normal(size=(3, dimension)).astype(np.float32)
    rows, present = decode_rows(encode_rows(matrix, np.ones(3, bool)), dimension)
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    assert present.all()
    # the nearest of 15 levels within CLIP_RMS root mean squares: never far from the row's direction
    assert np.all(np.sum(rows * unit, axis=1) > (0.9 if dimension > 3 else 0.7))


def test_the_shared_vectors_are_what_python_computes_now():
    from pipeline.client.searchindex import SearchIndex

    for case in VECTORS["documents"]:
        meta = {"topics": [], "documents": case["documents"], "vectors": {"shards": [[0, len(case["documents"]), "x"]]}}
        got = SearchIndex(None, meta).lexical_documents([tuple(x) for x in case["lexical"]])
        assert [list(d) for d in got] == case["chosen"]
        if case["lexical"]:  # the first hit's document always, whatever its size
            first = case["lexical"][0][0]
            assert got[0][0] <= first < got[0][0] + got[0][1]
    from pipeline.siteformat import searchrank as rank

    for case in VECTORS["within_slots"]:
        got = rank.within_slots([tuple(x) for x in case["lexical"]], [tuple(x) for x in case["fused"]], set(case["covered"]))
        assert [list(x) for x in got] == case["ranked"]
    rows = VECTORS["rows"]
    decoded, present = decode_rows(base64.b64decode(rows["base64"]), rows["dimension"])
    assert present.astype(int).tolist() == rows["present"]
    assert np.allclose(decoded, np.array(rows["vectors"]), atol=1e-7)
