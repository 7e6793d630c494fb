"""What a query fetches from _search/ over HTTP: only what its terms, its topic scope and its
vector budget need."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search import layout
from pipeline.siteformat import searchrank as rank
from pipeline.search.index import SEARCH_DIR, build_search_index, listed_spans
from pipeline.siteformat.searchrank import query_terms
from pipeline.siteformat.searchtext import shard_of
from searchsites import SMALL, meta_of
from test_client_support import Served
from searchsites import (  # noqa: F401  (module fixtures, used by name)
    blocks, built, partial, served, split,
)



def paths_fetched(site) -> list[str]:
    got = []
    original = site.transport.get

    def get(rel):
        got.append(rel)
        return original(rel)

    site.transport.get = get
    return got


def part_files(meta: dict) -> list[str]:
    return [f"{SEARCH_DIR}/{layout.content_path('parts', h)}" for _, _, h in meta["parts"]]


def test_a_cold_lexical_query_fetches_only_what_its_terms_need(served, partial):
    site = open_site(served.url)
    fetched = paths_fetched(site)
    query = "charlie echo part"
    hits = site.search(query, 5, method="lexical")
    assert len(hits) == 5
    # a small site: records.json (the manifest), then its parts: every record and every term's
    # postings, whatever the query (open_site reads no root index.json, and the search needs none)
    meta = site.search_index().meta
    assert fetched[0] == f"{SEARCH_DIR}/records.json" and sorted(fetched[1:]) == sorted(part_files(meta))
    assert site.transport.requests == 1 + len(meta["parts"])
    # a warm query makes no request at all
    assert site.search(query, 5, method="lexical") == hits and site.transport.requests == 1 + len(meta["parts"])
    s = Served(partial)
    try:
        site = open_site(s.url)
        fetched = paths_fetched(site)
        query = "charlie echo part kilo root_path_3"
        assert site.search(query, 5, method="lexical")
        inline = orjson.loads((partial / SEARCH_DIR / "records.json").read_bytes())["terms"]
        meta = site.search_index().meta
        shards = {f"{SEARCH_DIR}/{layout.content_path('terms', meta['terms'][shard_of(t, len(meta['terms']))])}"
                  for t in query_terms(query) if t not in inline}
        assert shards and len(shards) < len(query_terms(query))  # some terms inline, some not
        # the bound: records.json (the manifest, every record, the rarest terms), one file per
        # distinct shard of the other terms; no root index.json; the hits' records cost no
        # request of their own
        assert fetched[0] == f"{SEARCH_DIR}/records.json" and sorted(fetched[1:]) == sorted(shards)
        assert site.transport.requests == 1 + len(shards)
    finally:
        s.close()


def outside(meta: dict, fetched: list[str], topic: str) -> list[str]:
    """The files of ``fetched`` a query scoped to ``topic`` should not need: site-wide files
    (records.json, term shards, parts) and any file holding another topic's data."""
    mine = [t for t in meta["topics"] if t["id"] == topic or t["id"].startswith(topic + "/")]
    ranges = [(t["start"], t["start"] + t["count"]) for t in mine]
    owned = {f"{SEARCH_DIR}/{rel}": span for rel, span in listed_spans(meta).items()}

    def ok(rel: str) -> bool:
        if rel == f"{SEARCH_DIR}/meta.json":
            return True
        if rel in owned:
            span = owned[rel]
            return span is not None and any(a <= span[0] and span[1] <= b for a, b in ranges)
        return rel.startswith(topic + "/") and (rel.endswith("_embeddings.bin") or "/_index/embeddings-" in rel)  # its vector pages

    return [rel for rel in fetched if not ok(rel)]


def segment_files(meta: dict, topic_id: str) -> list[str]:
    return [f"{SEARCH_DIR}/{layout.content_path('segments', h)}" for t in meta["topics"] if t["id"] == topic_id for _, _, h in t["segments"]]


def test_a_topic_scoped_hybrid_query_fetches_only_that_topics_vectors(served, monkeypatch):
    from pipeline.client import searchindex, searchplan  # searchplan reads the limits when a query runs

    site = open_site(served.url)
    fetched = paths_fetched(site)
    hits = site.search("echo foxtrot", 5, method="hybrid", topic="section1/topic3", embedder=HashingEmbedder())
    assert hits and all(h.topic == "section1/topic3" and h.method == "hybrid" for h in hits)
    meta = site.search_index().meta
    segments = segment_files(meta, "section1/topic3")
    # the bound: meta.json (centroids inline), the topic's segments (its postings and records),
    # and the topic's _embeddings.bin whole (at most VECTOR_ROWS rows); no root index.json,
    # site-wide file, record block, vector shard or other topic's file
    topic = next(t for t in meta["topics"] if t["id"] == "section1/topic3")
    assert topic["count"] <= searchindex.VECTOR_ROWS
    assert sorted(fetched) == sorted([f"{SEARCH_DIR}/meta.json", *segments, topic["embeddings"]])
    assert site.transport.requests == 2 + len(segments) and outside(meta, fetched, "section1/topic3") == []
    # its vector candidates: every row of the topic, not only its hits' documents
    index = site.search_index()
    assert index.whole_topics(searchindex.Filters(topic="section1/topic3"))
    assert len(index.vector(HashingEmbedder().embed(["echo foxtrot"])[0], searchindex.Filters(topic="section1/topic3"))) == topic["count"]
    # a scope of more rows reads the vector shard of its hits' documents (shards never cross a topic)
    big = open_site(served.url)
    fetched_big = paths_fetched(big)
    monkeypatch.setattr(searchplan, "VECTOR_ROWS", topic["count"] - 1)
    assert big.search("echo foxtrot", 5, method="hybrid", topic="section1/topic3", embedder=HashingEmbedder())
    shards = [p for p in fetched_big if p.startswith(f"{SEARCH_DIR}/vectors/")]
    assert sorted(fetched_big) == sorted([f"{SEARCH_DIR}/meta.json", *segments, *shards]) and 1 <= len(shards)
    assert outside(meta, fetched_big, "section1/topic3") == []
    monkeypatch.undo()
    lexical = open_site(served.url)
    fetched = paths_fetched(lexical)
    scoped = lexical.search("echo foxtrot", 5, method="lexical", topic="section1/topic3")
    assert scoped and sorted(fetched) == sorted([f"{SEARCH_DIR}/meta.json", *segments]) and lexical.transport.requests == 1 + len(segments)
    # the same rankings as through the site-wide files (the same levels, the same collection)
    wide = open_site(served.url)
    wide.search_index().scope = lambda filters: None
    for method in ("lexical", "hybrid", "auto"):
        got = [wide.search("echo foxtrot", 5, method=method, topic="section1/topic3", embedder=HashingEmbedder()),
               site.search("echo foxtrot", 5, method=method, topic="section1/topic3", embedder=HashingEmbedder())]
        assert got[0] == got[1]


@pytest.mark.parametrize("method", ["lexical", "hybrid", "auto"])
def test_a_query_scoped_to_a_topic_too_big_for_segments_fetches_only_that_topics_files(split, built, method, monkeypatch):
    from pipeline.client import searchplan  # reads the limits when a query runs

    meta = meta_of(split)
    i, topic = next((i, t) for i, t in enumerate(meta["topics"]) if t["shards"] and t["id"] == "section1/topic3")
    # more rows than a whole _embeddings.bin may have: vectors from the hits' documents' shards,
    # as for a big topic
    monkeypatch.setattr(searchplan, "VECTOR_ROWS", topic["count"] - 1)
    s = Served(split)
    try:
        for query in ("echo foxtrot", "charlie echo part kilo root_path_3", "zzzunknownword delta"):
            site = open_site(s.url)
            fetched = paths_fetched(site)
            hits = site.search(query, 5, method=method, topic=topic["id"], embedder=HashingEmbedder())
            assert hits and all(h.topic == topic["id"] for h in hits)
            assert outside(meta, fetched, topic["id"]) == []
            # the bound: meta.json, the topic's shard of each distinct query term's shard, the
            # record blocks of its hits (at most one a hit), and for vectors its hits' documents' shards
            index = site.search_index()
            shards = index.scoped_files([i], query_terms(query))
            blocks = {f"{SEARCH_DIR}/{layout.content_path('blocks', h)}" for _, _, h in topic["blocks"]}
            assert fetched[0] == f"{SEARCH_DIR}/meta.json" and set(shards) <= set(fetched)
            assert len(shards) <= len(query_terms(query)) and all(p.startswith(f"{SEARCH_DIR}/topics/") for p in shards)
            rest = [p for p in fetched[1:] if p not in shards]
            assert {p for p in rest if "/blocks/" in p} <= blocks
            assert [p for p in rest if "/blocks/" not in p] == [p for p in rest if p.startswith(f"{SEARCH_DIR}/vectors/")]
            assert len(fetched) == len(set(fetched))  # every file once
            # and the ranking the segments and the site-wide files give
            wide = open_site(split)
            wide.search_index().scope = lambda filters: None  # the site-wide path
            for other in (open_site(built), wide):
                assert [(h.chunk.path, h.score) for h in other.search(query, 5, method=method, topic=topic["id"], embedder=HashingEmbedder())] == \
                    [(h.chunk.path, h.score) for h in hits]
    finally:
        s.close()


def test_a_scope_of_topics_with_and_without_segments_ranks_as_the_site_wide_files(split, monkeypatch):
    from pipeline.client import searchplan  # reads the limits when a query runs

    meta = meta_of(split)
    section = [t for t in meta["topics"] if t["id"].startswith("section0/")]
    assert {bool(t["segments"]) for t in section} == {True, False}  # a mixed scope
    monkeypatch.setattr(searchplan, "BUNDLE_TOPICS", len(section))
    site = open_site(split)
    fetched = paths_fetched(site)
    wide = open_site(split)
    wide.search_index().scope = lambda filters: None
    for query in ("charlie echo part", "alpha root_path_6 kilo", "delta"):
        for method in ("lexical", "hybrid"):
            got = site.search(query, 8, method=method, topic="section0", embedder=HashingEmbedder())
            assert got and got == wide.search(query, 8, method=method, topic="section0", embedder=HashingEmbedder())
    assert outside(meta, fetched, "section0") == [] and any("/topics/" in p for p in fetched) and any("/segments/" in p for p in fetched)


def test_an_unscoped_hybrid_query_fetches_its_lexical_documents_vector_shards(served):
    from pipeline.client import searchindex

    site = open_site(served.url)
    fetched = paths_fetched(site)
    hits = site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=None)
    index = site.search_index()
    lexical = index.lexical("echo foxtrot", searchindex.Filters())
    documents = index.lexical_documents(lexical)
    assert len(documents) == searchindex.LEX_DOCUMENTS  # five documents, in hit order, each a hit's
    starts = [first for first, _ in documents]
    assert starts == list(dict.fromkeys(index.doc_starts[index.document_of(n)] for n, _ in lexical))[:5]
    wanted = list(dict.fromkeys(index.vector_shard(first)[0] for first in starts))
    # the bound: records.json (the manifest, centroids inline), the parts (every record and, on
    # this small site, every term), then the shards of those documents (at most 5); nothing else
    # (no term shard, record block, segment, index.json or topic _embeddings.bin)
    parts = part_files(index.meta)
    assert fetched[0] == f"{SEARCH_DIR}/records.json" and sorted(fetched[1:1 + len(parts)]) == sorted(parts)
    assert sorted(fetched[1 + len(parts):]) == sorted(wanted)
    assert site.transport.requests == 1 + len(parts) + len(wanted) <= 1 + len(parts) + searchindex.LEX_DOCUMENTS
    assert hits and all(h.method == "hybrid" for h in hits)
    # warm: the same hits, no request
    assert site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=None) == hits
    assert site.transport.requests == 1 + len(parts) + len(wanted)


def test_the_vector_shards_fetched_stay_within_the_budget(served, built):
    from pipeline.client import searchindex

    wide = open_site(served.url).search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=None)
    site = open_site(served.url)
    fetched = paths_fetched(site)
    spent = 1 + len(meta_of(built)["parts"])  # records.json and the parts
    narrow = site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=spent + 2)
    shards = [p for p in fetched if p.startswith(f"{SEARCH_DIR}/vectors/")]
    index = site.search_index()
    wanted = list(dict.fromkeys(index.vector_shard(first)[0] for first, _ in
                                index.lexical_documents(index.lexical("echo foxtrot", searchindex.Filters()))))
    # the lexical side took `spent` requests: two shards are left, the first two in hit order
    assert len(wanted) > 2 and shards == wanted[:2] and site.transport.requests == spent + 2
    # issue 11's bound: with request_budget=6 a cold query makes at most 6 requests, or its
    # lexical side and one vector request
    capped = open_site(served.url)
    for query in ("echo foxtrot", "charlie echo part", "delta kilo root_path_3"):
        before = capped.transport.requests
        capped.search(query, 5, method="hybrid", embedder=HashingEmbedder(), request_budget=6)
        assert capped.transport.requests - before <= max(6, spent + 1)
    # the documents left out have no vector evidence: every vector candidate lies in those two shards
    lexical = index.lexical("echo foxtrot", searchindex.Filters())
    vector = index.document_vector(lexical, HashingEmbedder().embed(["echo foxtrot"])[0], 0)  # held shards only
    assert vector and {index.vector_shard(n)[0] for n, _ in vector} == set(wanted[:2])
    # and keep their lexical places: the vectors re-order only the chunks that have one
    ranked = rank.within_slots(lexical, rank.fuse(lexical, vector, "score"), {n for n, _ in vector})
    assert [(h.chunk.document, h.chunk.index) for h in narrow] == [
        (index.record(n)["document"], index.record(n)["index"]) for n, _ in ranked[:5]]
    assert narrow and wide
    assert len(index.document_vector(lexical, HashingEmbedder().embed(["echo foxtrot"])[0], 100)) > len(vector)
    # at least one shard, whatever the query spent
    site = open_site(served.url)
    fetched = paths_fetched(site)
    site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=0)
    assert [p for p in fetched if p.startswith(f"{SEARCH_DIR}/vectors/")] == wanted[:1]


def test_a_query_without_lexical_hits_reads_the_closest_topics_vectors(served):
    site = open_site(served.url)
    fetched = paths_fetched(site)
    hits = site.search("zzzunknownword", 5, method="hybrid", embedder=HashingEmbedder())
    vectors = [p for p in fetched if p.endswith("_embeddings.bin")]
    assert hits and 1 <= len(vectors) <= 3 and not [p for p in fetched if "/vectors/" in p]


def test_on_a_site_too_big_for_records_json_the_hits_records_come_in_blocks(blocks):
    s = Served(blocks)
    try:
        site = open_site(s.url)
        fetched = paths_fetched(site)
        hits = site.search("charlie echo part", 5, method="lexical")
        meta = site.search_index().meta
        shards = {f"{SEARCH_DIR}/{layout.content_path('terms', meta['terms'][shard_of(t, len(meta['terms']))])}"
                  for t in query_terms("charlie echo part")}
        block_files = [p for p in fetched if p.startswith(f"{SEARCH_DIR}/blocks/")]
        assert len(hits) == 5 and 1 <= len(block_files) <= 5
        assert sorted(fetched) == sorted([f"{SEARCH_DIR}/records.json", *shards, *block_files])
    finally:
        s.close()


def test_bodies_come_gzipped_over_one_kept_alive_connection(served, built):
    site = open_site(served.url)
    fetched = paths_fetched(site)
    site.search("charlie echo part", 5, method="lexical")
    raw = sum((built / p).stat().st_size for p in ["index.json", *fetched])
    assert site.transport.bytes < raw / 2  # JSON compresses well; the server gzips, the client inflates
    conns = site.transport._local.conns
    assert len(conns) == 1


def test_centroids_of_many_topics_move_to_a_file_and_rank_the_same(built, tmp_path, monkeypatch):
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    monkeypatch.setattr(layout, "CENTROIDS_INLINE_BYTES", 0)
    build_search_index(copy, **SMALL)
    meta = meta_of(copy)
    href = meta["vectors"]["href"]
    assert href.startswith("centroids/") and href.endswith(".bin") and "centroids" not in meta["vectors"]
    assert href == layout.content_path("centroids", layout.content_hash((copy / SEARCH_DIR / href).read_bytes()))
    site = open_site(copy)
    fetched = paths_fetched(site)
    # the centroids choose vectors for a query without lexical hits (else its hits' documents do)
    got = site.search("zzzunknownword", 5, method="hybrid", embedder=HashingEmbedder())
    assert f"{SEARCH_DIR}/{href}" in fetched and got
    assert [(h.chunk.path, h.score) for h in got] == \
        [(h.chunk.path, h.score) for h in open_site(built).search("zzzunknownword", 5, method="hybrid", embedder=HashingEmbedder())]
