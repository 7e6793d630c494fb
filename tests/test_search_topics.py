"""pipeline.search.index: a topic's share of the _search/ files (segments, its own shards and
blocks, or the site-wide files when it holds the whole site) and the hits a topic filter gives."""

from __future__ import annotations

import itertools

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search.index import SEARCH_DIR, build_search_index
from pipeline.site.build import build
from pipeline.siteformat import searchrank as rank
from pipeline.siteformat.packedrecords import unpack
from pipeline.siteformat.searchrank import query_terms
from pipeline.siteformat.searchtext import shard_of
from searchsites import meta_of, read, site_postings, topic_content
from searchsites import (  # noqa: F401  (module fixtures, used by name)
    built, split,
)


def test_a_topic_filter_ranks_its_topics_as_a_collection_of_their_own(built):
    # the idf counts the chunks the filter allows: a word common in the topic weighs less there
    site, index = open_site(built), None
    for topic in ("section1/topic3", "section0"):
        hits = site.search("echo foxtrot part", 7, method="lexical", topic=topic)
        index = site.search_index()
        chunks = sum(t["count"] for t in index.meta["topics"] if t["id"] == topic or t["id"].startswith(topic + "/"))
        inside = lambda n: any(t["start"] <= n < t["start"] + t["count"] for t in index.meta["topics"]  # noqa: E731
                               if t["id"] == topic or t["id"].startswith(topic + "/"))
        postings = {term: [p for p in site_postings(built).get(term, []) if inside(p[0])] for term in query_terms("echo foxtrot part")}
        want = rank.lexical_ranking(postings, chunks=chunks)[:7]
        assert [(h.chunk.path, h.score) for h in hits] == [
            (index.record(n)["path"], s * index.meta["scoring"]["scale"]) for n, s in want]


def test_a_topics_segments_hold_exactly_its_documents_postings_and_records(built):
    meta = meta_of(built)
    site_wide = site_postings(built)
    starts = [0, *itertools.accumulate(meta["documents"])]
    for t in meta["topics"]:
        assert t["segments"][0][0] == t["first"] and sum(n for _, n, _ in t["segments"]) == t["docs"]
        for first, n, h in t["segments"]:
            segment = read(built, "segments", h)
            inside = range(starts[first], starts[first + n])
            got = {term: rank.decode_postings(e, starts[first]) for term, e in segment["terms"].items()}
            assert got == {term: kept for term, ps in site_wide.items() if (kept := [p for p in ps if p[0] in inside])}
            records = unpack(segment["records"], [t["id"]] * len(inside))
            assert len(records) == len(inside) and {r["topic"] for r in records} == {t["id"]}


def test_a_topic_too_big_for_segments_has_its_own_shards_and_blocks_of_exactly_its_data(built, split):
    meta = meta_of(split)
    big = [(i, t) for i, t in enumerate(meta["topics"]) if t["shards"]]
    assert big and len(big) < len(meta["topics"])  # some topics split, the others keep their segments
    assert all((t["segments"] is None) == bool(t["shards"]) == bool(t["blocks"]) for t in meta["topics"])
    site_wide = site_postings(split)
    starts = [0, *itertools.accumulate(meta["documents"])]
    records = [r for first, n, h in meta["parts"] for r in unpack(read(split, "parts", h)["records"], [
        t["id"] for t in meta["topics"] for _ in range(t["count"])][starts[first]:starts[first + n]])]
    for i, t in big:
        assert len(t["shards"]) >= 2  # ~100 postings a shard: a query reads its terms' shards only
        own: dict = {}
        for s, h in enumerate(t["shards"]):
            shard = read(split, "topics", h)
            assert all(shard_of(term, len(t["shards"])) == s for term in shard)
            own.update({term: rank.decode_document_postings(e, starts, t["first"]) for term, e in shard.items()})
        inside = range(t["start"], t["start"] + t["count"])
        # the site-wide postings (same chunk numbers, same levels) restricted to the topic
        assert own == {term: kept for term, ps in site_wide.items() if (kept := [p for p in ps if p[0] in inside])}
        in_blocks = [r for first, n, h in t["blocks"] for r in unpack(read(split, "blocks", h), [t["id"]] * (starts[first + n] - starts[first]))]
        assert in_blocks == records[t["start"]:t["start"] + t["count"]]
    # the others' segments are the very files of the unsplit site
    for i, t in enumerate(meta["topics"]):
        if t["segments"]:
            assert t["segments"] == meta_of(built)["topics"][i]["segments"]


def test_a_topic_holding_the_whole_site_reads_the_site_wide_shards_with_the_same_hits(tmp_path):
    # one folder of documents: its own term shards would be the site-wide ones byte for byte,
    # and an edit would rewrite each changed shard twice (issue 30)
    content = write_tree(tmp_path / "content", {f"notes/{name.rsplit('/', 1)[1]}": text
                                                for name, text in topic_content(3).items()})
    site = tmp_path / "site"
    build(content, site, SiteConfig(title="T", cache_dir=tmp_path / "cache", embedder="hashing"), embedder=HashingEmbedder(), progress=False)
    build_search_index(site, postings_per_shard=100, records_inline_bytes=0, bundle_postings=0)
    meta = meta_of(site)
    [topic] = [t for t in meta["topics"] if t["count"]]
    assert topic["count"] == meta["chunks"] and len(meta["terms"]) >= 2
    assert topic["shards"] is None and topic["segments"] is None and topic["blocks"]
    assert not (site / SEARCH_DIR / "topics").exists()
    opened = open_site(site)
    for query in ("charlie echo part", "kilo root_path_1", "delta"):
        scoped = opened.search(query, 7, method="lexical", topic=topic["id"])
        assert scoped and scoped == opened.search(query, 7, method="lexical")
