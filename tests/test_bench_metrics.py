"""Self-check of the metric math on toy spans, every expected value computed by hand.

Run: .venv/bin/python -m pytest tests/test_bench_metrics.py -q   (no model, no data needed)
"""

from __future__ import annotations


import pytest

from bench.metrics import (
    count_chunks_needed,
    intersection_length,
    merge,
    precision_omega,
    retrieval_scores,
    total,
)


def test_merge_sorts_joins_and_drops_empty():
    assert merge([(10, 20), (0, 5), (5, 7), (15, 25), (30, 30)]) == [(0, 7), (10, 25)]


def test_total_is_a_plain_sum():
    assert total([(0, 10), (5, 15)]) == 20


def test_intersection_length():
    a = merge([(0, 10), (20, 30)])
    b = merge([(5, 25)])
    assert intersection_length(a, b) == 5 + 5


def test_single_chunk_covering_reference():
    # chunk [0,100) contains ref [40,60): I=20, L=100, R=20
    r = retrieval_scores([("c", 0, 100)], [(40, 60)], "c")
    assert r["recall"] == 1.0
    assert r["precision"] == pytest.approx(20 / 100)
    assert r["iou"] == pytest.approx(20 / (100 + 20 - 20))


def test_partial_overlap_and_other_corpus():
    # refs [10,30) and [50,60): R = 30.
    # retrieved: ("c", 0, 20) -> covers [10,20) = 10 chars
    #            ("c", 55, 100) -> covers [55,60) = 5 chars
    #            ("d", 10, 30) -> other corpus: no overlap, but its 20 chars count in L
    # I = 15, L = 20 + 45 + 20 = 85
    r = retrieval_scores([("c", 0, 20), ("c", 55, 100), ("d", 10, 30)], [(10, 30), (50, 60)], "c")
    assert r["recall"] == pytest.approx(15 / 30)
    assert r["precision"] == pytest.approx(15 / 85)
    assert r["iou"] == pytest.approx(15 / (85 + 30 - 15))


def test_overlapping_retrieved_chunks_count_once_in_I_twice_in_L():
    # chunks [0,30) and [20,50) both cover ref [25,35): I = |[25,35)| = 10 (union), L = 60
    r = retrieval_scores([("c", 0, 30), ("c", 20, 50)], [(25, 35)], "c")
    assert r["recall"] == 1.0
    assert r["precision"] == pytest.approx(10 / 60)
    assert r["iou"] == pytest.approx(10 / (60 + 10 - 10))


def test_nothing_relevant_retrieved():
    r = retrieval_scores([("c", 100, 200)], [(0, 50)], "c")
    assert r == {"recall": 0.0, "precision": 0.0, "iou": 0.0}


def test_precision_omega_strict_and_touching():
    # corpus chunks [0,10) [10,20) [20,30) [30,40); ref [12,25)
    # strict: needed = [10,20) and [20,30) -> union [10,30) = 20 chars, I = 13 -> 13/20
    # touching: [0,10) and [30,40) do not touch [12,25); same result
    chunks = [(0, 10), (10, 20), (20, 30), (30, 40)]
    assert precision_omega(chunks, [(12, 25)]) == pytest.approx(13 / 20)
    # ref [10,20) exactly equals a chunk: strict -> 1.0; touching also takes [0,10) and [20,30)
    assert precision_omega(chunks, [(10, 20)]) == 1.0
    assert precision_omega(chunks, [(10, 20)], touching=True) == pytest.approx(10 / 30)


def test_precision_omega_reference_not_fully_covered_by_chunks():
    # chunks leave a gap [10,15): ref [5,20) -> needed [0,10) and [15,30)
    # I = 5 + 5 = 10; union(needed ∪ ref) = [0,30) = 30 -> 10/30
    assert precision_omega([(0, 10), (15, 30)], [(5, 20)]) == pytest.approx(10 / 30)


def test_precision_omega_no_chunk_overlaps():
    assert precision_omega([(0, 10)], [(20, 30)]) == 0.0


def test_count_chunks_needed():
    assert count_chunks_needed([(0, 10), (10, 20), (20, 30)], [(5, 10)]) == 1


def test_spans_from_strings_cursor_and_lenient():
    from bench.spans import SpanError, spans_from_strings

    text = "ab ab  cd\n\n  ef"
    # moving cursor: the second "ab" is found after the first
    assert spans_from_strings(text, ["ab", "ab"]) == [(0, 2), (3, 5)]
    # whitespace rewritten ("cd\nef"): lenient maps first..last non-space character
    assert spans_from_strings(text, ["ab ab", "cd\nef"], lenient=True) == [(0, 5), (7, 15)]
    with pytest.raises(SpanError):
        spans_from_strings(text, ["cd\nef"])
    # overlapping chunks: the search restarts just after the previous start
    assert spans_from_strings("abcabc", ["abca", "cabc"], overlapping=True) == [(0, 4), (2, 6)]


def test_budget_cuts_the_overflowing_chunk():
    import numpy as np

    from bench.chroma_eval import ChunkSet, budget_ranges, count_tokens_many

    text = "one two three four five six"
    chunks = ChunkSet(["c", "c"], np.array([0, 14]), np.array([13, 27]), [text[0:13], text[14:27]])
    costs = count_tokens_many(chunks.texts, special=False)
    assert costs == [3, 3]
    # 4 pieces: all of chunk 0, then the first piece ("four") of chunk 1
    assert budget_ranges([0, 1], chunks, costs, 4) == [("c", 0, 13), ("c", 14, 18)]
    # reading order matters: chunk 1 first, then 1 piece of chunk 0
    assert budget_ranges([1, 0], chunks, costs, 4) == [("c", 14, 27), ("c", 0, 3)]
    assert budget_ranges([0, 1], chunks, costs, 100) == [("c", 0, 13), ("c", 14, 27)]
    # an embedded prefix ("intro\n", 1 piece) is paid before the span
    pre = ChunkSet(["c", "c"], np.array([0, 14]), np.array([13, 27]), [text[0:13], "intro\n" + text[14:27]])
    pre_costs = count_tokens_many(pre.texts, special=False)
    assert pre_costs == [3, 4]
    assert budget_ranges([0, 1], pre, pre_costs, 5) == [("c", 0, 13), ("c", 14, 18)]
    assert budget_ranges([0, 1], pre, pre_costs, 4) == [("c", 0, 13)]
