"""The re-ranking variants of ``bench/ranking/`` (e5, MaxSim) re-order only the fused head, the way
their signal says, and leave the rest of the ranking as score fusion made it.

Run: .venv/bin/python -m pytest bench/test_ranking_experiments.py -q   (no model, no data needed)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ranking.base import Context, v_score  # noqa: E402
from bench.ranking.e5 import make_e5  # noqa: E402
from bench.ranking.maxsim import make_maxsim  # noqa: E402

N = 14


def toy() -> Context:
    """One question over N chunks: lexical scores falling with the chunk number, cosines flat, so
    the site's ranking is 0, 1, 2, ... and any other head order comes from the re-ranker."""
    sims = np.full((1, N), 0.3)
    lexical = [[(n, 100 - 5 * n) for n in range(N)]]
    return Context(questions=[None], corpus_ids=["c"] * N, starts=list(range(N)), ends=list(range(1, N + 1)),
                      costs=[1] * N, vecs=np.zeros((N, 2)), qvecs=np.zeros((1, 2)), sims=sims, lexical=lexical,
                      doc=np.zeros(N, dtype=int), chunks=None)


def test_the_site_order_of_the_toy_is_by_chunk_number():
    assert v_score(toy(), 0) == list(range(N))


def test_e5_alone_reorders_the_head_by_its_cosine_and_keeps_the_tail():
    ctx = toy()
    cos = {n: 0.5 + 0.01 * n for n in range(10)}  # rises with the number: the head reverses
    ctx.alt = {"e5": [cos]}
    order = make_e5(10, "alone")(ctx, 0)
    assert order[:10] == list(range(9, -1, -1))
    assert order[10:] == list(range(10, N))


def test_e5_borda_moves_a_chunk_the_encoder_ranks_first_up_but_not_past_a_clear_leader():
    ctx = toy()
    cos = {n: 0.5 for n in range(10)}
    cos[6] = 0.9  # e5's first, fused 7th: rank sum 6 + 0, ahead of chunk 3's 3 + 4
    ctx.alt = {"e5": [cos]}
    order = make_e5(10, "borda")(ctx, 0)
    assert order.index(6) < 6  # moved up
    assert order[0] == 0  # fused first, e5's second: sum 0 + 1 = 1, the smallest


def test_maxsim_in_the_vector_term_lifts_a_chunk_whose_tokens_match():
    ctx = toy()
    ms = {n: 0.0 for n in range(10)}
    ms[9] = 1.0  # only chunk 9 matches token by token: its vector term 0.65 against 0.15
    ctx.alt = {"maxsim": [ms]}
    order = make_maxsim("vec")(ctx, 0)
    assert order.index(9) < 9
    assert order[10:] == list(range(10, N))
    assert sorted(order) == list(range(N))


def test_a_signal_that_agrees_with_the_site_changes_nothing():
    ctx = toy()
    ctx.alt = {"e5": [{n: 1.0 - 0.01 * n for n in range(10)}], "maxsim": [{n: 1.0 - 0.01 * n for n in range(10)}]}
    site = v_score(ctx, 0)
    for variant in (make_e5(10, "alone"), make_e5(10, "borda"), make_e5(10, "three"), make_maxsim("alone"),
                    make_maxsim("vec")):
        assert variant(ctx, 0) == site
