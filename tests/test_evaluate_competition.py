"""Sections of different documents that compete (pipeline/evaluate/competition.py)."""

from __future__ import annotations

import numpy as np

from pipeline.evaluate.competition import competing, text_pairs, vector_pairs

LONG = "Install the widget daemon with the package manager, then enable the service and restart the machine once."


def test_near_identical_vectors_pair_only_across_documents():
    v = np.array([[1, 0, 0], [0.99, 0.14, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
    pairs = vector_pairs(v, ["a.md", "b.md", "a.md", "c.md"])
    assert [(i, j) for i, j, _ in pairs] == [(0, 1), (1, 2)]  # 0 and 2 are one document's
    assert all(c >= 0.95 for _, _, c in pairs)


def test_shared_text_pairs_and_short_or_unrelated_text_does_not():
    texts = [LONG, LONG.replace("once", "twice"), "Completely different words about configuring ports and timeouts here.",
             "</div>", "</div>", LONG]
    sources = ["a.md", "b.md", "c.md", "d.md", "e.md", "a.md"]
    pairs = {(i, j) for i, j, _ in text_pairs(texts, sources)}
    assert (0, 1) in pairs and (1, 5) in pairs
    assert (0, 5) not in pairs  # the same document
    assert (3, 4) not in pairs  # a lone tag is no competition
    assert not any(2 in p for p in pairs)


def test_competing_gives_section_pairs_once_with_their_best_figures():
    keys = [("a.md", "## Install"), ("a.md", "## Install"), ("b.md", "## Setup"), ("c.md", "")]
    vectors = np.array([[1, 0], [0.6, 0.8], [1, 0], [0, 1]], dtype=np.float32)
    texts = [LONG, "short", LONG, "other words entirely, nothing in common with the rest of them at all"]
    found = competing(keys, vectors, texts)
    assert len(found) == 1
    (pair,) = found
    assert {pair.a, pair.b} == {("a.md", "## Install"), ("b.md", "## Setup")}
    assert pair.cosine == 1.0 and pair.jaccard == 1.0 and pair.kind == "vectors+text"
    assert competing(keys, None, None) == []
