"""Why _embeddings.bin stores int8: with the real model on the sample content, int8 rows rank
chunks as float32 does (docs/decisions/search.md records the numbers), and the client finds answers."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from conftest import ROOT
from pipeline.client import open_site
from pipeline.config import load_config
from pipeline.embedding.registry import make_embedder
from pipeline.site.build import build
from pipeline.site.publish import topic_vectors
from pipeline.siteformat import vectors
from pipeline.siteformat.tree import site_dirs
from pipeline.topicspec.questions import load_questions

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    root = tmp_path_factory.mktemp("sample")
    embedder = make_embedder("minilm")
    config = load_config(ROOT / "build" / "site.toml").with_overrides(cache_dir=root / "cache")
    build(ROOT / "content", root / "site", config, embedder=embedder, progress=False)
    return root / "site", root / "cache", embedder


def queries(site) -> list[str]:
    fixture = orjson.loads((ROOT / "tests" / "fixtures" / "prompt_queries.json").read_bytes())
    asked = [q["query"] for q in fixture["queries"]]
    return asked + [q.text for path in sorted(site.rglob("qa-pairs.md")) for q in load_questions(path)]


def test_int8_ranks_like_float32_on_the_sample(sample):
    site, cache, embedder = sample
    exact, stored = [], []
    for dir_rel in site_dirs(site):
        found = topic_vectors(site, dir_rel, cache)
        if found is None:
            continue
        exact.append(np.vstack([rows for _, rows in found[1]]))
        folder = site / dir_rel
        stored.append(vectors.read(lambda name: (folder / name).read_bytes()).vectors)  # every page
    exact, stored = np.vstack(exact), np.vstack(stored)
    asked = queries(site)
    assert len(exact) > 100 and len(asked) > 60
    q = embedder.embed(asked)
    ref, got = exact @ q.T, stored @ q.T
    assert np.abs(ref - got).max() < 0.005
    flipped = 0
    for j in range(len(asked)):
        best = np.argmax(got[:, j])
        if best != np.argmax(ref[:, j]):  # a near-tie at the top may trade places, no more
            flipped += 1
            assert ref[:, j].max() - ref[best, j] < 0.005, asked[j]
        top_ref = np.argsort(-ref[:, j])[:5]
        fifth = ref[top_ref[-1], j]
        for row in set(np.argsort(-got[:, j])[:5]) - set(top_ref):
            assert fifth - ref[row, j] < 0.005, asked[j]  # only near-ties trade places
    assert flipped <= len(asked) // 20, f"{flipped} of {len(asked)} questions have another best chunk"


def test_client_answers_an_unanticipated_question_by_embedding(sample):
    site, _, _ = sample
    hits = open_site(site).search("what HTTP features must my web host support for readers", 3, method="embedding")
    assert hits[0].topic == "guide/deployment"
    assert all(h.method == "embedding" for h in hits)
