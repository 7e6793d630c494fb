import math

from hypothesis import given, strategies as st

from pipeline.index.stripes import similarity_order, stripe, stripe_factor, stripe_order


def test_stripe_factor_follows_the_seed_examples():
    assert [stripe_factor(n) for n in (7, 8, 12, 16, 25)] == [1, 3, 4, 4, 5]


def test_below_eight_chunks_is_plain_similarity_order():
    assert stripe([4, 2, 7, 1, 3, 5, 6]) == [4, 2, 7, 1, 3, 5, 6]


def test_seed_twelve_chunk_pattern():
    assert stripe(list(range(1, 13))) == [1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12]
    # "Request 3 chunks -> stripe 1": the first stripe spans the similarity range
    assert stripe(list(range(1, 13)))[:3] == [1, 5, 9]


def test_similarity_order_is_descending_and_stable_on_ties():
    assert similarity_order({1: 0.5, 2: 0.9, 3: 0.5, 4: 0.1}) == [2, 1, 3, 4]


def test_stripe_order_excludes_baselines():
    sims = [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    order = stripe_order(sims, {0})
    assert sorted(order) == list(range(1, 10))
    assert order[0] == 1  # the most similar chunk leads
    assert 0 not in stripe_order(sims, {0, 1}) and 1 not in stripe_order(sims, {0, 1})


@given(st.integers(min_value=0, max_value=400))
def test_stripe_is_a_permutation_and_factor_is_bounded(n):
    ordered = list(range(n))
    out = stripe(ordered)
    assert sorted(out) == ordered
    factor = stripe_factor(n)
    if n >= 8:
        assert 2 <= factor <= max(2, n // 2)
        assert factor == max(2, min(n // 2, math.ceil(math.sqrt(n))))
        assert out[: math.ceil(n / factor)] == ordered[::factor]
