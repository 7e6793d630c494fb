"""pipeline.search.scoring: chunk lengths on a grid, so that a small edit of a chunk leaves its
terms' levels (and so the term shards holding them) as they were (issue 30)."""

from __future__ import annotations

import random
from collections import Counter

from pipeline.search import scoring
from pipeline.search.layout import Postings, shard_files
from pipeline.search.scoring import LENGTH_STEPS, PostingTable, chunk_length, grid
from pipeline.siteformat.searchtext import shard_of

VOCABULARY = [f"word{i}" for i in range(300)]


def chunk(rng: random.Random, words: int) -> dict[str, Counter]:
    return {"title": Counter(rng.sample(VOCABULARY, 2)), "heading": Counter(rng.sample(VOCABULARY, 3)),
            "body": Counter(rng.choices(VOCABULARY, k=words))}


def shards_of(chunks: list[dict[str, Counter]], count: int) -> list[bytes]:
    """The term shards a topic of ``chunks`` (one chunk a document) gets, as ``makers`` writes them."""
    table = PostingTable()
    for c in chunks:
        table.add(c)
    postings = Postings(*table.sorted_postings(), list(table.term_ids), [1] * len(chunks))
    return shard_files(postings.entries(), count)


def test_a_sentence_changed_in_one_chunk_rewrites_only_the_shards_of_its_new_words():
    # one sentence of a 60-word chunk gets two words more: with exact lengths every term of the
    # chunk moved a level, and each of their shards was rewritten (issue 30: dozens of files)
    rng = random.Random(7)
    chunks = [chunk(rng, 60) for _ in range(400)]
    edited = [dict(c) for c in chunks]
    edited[200] = {**chunks[200], "body": chunks[200]["body"] + Counter({"edit": 1, "marker": 1})}
    assert chunk_length(60) == chunk_length(62)  # the case this test is about: the same step
    before, after = shards_of(chunks, 64), shards_of(edited, 64)
    changed = {s for s in range(64) if before[s] != after[s]}
    assert changed == {shard_of("edit", 64), shard_of("marker", 64)}
    assert len(set(chunks[200]["body"])) > 30  # the chunk's other terms sit in most of the 64 shards


def test_chunk_lengths_sit_on_a_coarse_grid_that_most_small_edits_do_not_cross():
    assert LENGTH_STEPS and chunk_length(0) == 0.0 and chunk_length(64) == 64.0
    assert all(abs(chunk_length(n) / n - 1) <= 2 ** (0.5 / LENGTH_STEPS) - 1 + 1e-12 for n in range(1, 5000))
    # two words more in chunks of 40 to 400 words: most keep their step
    crossed = sum(chunk_length(n) != chunk_length(n + 2) for n in range(40, 400))
    assert 0 < crossed < 360 * 0.15
    assert grid(100.0) == grid(100.0, scoring.GRID_STEPS)
