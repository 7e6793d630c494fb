"""``Site.reader()``: a cold reader sharing what its site parsed, and ``Site.qa_pairs``
(pipeline/client/site.py, ``SearchIndex.cold``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsite import QA_PAIRS, build_site
from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder

QUERIES = ["install the widget daemon", "port timeout option", "restart after change configuration",
           "database migration sqlite", "error 1603 installer"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("reader"), qa_pairs=True)


def hits(site, query: str) -> list[tuple]:
    # a budget of one request: a warm reader holds shards a cold one must fetch, so they differ
    found = site.search(query, 5, method="hybrid", embedder=HashingEmbedder(), request_budget=1)
    return [(h.source, h.chunk.index, round(h.score, 6), h.method) for h in found]


def test_a_reader_searches_as_a_fresh_site_whatever_was_asked_before(site):
    base = open_site(site)
    for q in QUERIES:
        hits(base, q)  # the base is warm now: its index holds every shard
    warm_differs = 0
    for q in QUERIES:
        cold = hits(open_site(site), q)
        assert hits(base.reader(), q) == cold
        warm_differs += hits(base, q) != cold
    assert warm_differs  # the comparison can fail: a warm reader answers some of them otherwise


def test_a_reader_counts_its_own_requests_and_reuses_the_parsed_manifest(site):
    base = open_site(site)
    base.search(QUERIES[0], 5, method="lexical")
    index = base.search_index()
    reader = base.reader()
    cold = reader.search_index()
    assert cold is not index and cold.meta is index.meta  # parsed once, shared
    assert cold.fetches == 1 and cold.spent() == 1  # its manifest, as a first query finds it
    assert reader.topics() == base.topics()


def test_readers_fetch_and_count_each_file_but_parse_it_once(site):
    """An evaluation asks thousands of questions each on a cold reader: a file one reader parsed
    is fetched and counted by the next (its requests and budget are a first query's) but not
    parsed again."""
    base = open_site(site)
    first, second = base.reader(), base.reader()
    assert hits(first, QUERIES[0]) == hits(second, QUERIES[0])
    one, two = first.search_index(), second.search_index()
    assert one.fetches == two.fetches > 1  # each counted the files of its query
    read = [rel for rel in two._files if rel not in two._opened]
    assert read and all(two._files[rel] is one._files[rel] for rel in read)


def test_qa_pairs_as_published(site):
    text, url = open_site(site).qa_pairs("guide")
    assert text == QA_PAIRS and url.endswith("guide/qa-pairs.md")
    assert open_site(site).qa_pairs("reference") is None
