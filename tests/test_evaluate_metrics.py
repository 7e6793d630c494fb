"""Findability figures from ranks (pipeline/evaluate/metrics.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.evaluate.metrics import grouped, score, spearman, unreached, worst


def test_recall_and_mrr_by_hand():
    s = score([1, None, 2, 5])
    assert (s.questions, s.found) == (4, 3)
    assert s.recall == 0.75
    assert s.mrr == pytest.approx((1 + 0 + 0.5 + 0.2) / 4)
    assert score([]).recall == 0.0 and score([]).questions == 0
    with pytest.raises(ValueError):
        score([0])


@given(st.lists(st.one_of(st.none(), st.integers(1, 50)), max_size=40))
def test_mrr_never_exceeds_recall_and_both_are_fractions(ranks):
    s = score(ranks)
    assert 0.0 <= s.mrr <= s.recall <= 1.0


def test_grouped_worst_and_unreached():
    items = [("a", 1), ("a", None), ("b", 3), ("c", None)]
    scores = grouped(items, rank=lambda i: i[1], key=lambda i: i[0])
    assert list(scores) == ["a", "b", "c"]
    assert [name for name, _ in worst(scores, 2)] == ["c", "a"]
    sections = [("x.md", ""), ("x.md", "## A"), ("y.md", "")]
    assert unreached(sections, [("x.md", "## A"), ("z.md", "")]) == [("x.md", ""), ("y.md", "")]


def test_spearman_by_hand_and_degenerate_cases():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties get average ranks: x ranks 1.5 1.5 3 4, y ranks 1 2 3 4
    assert spearman([1, 1, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486832980505138)
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1, 2], [1, 2]) is None


@given(st.lists(st.integers(-10**6, 10**6), min_size=3, max_size=30, unique=True))
def test_spearman_is_one_under_any_increasing_transform(values):
    assert spearman(values, [v ** 3 + 7 for v in values]) == pytest.approx(1.0)
