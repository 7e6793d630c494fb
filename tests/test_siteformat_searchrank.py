"""pipeline.siteformat.searchrank: lexical sums, SimHash prompt order, vector order, and the two fusions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.siteformat import searchrank as rank

rankings = st.lists(st.integers(0, 40), unique=True, max_size=30)


def test_lexical_ranking_sums_idf_times_levels_and_ties_go_to_the_lower_chunk():
    postings = {"a": [(3, 5), (1, 5)], "b": [(1, 2), (7, 9)], "c": []}
    a, b = rank.idf_level(10, 2), rank.idf_level(10, 2)
    assert rank.lexical_ranking(postings, chunks=10) == sorted(
        [(1, 5 * a + 2 * b), (3, 5 * a), (7, 9 * b)], key=lambda t: (-t[1], t[0]))
    # a filter leaves chunk 7 out: "b" is then in one chunk of the collection, and weighs more
    assert rank.lexical_ranking(postings, lambda n: n != 7, chunks=9) == [(1, 5 * rank.idf_level(9, 2) + 2 * rank.idf_level(9, 1)),
                                                                         (3, 5 * rank.idf_level(9, 2))]


def test_idf_levels_fall_as_a_term_spreads_and_never_reach_zero():
    levels = [rank.idf_level(1000, df) for df in (1, 2, 10, 100, 500, 1000)]
    assert levels == sorted(levels, reverse=True) and levels[0] > 9 * levels[-2] and levels[-1] == 1
    assert rank.idf_level(1000, 1) == round(rank.IDF_SCALE * np.log(1 + 999.5 / 1.5))


def test_decode_postings_undoes_delta_coding():
    assert rank.decode_postings([[2, 3, 1], [9, 8, 7]]) == [(2, 9), (5, 8), (6, 7)]
    assert rank.decode_postings([[2, 3, 1], [9, 8, 7]], 100) == [(102, 9), (105, 8), (106, 7)]
    # by document: document 1's chunk 0, document 1's chunk 2, document 4's chunk 1
    assert rank.decode_document_postings([[1, 0, 3], [0, 2, 1], [5, 6, 7]], [0, 3, 6, 7, 8, 11]) == [(3, 5), (5, 6), (9, 7)]
    assert rank.decode_document_postings([[0, 3], [2, 1], [5, 6]], [0, 3, 6, 7, 8, 11], base=1) == [(5, 5), (9, 6)]


def test_prompt_ranking_orders_by_distance_then_count_then_chunk():
    q = 0b1011
    prompts = [(0b1011, 5, 3), (0b1010, 2, 3), (0b1011, 9, 3), (0b1001, 9, 3), (0b0100, 1, 3), (0b1111, 4, 0)]
    assert rank.prompt_ranking(prompts, q) == [(9, 0), (5, 0), (2, 1)]
    assert rank.prompt_ranking(prompts, 0) == []


def test_vector_ranking_is_by_cosine():
    m = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    assert [n for n, _ in rank.vector_ranking([10, 11, 12], m, np.array([0.0, 2.0]))] == [11, 12, 10]


@given(rankings, rankings)
def test_rrf_is_symmetric_and_a_chunk_first_in_both_wins(a, b):
    fused = rank.rrf([a, b])
    assert {n for n, _ in fused} == set(a) | set(b)
    assert sorted(fused) == sorted(rank.rrf([b, a]))
    if a and b and a[0] == b[0]:
        assert fused[0][0] == a[0]
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)


@given(rankings)
def test_fusing_with_nothing_keeps_a_ranking(a):
    lexical = [(n, 100 - i) for i, n in enumerate(a)]
    assert rank.fuse(lexical, []) == lexical
    assert rank.fuse([], lexical, "score") == lexical


def test_score_fusion_normalises_lexical_by_its_best():
    fused = rank.score_fusion([(1, 10), (2, 5)], [(2, 0.9), (3, -0.5)], alpha=0.5)
    assert fused == [(2, pytest.approx(0.25 + 0.45)), (1, 0.5), (3, 0.0)]
    with pytest.raises(ValueError):
        rank.fuse([(1, 1)], [(1, 1.0)], "max")


SENTENCE_VECTORS = __import__("json").loads(
    (__import__("pathlib").Path(__file__).parent / "vectors" / "sentences.json").read_text(encoding="utf-8"))


def test_sentences_split_at_line_breaks_and_sentence_ends_and_drop_short_pieces():
    text = "# Title\nThe first sentence is here. The second one follows!  Short? no.\r\nA line without an end mark"
    assert rank.sentences(text) == ["The first sentence is here.", "The second one follows!", "A line without an end mark"]
    assert rank.sentences("Version 1.2.3 stays whole because no space follows.") == [
        "Version 1.2.3 stays whole because no space follows."]
    for v in SENTENCE_VECTORS["texts"]:  # what lexical.js is checked against
        assert rank.sentences(v["text"]) == v["sentences"]


def test_sentence_rerank_reorders_only_the_head_with_the_best_sentence():
    fused = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.1)]
    lexical = [(1, 10), (2, 10), (3, 5)]
    vector = [(2, 0.4), (1, 0.4), (4, 0.2), (3, 0.1)]
    # chunk 2's best sentence is far closer to the query than its chunk: it overtakes chunk 1
    out = rank.sentence_rerank(fused, lexical, vector, {1: 0.4, 2: 0.9}, depth=3)
    assert [n for n, _ in out] == [2, 1, 3, 4]
    assert out[0][1] == pytest.approx(0.5 * 1 + 0.5 * (0.4 + 0.9) / 2)
    assert out[2][1] == pytest.approx(0.5 * 0.5 + 0.5 * (0.1 + 0.1) / 2)  # no sentence: its own cosine
    assert out[3] == (4, 0.1)  # beyond the depth: unchanged
    assert rank.sentence_rerank(fused, lexical, vector, {}, depth=0) == fused
    for case in SENTENCE_VECTORS["rerank"]:
        lex = [tuple(x) for x in case["lexical"]]
        vec = [tuple(x) for x in case["vector"]]
        got = rank.sentence_rerank(rank.fuse(lex, vec, "score"), lex, vec, dict(case["best"]), depth=case["depth"])
        assert [list(x) for x in got] == case["expected"]
