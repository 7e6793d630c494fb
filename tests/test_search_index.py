"""pipeline.search.index: the _search/ files, and what a query fetches from them over HTTP."""

from __future__ import annotations

import itertools
import math
import shutil
from dataclasses import replace
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.search import layout, topicpart
from pipeline.siteformat import searchrank as rank
from pipeline.search.index import MAX_IMPACT, SEARCH_DIR, build_search_index, impacts, listed_files, listed_spans, quantise
from pipeline.siteformat.searchrank import query_terms
from pipeline.siteformat.packedrecords import pack, unpack
from pipeline.siteformat.searchtext import shard_of
from pipeline.site.build import build
from pipeline.siteformat.searchlayout import encoder_names
from test_client_support import Served

SMALL = {"postings_per_shard": 200, "part_weight": 20_000}
"""How ``built`` is indexed: a small site, in parts as a bigger small site would be."""
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def topic_content(n_topics: int = 8) -> dict[str, str]:
    files = {}
    for t in range(n_topics):
        for d in range(3):
            sections = "".join(
                f"## {WORDS[(t + s) % 16].title()} {WORDS[(d + s) % 16]} part {s}\n\n"
                f"Text about {WORDS[t]} and {WORDS[(t * 3 + s) % 16]} with code `root_path_{t}` and words {' '.join(WORDS[s:s + 6])}.\n\n"
                for s in range(5)
            )
            files[f"section{t % 2}/topic{t}/doc{d}.md"] = (
                f"---\ntags: [t{t}, common]\ntype: guide{d}\n---\n# Document {t}.{d} {WORDS[t]}\n\nIntro {WORDS[d]}.\n\n{sections}"
            )
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    from pipeline.site.build import build

    root = tmp_path_factory.mktemp("search")
    content = write_tree(root / "content", topic_content())
    site = root / "site"
    build(content, site, SiteConfig(title="T", cache_dir=root / "cache", embedder="hashing"), embedder=HashingEmbedder(), progress=False)
    build_search_index(site, **SMALL)
    return site


@pytest.fixture(scope="module")
def served(built):
    s = Served(built)
    yield s
    s.close()


def meta_of(site: Path) -> dict:
    return orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes())


def read(site: Path, kind: str, name: str):
    return orjson.loads((site / SEARCH_DIR / layout.content_path(kind, name)).read_bytes())


@pytest.fixture(scope="module")
def partial(built, tmp_path_factory) -> Path:
    """``built`` indexed with records.json just big enough for its records and a few terms."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("partial") / "site"))
    records = sum(len(orjson.dumps(read(built, "parts", h)["records"])) for _, _, h in meta_of(built)["parts"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "ALL_TERMS_FACTOR", 1)  # else a site this small goes in parts
        build_search_index(copy, postings_per_shard=200, records_inline_bytes=records + 1500)
    return copy


@pytest.fixture(scope="module")
def blocks(built, tmp_path_factory) -> Path:
    """``built`` indexed as a site too big for records.json to hold its records: record blocks."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("blocks") / "site"))
    build_search_index(copy, postings_per_shard=200, records_inline_bytes=0)
    return copy


def topic_postings(site: Path) -> list[int]:
    """Each topic's postings, counted in its segments (every topic of ``built`` has them)."""
    return [sum(len(deltas) for _, _, h in t["segments"] for deltas, _ in read(site, "segments", h)["terms"].values())
            for t in meta_of(site)["topics"]]


@pytest.fixture(scope="module")
def split(built, tmp_path_factory) -> Path:
    """``built`` indexed with a segment threshold below half its topics' postings: those topics
    get their own term shards and record blocks (as a 100k-chunk site's big topics do), the
    others keep their segments."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("split") / "site"))
    counts = sorted(topic_postings(built))
    build_search_index(copy, postings_per_shard=100, bundle_postings=counts[len(counts) // 2 - 1])
    return copy


def files_of(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted((site / SEARCH_DIR).rglob("*")) if p.is_file()}


def encoder_of(site: Path) -> tuple[dict, dict[str, bytes]] | None:
    """The site's static query encoder as ``build_search_index(encoder=...)`` takes it: read it
    before a test removes ``_search/``, so the index rebuilt from scratch names the same one."""
    entry = orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes()).get("encoder")
    if not entry:
        return None
    return entry, {name: (site / SEARCH_DIR / name).read_bytes() for name in encoder_names(entry)}


def site_postings(site: Path) -> dict[str, list[tuple[int, int]]]:
    """Every term's postings [(chunk number, level)] as the site-wide files hold them: its parts, or
    its term shards."""
    meta = meta_of(site)
    starts = [0, *itertools.accumulate(meta["documents"])]
    out: dict[str, list] = {}
    for first, _, h in meta["parts"] or ():
        for term, entry in read(site, "parts", h)["terms"].items():
            out.setdefault(term, []).extend(rank.decode_postings(entry, starts[first]))
    for h in meta["terms"] or ():
        for term, entry in read(site, "terms", h).items():
            out[term] = rank.decode_document_postings(entry, starts)
    return out


def test_the_index_is_deterministic_and_stale_files_go(built, tmp_path):
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    before = files_of(copy)
    (copy / SEARCH_DIR / "terms").mkdir()
    (copy / SEARCH_DIR / "terms" / "0123456789ab.json").write_text("{}")
    report = build_search_index(copy, **SMALL)
    assert files_of(copy) == before and report.removed == 1 and report.written == 0
    assert not (copy / SEARCH_DIR / "terms").exists()  # the emptied folder too


def test_every_file_but_the_manifests_is_named_by_its_bytes(built, partial, blocks, split):
    for site in (built, partial, blocks, split):
        listed = listed_files(meta_of(site))
        assert set(files_of(site)) == {f"{SEARCH_DIR}/{rel}" for rel in listed}
        encoder = set(encoder_names(meta_of(site).get("encoder")))  # its folder is named by the table's digest
        for rel in listed - {"meta.json", "records.json", "nodes.json"} - encoder:
            data = (site / SEARCH_DIR / rel).read_bytes()
            kind, name = rel.split("/")
            assert name == f"{layout.content_hash(data)}.{'bin' if kind == 'vectors' else 'json'}", rel


def test_an_unchanged_site_is_not_reindexed_and_a_changed_one_is(built, tmp_path, monkeypatch):
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    before = files_of(copy)
    with monkeypatch.context() as m:
        m.setattr(topicpart, "terms", lambda text: pytest.fail("re-tokenized an unchanged site"))
        assert build_search_index(copy, **SMALL).written == 0
    resource = copy / "section0" / "topic0" / "_index" / "doc0.doc.json"
    doc = orjson.loads(resource.read_bytes())
    next(item for item in doc["items"] if item["index"] == 1)["header_path"] = "## Zebra crossing"
    resource.write_bytes(orjson.dumps(doc))
    # its part and its segment (postings and a record), the manifest
    assert build_search_index(copy, **SMALL).written >= 3
    changed = {rel for rel, data in files_of(copy).items() if before.get(rel) != data}
    assert {rel.split("/")[1] for rel in changed} == {"meta.json", "records.json", "parts", "segments"}
    assert open_site(copy).search("zebra", 1, method="lexical")[0].header_path == "## Zebra crossing"


def test_every_term_sits_in_its_shard_and_every_chunk_has_a_record(built, partial, blocks):
    meta = meta_of(built)
    assert meta["chunks"] == sum(t["count"] for t in meta["topics"]) == sum(meta["documents"]) == 8 * 3 * 6
    # a small site: parts hold every record and every term's postings, a run of documents each
    assert meta["terms"] is None and len(meta["parts"]) >= 2 and meta["records"] is None
    assert [f for f, _, _ in meta["parts"]] == list(itertools.accumulate([0] + [n for _, n, _ in meta["parts"]][:-1]))
    starts = [0, *itertools.accumulate(meta["documents"])]
    records = []
    for first, n, h in meta["parts"]:
        part = read(built, "parts", h)
        for term, (deltas, levels) in part["terms"].items():
            numbers = [starts[first] + x for x in itertools.accumulate(deltas)]
            assert numbers == sorted(set(numbers)) and starts[first] <= numbers[0] and numbers[-1] < starts[first + n]
            assert all(1 <= q <= MAX_IMPACT for q in levels)
        topic_of = [t["id"] for t in meta["topics"] for _ in range(t["count"])][starts[first]:starts[first + n]]
        records += unpack(part["records"], topic_of)
    assert len(records) == meta["chunks"] and records[0]["tags"] == ["common", "t0"] and records[0]["type"] == "guide0"
    assert orjson.loads((built / SEARCH_DIR / "records.json").read_bytes()) == {"meta": meta, "records": None, "terms": {}}
    assert meta["vectors"]["model"] == "hashing-384" and meta["vectors"]["centroids"]  # inline: no file to fetch
    assert all(t["documents"] is None for t in meta["topics"])  # rows of _embeddings.bin are the topic's chunks
    # a bigger site: site-wide term shards, a power of two of them, postings by document
    for site in (partial, blocks):
        meta = meta_of(site)
        assert meta["parts"] is None and len(meta["terms"]) >= 2 and len(meta["terms"]) & (len(meta["terms"]) - 1) == 0
        seen = set()
        for s, h in enumerate(meta["terms"]):
            for term, (deltas, indexes, levels) in read(site, "terms", h).items():
                assert shard_of(term, len(meta["terms"])) == s and term not in seen
                seen.add(term)
                documents = list(itertools.accumulate(deltas))
                assert all(0 <= i < meta["documents"][d] for d, i in zip(documents, indexes))
                assert list(zip(documents, indexes)) == sorted(set(zip(documents, indexes)))
        assert len(seen) == meta["terms_count"]
    assert site_postings(partial) == site_postings(blocks) == site_postings(built)


def test_records_json_and_the_record_blocks_hold_the_records_the_parts_do(built, partial, blocks):
    meta = meta_of(blocks)
    assert meta["records"] is None and orjson.loads((blocks / SEARCH_DIR / "records.json").read_bytes())["records"] is None
    topic_of = [t["id"] for t in meta["topics"] for _ in range(t["count"])]
    starts = [0, *itertools.accumulate(meta["documents"])]
    in_blocks = []
    for t in meta["topics"]:
        assert t["blocks"][0][0] == t["first"] and sum(n for _, n, _ in t["blocks"]) == t["docs"]  # a topic's documents, in order
        for first, n, h in t["blocks"]:
            in_blocks += unpack(read(blocks, "blocks", h), topic_of[starts[first]:starts[first + n]])
    held = orjson.loads((partial / SEARCH_DIR / "records.json").read_bytes())["records"]
    in_parts = [r for first, n, h in meta_of(built)["parts"] for r in unpack(read(built, "parts", h)["records"], topic_of[starts[first]:starts[first + n]])]
    assert unpack(held, topic_of) == in_blocks == in_parts
    # and a record that breaks every derivation rule travels whole
    odd = [dict(in_blocks[0], path="elsewhere/x.md", title="Odd", source="y.md", prompt_hashes=["00ff00ff00ff00ff"], tags=["z"]), *in_blocks[1:3]]
    assert unpack(pack(odd, ["t"] * 3), ["t"] * 3) == odd


def test_records_json_holds_the_rarest_terms_postings_as_the_shards_do(partial, blocks):
    meta = meta_of(partial)
    held = orjson.loads((partial / SEARCH_DIR / "records.json").read_bytes())
    shards = {t: e for h in meta["terms"] for t, e in read(partial, "terms", h).items()}
    assert held["terms"] and len(held["terms"]) < len(shards)
    assert all(shards[t] == e for t, e in held["terms"].items())  # and they stay in their shards
    by_rarity = sorted(shards, key=lambda t: (len(shards[t][0]), t))
    assert sorted(held["terms"], key=by_rarity.index) == by_rarity[:len(held["terms"])]  # the rarest first
    assert orjson.loads((blocks / SEARCH_DIR / "records.json").read_bytes())["terms"] == {}  # too big: none


def test_a_site_goes_in_parts_when_its_records_and_every_term_fit_twice_the_budget(built, tmp_path, monkeypatch):
    packer_sizes = []  # the weighted bytes the builder counts
    from pipeline.search import makers

    real_parts = makers.parts
    monkeypatch.setattr(makers, "parts", lambda *args: packer_sizes.append(args[4]) or real_parts(*args))
    build_search_index(Path(shutil.copytree(built, tmp_path / "probe")), **SMALL, records_inline_bytes=10**9)
    weight = packer_sizes[0]
    monkeypatch.setattr(layout, "ALL_TERMS_FACTOR", 1.5)
    fits = math.ceil(weight / 1.5)
    for budget, small in ((fits, True), (fits - 1, False)):
        copy = Path(shutil.copytree(built, tmp_path / str(budget)))
        build_search_index(copy, **SMALL, records_inline_bytes=budget)
        meta = meta_of(copy)
        assert (meta["parts"] is not None) is small and (meta["terms"] is None) is small
        assert (meta["records"] is None) is small  # else records.json holds the records (they fit either budget)
    # the parts: ceil(weight / PART_WEIGHT) runs of (nearly) equal document counts
    meta = meta_of(built)
    assert len(meta["parts"]) == math.ceil(weight / 20_000) and {n for _, n, _ in meta["parts"]} <= {24 // len(meta["parts"]), -(-24 // len(meta["parts"]))}


def test_every_layout_gives_the_same_hits(built, partial, blocks, split):
    # the layouts cost different requests before the vectors (term shards, record blocks), so
    # under the request budget a query may read fewer vector shards on one: lift the budget to
    # compare what the layouts hold (test_the_vector_shards_fetched_stay_within_the_budget: the budget)
    for method in ("lexical", "hybrid", "auto"):
        for query, topic in (("charlie echo part", None), ("echo foxtrot", "section1/topic3"), ("delta", "section0"),
                             ("kilo root_path_3 unknownword", None), ("alpha bravo", "section1")):
            got = [[replace(h, chunk=replace(h.chunk, href=h.chunk.path)) for h in  # the sites' folders differ
                    open_site(s).search(query, 7, method=method, topic=topic, embedder=HashingEmbedder(), request_budget=None)]
                   for s in (built, partial, blocks, split)]
            assert got[0] and got[0] == got[1] == got[2] == got[3]


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


def test_a_split_index_is_deterministic_skips_an_unchanged_rebuild_and_repairs_a_lost_topic_shard(split, tmp_path):
    copy = Path(shutil.copytree(split, tmp_path / "s"))
    before = files_of(copy)
    meta = meta_of(copy)
    topic = next(t for t in meta["topics"] if t["shards"])
    kwargs = dict(postings_per_shard=100, bundle_postings=_threshold(split))
    assert build_search_index(copy, **kwargs).written == 0  # nothing changed: nothing read or written
    (copy / SEARCH_DIR / layout.content_path("topics", topic["shards"][0])).unlink()
    (copy / SEARCH_DIR / "topics" / "0123456789ab.json").write_text("{}")
    report = build_search_index(copy, **kwargs)
    assert report.written == 1 and report.removed == 1 and files_of(copy) == before
    # the default threshold (no topic of this site is that big): every topic has segments again
    build_search_index(copy, postings_per_shard=100)
    assert all(t["segments"] and t["shards"] is None for t in meta_of(copy)["topics"])
    assert not (copy / SEARCH_DIR / "topics").exists()


def _threshold(split: Path) -> int:
    """The segment threshold ``split`` was built with: its largest segmented topic's postings."""
    meta = meta_of(split)
    return max(sum(len(d) for _, _, h in t["segments"] for d, _ in read(split, "segments", h)["terms"].values())
               for t in meta["topics"] if t["segments"])


def test_a_heading_match_outranks_the_same_word_in_the_body():
    # As on a site: the body (the chunk file) holds the heading context too, so a header-path
    # word is in both fields; the heading field adds to the body's count.
    fields = [
        {"title": Counter(), "heading": Counter({"cache": 1}), "body": Counter({"cache": 1, "other": 4})},
        {"title": Counter(), "heading": Counter({"other": 1}), "body": Counter({"cache": 1, "other": 4})},
    ]
    lengths = [{f: sum(c.values()) for f, c in x.items()} for x in fields]
    scores = dict(impacts(fields, lengths)["cache"])
    assert scores[0] > scores[1] > 0
    q, scale = quantise({"cache": [(0, 2.0), (1, 0.001)]})
    # a level is the term-frequency part in MAX_IMPACT steps of (k1 + 1): the idf is the reader's
    assert q["cache"] == [(0, math.floor(2.0 * MAX_IMPACT / 2.2 + 0.5)), (1, 1)]
    assert scale == pytest.approx(2.2 / (MAX_IMPACT * rank.IDF_SCALE))


def test_the_average_lengths_sit_on_a_grid_an_edit_rarely_crosses():
    from pipeline.search.scoring import GRID_STEPS, grid

    assert grid(100.0) == pytest.approx(100.0, rel=0.5 / GRID_STEPS) and grid(64.0) == 64.0
    # ten words more in a 1,000-chunk site move its average by 0.01: off its step a few times in 1,000
    averages = [100 + k / 10 for k in range(1000)]
    crossed = sum(grid(a) != grid(a + 0.01) for a in averages)
    assert 0 < crossed < 10 and len({grid(a) for a in averages}) > 10


def test_identifiers_are_found_whole_and_by_their_parts(built):
    site = open_site(built)
    hits = site.search("root_path_5", 3, method="lexical")
    assert hits and all(h.topic.endswith("topic5") for h in hits)


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
        return rel.endswith("_embeddings.bin") and rel.startswith(topic + "/")

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


def test_filters_on_front_matter_and_header_path(built):
    site = open_site(built)
    hits = site.search("charlie", 10, method="lexical", tags=["t2"], entry_type="guide1")
    assert hits and all(h.chunk.document == "doc1" and h.topic.endswith("topic2") for h in hits)
    hits = site.search("charlie", 10, method="lexical", header_path="charlie")  # markers and case ignored
    assert hits and all(h.header_path.startswith("## Charlie") for h in hits)
    assert site.search("charlie", 10, method="lexical", tags=["nope"]) == []


def test_a_damaged_meta_json_is_a_corrupt_index_naming_the_field(built, partial, tmp_path):
    from pipeline.client import CorruptIndex

    copy = Path(shutil.copytree(partial, tmp_path / "s"))
    meta_path = copy / SEARCH_DIR / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    del meta["topics"][0]["documents"]
    meta_path.write_bytes(orjson.dumps(meta))
    with pytest.raises(CorruptIndex, match=r"topics\[0\]"):
        open_site(copy).search("charlie", 3, topic="section0")  # a scoped query starts from meta.json
    # an unscoped one from records.json: its manifest is checked alike, and its records too
    records_path = copy / SEARCH_DIR / "records.json"
    held = orjson.loads(records_path.read_bytes())
    records_path.write_bytes(orjson.dumps({**held, "meta": meta}))
    with pytest.raises(CorruptIndex, match=r"topics\[0\]"):
        open_site(copy).search("charlie", 3)
    held["records"]["chunks"].pop()
    records_path.write_bytes(orjson.dumps(held))
    with pytest.raises(CorruptIndex, match=r"records\.json.*|records: "):
        open_site(copy).search("charlie", 3)
    # a part whose records do not cover its chunks is as corrupt, named
    copy = Path(shutil.copytree(built, tmp_path / "p"))
    meta = meta_of(copy)
    first = copy / SEARCH_DIR / layout.content_path("parts", meta["parts"][0][2])
    part = orjson.loads(first.read_bytes())
    part["records"]["chunks"].pop()
    first.write_bytes(orjson.dumps(part))
    with pytest.raises(CorruptIndex, match=r"parts/.*records: "):
        open_site(copy).search("alpha", 30, method="lexical")
    meta["documents"][0] += 1
    meta_path = copy / SEARCH_DIR / "meta.json"
    meta_path.write_bytes(orjson.dumps(meta))
    with pytest.raises(CorruptIndex, match=r"documents: "):
        open_site(copy).search("charlie", 3, topic="section0")


def test_entry_files_are_filtered_by_their_type(tmp_path):
    from pipeline.site.build import build

    fixtures = Path(__file__).parent / "fixtures" / "chunking"
    files = {f"kb/{n}": (fixtures / n).read_bytes() for n in ("crm-how-to.yaml", "error-401.json")}
    files["kb/notes.md"] = "# Notes\n\nAuthentication fails when the API key expired.\n"
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    build(content, site, SiteConfig(title="T", cache_dir=tmp_path / "cache", embedder="hashing"), embedder=HashingEmbedder(), progress=False)
    opened = open_site(site)
    assert {h.chunk.document for h in opened.search("authentication api key", 10, method="lexical")} >= {"error-401.json", "notes"}
    hits = opened.search("authentication api key", 10, method="lexical", entry_type="error")
    assert hits and {h.chunk.document for h in hits} == {"error-401.json"}


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


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({f: st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 9), max_size=5)
                                        for f in ("title", "heading", "body")}), min_size=1, max_size=25))
def test_the_posting_table_gives_exactly_the_reference_impacts(chunks):
    # build_search_index scores through PostingTable (flat arrays); impacts + quantise define it
    from pipeline.search.scoring import PostingTable

    fields = [{f: Counter(c) for f, c in chunk.items()} for chunk in chunks]
    lengths = [{f: sum(c.values()) for f, c in x.items()} for x in fields]
    want, want_scale = quantise(impacts(fields, lengths))
    table = PostingTable()
    for x in fields:
        table.add(x)
    got, scale = table.quantised()
    assert scale == want_scale and all(1 <= level <= MAX_IMPACT for ps in want.values() for _, level in ps)
    assert {t: list(zip(ids.tolist(), levels.tolist())) for t, (ids, levels) in got.items()} == want


def test_a_rebuild_skips_an_unchanged_index_but_repairs_a_missing_file(tmp_path):
    # in a build the search index is skipped by the state's digests, never when a file is gone
    content = write_tree(tmp_path / "content", {"a.md": "# Alpha\n\nThe stripe order.\n", "b/c.md": "# Gamma\n\nThe cache.\n"})
    config = SiteConfig(title="T", cache_dir=tmp_path / "cache")
    site = tmp_path / "site"
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    before = {p.relative_to(site).as_posix(): p.read_bytes() for p in (site / SEARCH_DIR).rglob("*") if p.is_file()}
    (site / SEARCH_DIR / "records.json").unlink()
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    after = {p.relative_to(site).as_posix(): p.read_bytes() for p in (site / SEARCH_DIR).rglob("*") if p.is_file()}
    assert after == before
    (content / "a.md").write_text("# Alpha\n\nThe stripe order, edited.\n", encoding="utf-8")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert "edit" in b"".join(read_bytes for read_bytes in (
        (site / SEARCH_DIR / layout.content_path("parts", h)).read_bytes() for _, _, h in meta_of(site)["parts"])).decode()


def test_the_shared_scoped_vectors_are_what_python_computes_now():
    # tests/js/scoped.test.mjs checks searchplan.js against these: a stale file would pass there
    from pipeline.client.searchindex import Filters, SearchIndex

    held = orjson.loads((Path(__file__).parent / "vectors" / "scoped.json").read_bytes())
    kinds = set()
    for case in held["cases"]:
        index = SearchIndex(None, held["manifests"][case["manifest"]])
        scope = index.scope(Filters(topic=case["prefix"]))
        assert scope == case["scope"]
        if scope is not None:
            assert index.scoped_files(scope, case["terms"]) == case["files"]
            kinds.update(f.split("/")[1] for f in case["files"])
        assert [[n, list(c) if (c := index._container(n, scope)) else None] for n, _ in case["records"]] == case["records"]
    assert kinds == {"topics", "segments"}
