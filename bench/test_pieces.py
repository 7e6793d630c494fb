"""Sub-chunk pieces (``bench/ranking/pieces.py``): the split keeps every character once, the
per-chunk reductions match a plain loop, and the variants reduce to the site's ranking when the
pieces say nothing new.

Run: .venv/bin/python -m pytest bench/test_pieces.py -q   (no model, no data needed)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.ranking import pieces  # noqa: E402
from bench.ranking.base import Context, v_score, v_vector  # noqa: E402

TEXT = ("# Guide\n## Install\n\nRun the installer. It asks for a folder! Pick one.\n"
        "Then restart the shell.\n\n    code line one\n    code line two\nDone? Yes.  Really done.")


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_split_keeps_every_character_once_and_no_blank_piece(n):
    ps = pieces.split_pieces(TEXT, n)
    assert "".join(ps) == TEXT
    assert 1 <= len(ps) <= n
    assert all(p.strip() for p in ps)


def test_split_cuts_only_at_line_or_sentence_starts():
    ps = pieces.split_pieces(TEXT, 3)
    assert len(ps) == 3
    cuts = np.cumsum([len(p) for p in ps])[:-1]
    assert set(cuts) <= set(pieces.boundaries(TEXT))
    for c in cuts:  # a line start, or a sentence start after its spaces
        assert TEXT[c - 1] == "\n" or TEXT[:c].rstrip(" \t")[-1] in ".!?"


def test_boundaries_are_line_starts_and_sentence_starts():
    b = pieces.boundaries("One. Two\nthree!  Four e.g.x")
    assert b == [5, 9, 17]


def test_a_text_without_boundary_is_one_piece_and_blank_tails_merge():
    assert pieces.split_pieces("no boundary here at all", 3) == ["no boundary here at all"]
    assert pieces.split_pieces("line one\n\n\n", 2) == ["line one\n\n\n"]
    with pytest.raises(ValueError):
        pieces.split_pieces("x", 0)


def test_heading_block_is_repeated_on_every_piece_with_c():
    h = pieces.heading_lines(TEXT)
    assert TEXT[:h] == "# Guide\n## Install\n\n"
    ps = pieces.pieces_of(TEXT, "3c")
    assert all(p.startswith(TEXT[:h]) for p in ps)
    assert "".join(p[h:] for p in ps) == TEXT[h:]
    assert pieces.heading_lines("no heading\n# later") == 0
    assert pieces.pieces_of("plain. text. here.", "2c") == pieces.split_pieces("plain. text. here.", 2)


def test_reductions_by_owner_match_a_loop():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(7, 4))
    owner = np.array([0, 0, 1, 2, 2, 2, 3])
    mean = pieces.mean_vectors(vecs, owner, 4)
    for c in range(4):
        m = vecs[owner == c].mean(axis=0)
        assert np.allclose(mean[c], m / np.linalg.norm(m))
    sims = rng.normal(size=(2, 7))
    mx = pieces.max_by_owner(sims, owner, 4)
    assert np.allclose(mx, [[sims[q, owner == c].max() for c in range(4)] for q in range(2)])
    with pytest.raises(ValueError):
        pieces.max_by_owner(sims, np.array([0, 0, 1, 1, 3, 3, 3]), 4)
    with pytest.raises(ValueError):
        pieces.mean_vectors(np.array([[1.0, 0], [-1.0, 0]]), np.array([0, 0]), 1)


N = 14


def toy(best_piece: np.ndarray, mean: np.ndarray | None = None) -> Context:
    """One question over N chunks, lexical scores falling with the chunk number and flat chunk
    cosines: the site's ranking is 0, 1, 2, ..."""
    sims = np.full((1, N), 0.3)
    ctx = Context(questions=[None], corpus_ids=["c"] * N, starts=list(range(N)), ends=list(range(1, N + 1)),
                  costs=[1] * N, vecs=np.zeros((N, 2)), qvecs=np.zeros((1, 2)), sims=sims,
                  lexical=[[(n, 100 - 5 * n) for n in range(N)]], doc=np.zeros(N, dtype=int), chunks=None)
    ctx.alt = {"pieces2": {"max": best_piece[None, :], "mean": (sims if mean is None else mean[None, :]).astype(np.float32)}}
    return ctx


def test_pieces_equal_to_the_chunk_change_nothing():
    ctx = toy(np.full(N, 0.3, dtype=np.float32))
    site = v_score(ctx, 0)
    for name in ("piece2-head", "piece2-mean", "piece2-mean-head", "piece2-max", "piece2-avg", "piece2-mavg", "piece2-cmax",
                 "piece2-cmaxhead", "piece2-cmaxhead-d20"):
        assert pieces.VARIANTS[name](ctx, 0) == site, name
    assert pieces.VARIANTS["vector-piece2-mean"](ctx, 0) == v_vector(ctx, 0)


def test_head_lifts_a_chunk_with_a_matching_piece_only_inside_the_first_ten():
    best = np.full(N, 0.3, dtype=np.float32)
    best[8] = 0.9  # inside the head: rises
    best[12] = 0.9  # outside the head: the head rule cannot see it, the full-ranking rule can
    ctx = toy(best)
    order = pieces.VARIANTS["piece2-head"](ctx, 0)
    assert order.index(8) < 8 and order[10:] == list(range(10, N))
    avg = pieces.VARIANTS["piece2-avg"](ctx, 0)
    assert avg.index(12) < 12 and avg.index(8) < 8


def test_own_vector_names_the_vector_side_a_variant_fuses():
    assert pieces.own_vector("piece2-mean-head") == "vector-piece2-mean"
    assert pieces.own_vector("piece3c-max") == "vector-piece3c-max"
    assert pieces.own_vector("piece2-head") is None
    assert pieces.own_vector("score") is None
    assert pieces.kinds_in(["score", "piece3c-max", "vector-piece2-mean", "piece2-head"]) == ["2", "3c"]


def test_margins_pick_the_better_single_method_and_compare_iou_with_the_vector_side():
    res = {"lexical": {"recall": [1.0, 0.0], "iou": [0.1, 0.1]},
           "vec": {"recall": [0.0, 0.5], "iou": [0.3, 0.3]},
           "hyb": {"recall": [1.0, 0.5], "iou": [0.2, 0.2]}}
    m = pieces.margins(res, "hyb", "vec")
    assert m["best"] == "lexical"
    assert m["d_recall"] == pytest.approx(25.0)
    assert m["d_iou"] == pytest.approx(-10.0)


def test_top_costs_is_the_mean_length_of_the_first_k():
    ctx = toy(np.full(N, 0.3, dtype=np.float32))
    ctx.costs = list(range(10, 10 + N))  # chunk n costs 10 + n; the site's first 5 are 0..4
    assert pieces.top_costs([ctx], v_score, k=5) == pytest.approx(12.0)


def test_cmax_head_rule_lifts_a_head_chunk_by_its_best_piece_and_knows_its_side():
    best = np.full(N, 0.3, dtype=np.float32)
    best[8] = 0.9
    best[12] = 0.9
    order = pieces.VARIANTS["piece2-cmaxhead"](toy(best), 0)
    assert order.index(8) < 8 and order[10:] == list(range(10, N))
    assert pieces.VARIANTS["piece2-cmaxhead-d20"](toy(best), 0).index(12) < 12
    assert pieces.own_vector("piece2-cmaxhead") is None
    assert pieces.own_vector("piece2-cmax") == "vector-piece2-cmax"
    with pytest.raises(ValueError):
        pieces.make_piece("2", "chunk", "sideways")(toy(best), 0)
