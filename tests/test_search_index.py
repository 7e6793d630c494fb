"""pipeline.search.index: the _search/ files, and what a query fetches from them over HTTP."""

from __future__ import annotations

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
from pipeline.search.index import SEARCH_DIR, build_search_index, impacts, quantise
from pipeline.search.records import pack, unpack
from pipeline.search import rank
from pipeline.search.rank import query_terms
from pipeline.search.text import shard_of
from pipeline.site.static_encoder import encoder_names
from pipeline.site.build import build
from test_client_support import Served

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
    build_search_index(site, postings_per_shard=200)  # a small site, sharded as a big one would be
    return site


@pytest.fixture(scope="module")
def served(built):
    s = Served(built)
    yield s
    s.close()


@pytest.fixture(scope="module")
def partial(built, tmp_path_factory) -> Path:
    """``built`` indexed with records.json just big enough for its records and a few terms."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("partial") / "site"))
    packed = orjson.loads((built / SEARCH_DIR / "records.json").read_bytes())["records"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "ALL_TERMS_FACTOR", 1)  # else a site this small carries every term
        build_search_index(copy, postings_per_shard=200, records_inline_bytes=len(orjson.dumps(packed)) + 1500)
    return copy


@pytest.fixture(scope="module")
def blocks(built, tmp_path_factory) -> Path:
    """``built`` indexed as a site too big for records.json to hold its records: record blocks."""
    copy = Path(shutil.copytree(built, tmp_path_factory.mktemp("blocks") / "site"))
    build_search_index(copy, postings_per_shard=200, records_inline_bytes=0)
    return copy


def topic_postings(site: Path) -> list[int]:
    """Each topic's postings, counted in its bundle (every topic of ``built`` has one)."""
    meta = orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes())
    return [sum(len(deltas) for deltas, _ in orjson.loads((site / SEARCH_DIR / t["bundle"]).read_bytes())["terms"].values())
            for t in meta["topics"]]


@pytest.fixture(scope="module")
def split(built, tmp_path_factory) -> Path:
    """``built`` indexed with a bundle threshold below half its topics' postings: those topics
    get their own term shards and record blocks (as a 100k-chunk site's big topics do), the
    others keep their bundles."""
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


def test_the_index_is_deterministic_and_stale_files_go(built, tmp_path):
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    before = files_of(copy)
    (copy / SEARCH_DIR / "terms" / "999.json").write_text("{}")
    report = build_search_index(copy, postings_per_shard=200)
    assert files_of(copy) == before and report.removed == 1 and report.written == 0


def test_an_unchanged_site_is_not_reindexed_and_a_changed_one_is(built, tmp_path, monkeypatch):
    copy = Path(shutil.copytree(built, tmp_path / "s"))
    before = files_of(copy)
    with monkeypatch.context() as m:
        m.setattr(topicpart, "terms", lambda text: pytest.fail("re-tokenized an unchanged site"))
        assert build_search_index(copy, postings_per_shard=200).written == 0
    resource = copy / "section0" / "topic0" / "_index" / "doc0.doc.json"
    doc = orjson.loads(resource.read_bytes())
    next(item for item in doc["items"] if item["index"] == 1)["header_path"] = "## Zebra crossing"
    resource.write_bytes(orjson.dumps(doc))
    assert build_search_index(copy, postings_per_shard=200).written >= 2  # a shard and a block at least
    assert files_of(copy) != before
    assert open_site(copy).search("zebra", 1, method="lexical")[0].header_path == "## Zebra crossing"


def test_every_term_sits_in_its_shard_and_every_chunk_has_a_record(built):
    meta = orjson.loads((built / SEARCH_DIR / "meta.json").read_bytes())
    assert meta["chunks"] == sum(t["count"] for t in meta["topics"]) == 8 * 3 * 6
    assert meta["shards"] >= 2  # small shards: a query reads only its terms' files
    seen = 0
    for s in range(meta["shards"]):
        shard = orjson.loads((built / SEARCH_DIR / "terms" / f"{s}.json").read_bytes())
        for term, (deltas, imps) in shard.items():
            assert shard_of(term, meta["shards"]) == s
            assert len(deltas) == len(imps) and all(1 <= q <= 255 for q in imps) and all(d > 0 for d in deltas[1:])
        seen += len(shard)
    assert seen == meta["terms"]
    # a small site: every record packed in records.json, beside the manifest; no record blocks
    held = orjson.loads((built / SEARCH_DIR / "records.json").read_bytes())
    assert held["meta"] == meta and meta["records"] == "records.json" and not (built / SEARCH_DIR / "chunks").exists()
    topic_of = [t["id"] for t in meta["topics"] for _ in range(t["count"])]
    records = unpack(held["records"], topic_of)
    assert len(records) == meta["chunks"]
    assert records[0]["tags"] == ["common", "t0"] and records[0]["type"] == "guide0"
    assert meta["vectors"]["model"] == "hashing-384" and meta["vectors"]["centroids"]  # inline: no file to fetch
    assert all(t["documents"] is None for t in meta["topics"])  # rows of _embeddings.bin are the topic's chunks


def test_records_json_unpacks_to_exactly_the_record_blocks_of_a_bigger_site(built, blocks):
    meta = orjson.loads((blocks / SEARCH_DIR / "meta.json").read_bytes())
    assert meta["records"] is None and orjson.loads((blocks / SEARCH_DIR / "records.json").read_bytes())["records"] is None
    in_blocks = [r for b in range(math.ceil(meta["chunks"] / meta["block"]))
                 for r in orjson.loads((blocks / SEARCH_DIR / "chunks" / f"{b}.json").read_bytes())]
    held = orjson.loads((built / SEARCH_DIR / "records.json").read_bytes())["records"]
    assert unpack(held, [t["id"] for t in meta["topics"] for _ in range(t["count"])]) == in_blocks
    # and a record that breaks every derivation rule travels whole
    odd = [dict(in_blocks[0], path="elsewhere/x.md", title="Odd", source="y.md", prompt_hashes=["00ff00ff00ff00ff"], tags=["z"]), *in_blocks[1:3]]
    assert unpack(pack(odd, ["t"] * 3), ["t"] * 3) == odd


def test_records_json_holds_the_rarest_terms_postings_as_the_shards_do(built, partial, blocks):
    for site, everything in ((built, True), (partial, False)):
        meta = orjson.loads((site / SEARCH_DIR / "meta.json").read_bytes())
        held = orjson.loads((site / SEARCH_DIR / "records.json").read_bytes())
        shards = {t: e for s in range(meta["shards"]) for t, e in orjson.loads((site / SEARCH_DIR / "terms" / f"{s}.json").read_bytes()).items()}
        assert held["all_terms"] is everything and (len(held["terms"]) == len(shards)) is everything
        assert held["terms"] and all(shards[t] == e for t, e in held["terms"].items())  # and they stay in their shards
        by_rarity = sorted(shards, key=lambda t: (len(shards[t][0]), t))
        assert sorted(held["terms"], key=by_rarity.index) == by_rarity[:len(held["terms"])]  # the rarest first
    assert orjson.loads((blocks / SEARCH_DIR / "records.json").read_bytes())["terms"] == {}  # too big: none


def test_records_json_carries_every_term_when_the_whole_fits_twice_its_budget(built, tmp_path, monkeypatch):
    held = orjson.loads((built / SEARCH_DIR / "records.json").read_bytes())
    assert held["all_terms"]
    sizes = []  # the records' packed size the builder counts
    inline = layout.inline_terms
    monkeypatch.setattr(layout, "inline_terms", lambda size, *rest: sizes.append(size) or inline(size, *rest))
    build_search_index(Path(shutil.copytree(built, tmp_path / "probe")), postings_per_shard=200, records_inline_bytes=10**9)
    weighted = sizes[0] + layout.TERM_BYTES_WEIGHT * sum(
        len(orjson.dumps(entry)) + len(orjson.dumps(term)) + 2 for term, entry in held["terms"].items())
    # this site's records are half its weighted bytes: a factor of 1.5 leaves them room in the budget
    monkeypatch.setattr(layout, "ALL_TERMS_FACTOR", 1.5)
    fits = math.ceil(weighted / 1.5)
    for budget, everything in ((fits, True), (fits - 1, False)):
        copy = Path(shutil.copytree(built, tmp_path / str(budget)))
        build_search_index(copy, postings_per_shard=200, records_inline_bytes=budget)
        again = orjson.loads((copy / SEARCH_DIR / "records.json").read_bytes())
        assert again["all_terms"] is everything and (again["terms"] == held["terms"]) is everything
        assert again["records"] == held["records"]  # the records fit either budget
        if not everything:  # the rarest-first rule under the budget itself
            assert 0 < len(again["terms"]) < len(held["terms"])


def test_every_layout_gives_the_same_hits(built, partial, blocks, split):
    # the layouts cost different requests before the vectors (term shards, record blocks), so
    # under the request budget a query may read fewer vector shards on one: lift the budget to
    # compare what the layouts hold (test_the_vector_shards_fetched_stay_within_the_budget: the budget)
    for method in ("lexical", "hybrid", "auto"):
        for query, topic in (("charlie echo part", None), ("echo foxtrot", "section1/topic3"), ("delta", "section0"),
                             ("kilo root_path_3 unknownword", None)):
            got = [[replace(h, chunk=replace(h.chunk, href=h.chunk.path)) for h in  # the sites' folders differ
                    open_site(s).search(query, 7, method=method, topic=topic, embedder=HashingEmbedder(), request_budget=None)]
                   for s in (built, partial, blocks, split)]
            assert got[0] and got[0] == got[1] == got[2] == got[3]


def test_a_topic_bundle_holds_exactly_that_topics_postings_and_records(built):
    meta = orjson.loads((built / SEARCH_DIR / "meta.json").read_bytes())
    shards = [orjson.loads((built / SEARCH_DIR / "terms" / f"{s}.json").read_bytes()) for s in range(meta["shards"])]
    site_wide = {t: rank.decode_postings(e) for shard in shards for t, e in shard.items()}
    for t in meta["topics"]:
        bundle = orjson.loads((built / SEARCH_DIR / t["bundle"]).read_bytes())
        inside = lambda n: t["start"] <= n < t["start"] + t["count"]  # noqa: E731
        expected = {term: [p for p in ps if inside(p[0])] for term, ps in site_wide.items()}
        assert {term: rank.decode_postings(e) for term, e in bundle["terms"].items()} == {k: v for k, v in expected.items() if v}
        assert [(r["topic"], r["index"]) for r in bundle["records"]] == [(t["id"], r["index"]) for r in bundle["records"]]
        assert len(bundle["records"]) == t["count"]


def test_a_topic_too_big_for_a_bundle_has_its_own_shards_and_blocks_of_exactly_its_data(built, split):
    meta = orjson.loads((split / SEARCH_DIR / "meta.json").read_bytes())
    big = [(i, t) for i, t in enumerate(meta["topics"]) if t["shards"]]
    assert big and len(big) < len(meta["topics"])  # some topics split, the others keep a bundle
    assert all((t["bundle"] is None) == bool(t["shards"]) for t in meta["topics"])
    site_wide = {t: rank.decode_postings(e) for s in range(meta["shards"])
                 for t, e in orjson.loads((split / SEARCH_DIR / "terms" / f"{s}.json").read_bytes()).items()}
    held = orjson.loads((split / SEARCH_DIR / "records.json").read_bytes())
    records = unpack(held["records"], [t["id"] for t in meta["topics"] for _ in range(t["count"])])
    for i, t in big:
        assert not (split / SEARCH_DIR / f"topics/{i}.json").exists()  # its old bundle removed
        assert t["shards"] >= 2  # ~100 postings a shard: a query reads its terms' shards only
        own: dict = {}
        for s in range(t["shards"]):
            shard = orjson.loads((split / SEARCH_DIR / f"topics/{i}/terms/{s}.json").read_bytes())
            assert all(shard_of(term, t["shards"]) == s for term in shard)
            own.update({term: rank.decode_postings(e) for term, e in shard.items()})
        inside = range(t["start"], t["start"] + t["count"])
        # the site-wide postings (same chunk numbers, same impacts) restricted to the topic
        assert own == {term: kept for term, ps in site_wide.items() if (kept := [p for p in ps if p[0] in inside])}
        blocks = [r for b in range(math.ceil(t["count"] / meta["block"]))
                  for r in orjson.loads((split / SEARCH_DIR / f"topics/{i}/chunks/{b}.json").read_bytes())]
        assert blocks == records[t["start"]:t["start"] + t["count"]]
    # the others' bundles are what they were
    for i, t in enumerate(meta["topics"]):
        if t["bundle"]:
            assert (split / SEARCH_DIR / t["bundle"]).read_bytes() == (built / SEARCH_DIR / t["bundle"]).read_bytes()


def test_a_split_index_is_deterministic_skips_an_unchanged_rebuild_and_repairs_a_lost_topic_shard(split, tmp_path):
    copy = Path(shutil.copytree(split, tmp_path / "s"))
    before = files_of(copy)
    meta = orjson.loads((copy / SEARCH_DIR / "meta.json").read_bytes())
    i = next(i for i, t in enumerate(meta["topics"]) if t["shards"])
    kwargs = dict(postings_per_shard=100, bundle_postings=_threshold(split))
    assert build_search_index(copy, **kwargs).written == 0  # nothing changed: nothing read or written
    (copy / SEARCH_DIR / f"topics/{i}/terms/0.json").unlink()
    (copy / SEARCH_DIR / f"topics/{i}/terms/999.json").write_text("{}")
    report = build_search_index(copy, **kwargs)
    assert report.written == 1 and report.removed == 1 and files_of(copy) == before
    # the default threshold (no topic of this site is that big): every topic has a bundle again
    build_search_index(copy, postings_per_shard=100)
    assert all(t["bundle"] and t["shards"] is None for t in orjson.loads((copy / SEARCH_DIR / "meta.json").read_bytes())["topics"])
    assert not [p for p in (copy / SEARCH_DIR / "topics").rglob("*") if p.is_file() and p.parent != copy / SEARCH_DIR / "topics"]


def _threshold(split: Path) -> int:
    """The bundle threshold ``split`` was built with: its largest bundled topic's postings."""
    meta = orjson.loads((split / SEARCH_DIR / "meta.json").read_bytes())
    return max(sum(len(d) for d, _ in orjson.loads((split / SEARCH_DIR / t["bundle"]).read_bytes())["terms"].values())
               for t in meta["topics"] if t["bundle"])


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
    assert q["cache"] == [(0, 255), (1, 1)] and scale == pytest.approx(2.0 / 255)


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


def test_a_cold_lexical_query_fetches_only_what_its_terms_need(served, partial):
    site = open_site(served.url)
    fetched = paths_fetched(site)
    query = "charlie echo part"
    hits = site.search(query, 5, method="lexical")
    assert len(hits) == 5
    # a small site: records.json holds every record and every term's postings: one request,
    # whatever the query (open_site reads no root index.json, and the search needs none)
    assert fetched == [f"{SEARCH_DIR}/records.json"] and site.transport.requests == 1
    # a warm query makes no request at all
    assert site.search(query, 5, method="lexical") == hits and site.transport.requests == 1
    s = Served(partial)
    try:
        site = open_site(s.url)
        fetched = paths_fetched(site)
        query = "charlie echo part kilo root_path_3"
        assert site.search(query, 5, method="lexical")
        inline = orjson.loads((partial / SEARCH_DIR / "records.json").read_bytes())["terms"]
        meta = site.search_index().meta
        shards = {f"{SEARCH_DIR}/terms/{shard_of(t, meta['shards'])}.json" for t in query_terms(query) if t not in inline}
        assert shards and len(shards) < len(query_terms(query))  # some terms inline, some not
        # the bound: records.json (the manifest, every record, the rarest terms), one file per
        # distinct shard of the other terms; no root index.json; the hits' records cost no
        # request of their own
        assert fetched[0] == f"{SEARCH_DIR}/records.json" and sorted(fetched[1:]) == sorted(shards)
        assert site.transport.requests == 1 + len(shards)
    finally:
        s.close()


def test_a_topic_scoped_hybrid_query_fetches_only_that_topics_vectors(served, monkeypatch):
    from pipeline.client import searchindex, searchplan  # searchplan reads the limits when a query runs

    site = open_site(served.url)
    fetched = paths_fetched(site)
    hits = site.search("echo foxtrot", 5, method="hybrid", topic="section1/topic3", embedder=HashingEmbedder())
    assert hits and all(h.topic == "section1/topic3" and h.method == "hybrid" for h in hits)
    meta = site.search_index().meta
    bundle = f"{SEARCH_DIR}/" + next(t["bundle"] for t in meta["topics"] if t["id"] == "section1/topic3")
    # the bound: meta.json (centroids inline), the topic's bundle (its postings and records), and
    # the topic's _embeddings.bin whole (at most VECTOR_ROWS rows); no root index.json,
    # site-wide shard, record block, vector shard or other topic's file
    topic = next(t for t in meta["topics"] if t["id"] == "section1/topic3")
    assert topic["count"] <= searchindex.VECTOR_ROWS
    assert sorted(fetched) == sorted([f"{SEARCH_DIR}/meta.json", bundle, topic["embeddings"]])
    assert site.transport.requests == 3
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
    assert sorted(fetched_big) == sorted([f"{SEARCH_DIR}/meta.json", bundle, *shards]) and len(shards) == 1
    start, rows = meta["vectors"]["shards"][int(shards[0].rsplit("/", 1)[1][:-4])]
    assert topic["start"] <= start and start + rows <= topic["start"] + topic["count"]
    monkeypatch.undo()
    lexical = open_site(served.url)
    fetched = paths_fetched(lexical)
    scoped = lexical.search("echo foxtrot", 5, method="lexical", topic="section1/topic3")
    assert scoped and sorted(fetched) == sorted([f"{SEARCH_DIR}/meta.json", bundle]) and lexical.transport.requests == 2
    # the same rankings as through the site-wide shards (the bundle holds their very impacts)
    wide = open_site(served.url)
    wide.search_index().scope = lambda filters: None
    for method in ("lexical", "hybrid", "auto"):
        got = [wide.search("echo foxtrot", 5, method=method, topic="section1/topic3", embedder=HashingEmbedder()),
               site.search("echo foxtrot", 5, method=method, topic="section1/topic3", embedder=HashingEmbedder())]
        assert got[0] == got[1]


def outside(meta: dict, fetched: list[str], topic: str) -> list[str]:
    """The files of ``fetched`` a query scoped to ``topic`` should not need: site-wide term shards,
    records and record blocks, another topic's own files, embeddings or vector shards."""
    mine = [i for i, t in enumerate(meta["topics"]) if t["id"] == topic or t["id"].startswith(topic + "/")]
    ranges = [(meta["topics"][i]["start"], meta["topics"][i]["start"] + meta["topics"][i]["count"]) for i in mine]

    def ok(rel: str) -> bool:
        if rel == f"{SEARCH_DIR}/meta.json":
            return True
        if rel.startswith(f"{SEARCH_DIR}/topics/"):
            return any(rel == f"{SEARCH_DIR}/topics/{i}.json" or rel.startswith(f"{SEARCH_DIR}/topics/{i}/") for i in mine)
        if rel.startswith(f"{SEARCH_DIR}/vectors/"):
            start, rows = meta["vectors"]["shards"][int(rel.rsplit("/", 1)[1][:-4])]
            return any(a <= start and start + rows <= b for a, b in ranges)
        return rel.endswith("_embeddings.bin") and rel.startswith(topic + "/")

    return [rel for rel in fetched if not ok(rel)]


@pytest.mark.parametrize("method", ["lexical", "hybrid", "auto"])
def test_a_query_scoped_to_a_topic_too_big_for_a_bundle_fetches_only_that_topics_files(split, built, method, monkeypatch):
    from pipeline.client import searchplan  # reads the limits when a query runs

    meta = orjson.loads((split / SEARCH_DIR / "meta.json").read_bytes())
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
            blocks = {f"{SEARCH_DIR}/topics/{i}/chunks/{(h_n - topic['start']) // meta['block']}.json"
                      for h_n in range(topic["start"], topic["start"] + topic["count"])}
            assert fetched[0] == f"{SEARCH_DIR}/meta.json" and set(shards) <= set(fetched)
            assert len(shards) <= len(query_terms(query)) and all(p.startswith(f"{SEARCH_DIR}/topics/{i}/terms/") for p in shards)
            rest = [p for p in fetched[1:] if p not in shards]
            assert {p for p in rest if "/chunks/" in p} <= blocks
            assert [p for p in rest if "/chunks/" not in p] == [p for p in rest if p.startswith(f"{SEARCH_DIR}/vectors/")]
            assert len(fetched) == len(set(fetched))  # every file once
            # and the ranking the bundle and the site-wide shards give
            wide = open_site(split)
            wide.search_index().scope = lambda filters: None  # the site-wide path
            for other in (open_site(built), wide):
                assert [(h.chunk.path, h.score) for h in other.search(query, 5, method=method, topic=topic["id"], embedder=HashingEmbedder())] == \
                    [(h.chunk.path, h.score) for h in hits]
    finally:
        s.close()


def test_a_scope_of_topics_with_and_without_bundles_ranks_as_the_site_wide_shards(split, monkeypatch):
    from pipeline.client import searchplan  # reads the limits when a query runs

    meta = orjson.loads((split / SEARCH_DIR / "meta.json").read_bytes())
    section = [t for t in meta["topics"] if t["id"].startswith("section0/")]
    assert {bool(t["bundle"]) for t in section} == {True, False}  # a mixed scope
    monkeypatch.setattr(searchplan, "BUNDLE_TOPICS", len(section))
    site = open_site(split)
    fetched = paths_fetched(site)
    wide = open_site(split)
    wide.search_index().scope = lambda filters: None
    for query in ("charlie echo part", "alpha root_path_6 kilo", "delta"):
        for method in ("lexical", "hybrid"):
            got = site.search(query, 8, method=method, topic="section0", embedder=HashingEmbedder())
            assert got and got == wide.search(query, 8, method=method, topic="section0", embedder=HashingEmbedder())
    assert outside(meta, fetched, "section0") == [] and any("/terms/" in p for p in fetched) and any(p.endswith("0.json") for p in fetched)


def test_an_unscoped_hybrid_query_fetches_its_lexical_documents_vector_shards(served):
    from pipeline.client import searchindex

    site = open_site(served.url)
    fetched = paths_fetched(site)
    hits = site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder())
    index = site.search_index()
    lexical = index.lexical("echo foxtrot", searchindex.Filters())
    documents = index.lexical_documents(lexical)
    assert len(documents) == searchindex.LEX_DOCUMENTS  # five documents, in hit order, each a hit's
    starts = [first for first, _ in documents]
    assert starts == list(dict.fromkeys(max(s for s in index._doc_starts if s <= n) for n, _ in lexical))[:5]
    wanted = list(dict.fromkeys(index._shard_rel(first) for first in starts))
    # the bound: records.json (the manifest, centroids inline, every record and, on this small
    # site, every term), then the shards of those documents (at most 5: the default cap of 6
    # never cuts where records.json holds every term);
    # nothing else (no term shard, record block, bundle, index.json or topic _embeddings.bin)
    assert fetched[0] == f"{SEARCH_DIR}/records.json" and sorted(fetched[1:]) == sorted(wanted)
    assert site.transport.requests == 1 + len(wanted) <= 1 + searchindex.LEX_DOCUMENTS
    assert hits and all(h.method == "hybrid" for h in hits)
    # warm: the same hits, no request
    assert site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder()) == hits
    assert site.transport.requests == 1 + len(wanted)


def test_the_vector_shards_fetched_stay_within_the_budget(served):
    from pipeline.client import searchindex

    wide = open_site(served.url).search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=None)
    site = open_site(served.url)
    fetched = paths_fetched(site)
    narrow = site.search("echo foxtrot", 5, method="hybrid", embedder=HashingEmbedder(), request_budget=3)
    shards = [p for p in fetched if p.startswith(f"{SEARCH_DIR}/vectors/")]
    index = site.search_index()
    wanted = list(dict.fromkeys(index._shard_rel(first) for first, _ in
                                index.lexical_documents(index.lexical("echo foxtrot", searchindex.Filters()))))
    # records.json took one request: two shards are left, the first two in hit order
    assert len(wanted) > 2 and shards == wanted[:2] and site.transport.requests == 3
    # issue 11's bound: with request_budget=6 a cold query makes at most 6 requests
    capped = open_site(served.url)
    for query in ("echo foxtrot", "charlie echo part", "delta kilo root_path_3"):
        before = capped.transport.requests
        capped.search(query, 5, method="hybrid", embedder=HashingEmbedder(), request_budget=6)
        assert capped.transport.requests - before <= 6
    # the documents left out have no vector evidence: every vector candidate lies in those two shards
    lexical = index.lexical("echo foxtrot", searchindex.Filters())
    vector = index.document_vector(lexical, HashingEmbedder().embed(["echo foxtrot"])[0], 0)  # held shards only
    assert vector and {index._shard_rel(n) for n, _ in vector} == set(wanted[:2])
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
        shards = {f"{SEARCH_DIR}/terms/{shard_of(t, site.search_index().meta['shards'])}.json" for t in query_terms("charlie echo part")}
        block_files = [p for p in fetched if p.startswith(f"{SEARCH_DIR}/chunks/")]
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


def test_a_damaged_meta_json_is_a_corrupt_index_naming_the_field(built, tmp_path):
    from pipeline.client import CorruptIndex

    copy = Path(shutil.copytree(built, tmp_path / "s"))
    meta_path = copy / SEARCH_DIR / "meta.json"
    meta = orjson.loads(meta_path.read_bytes())
    del meta["topics"][0]["documents"]
    meta_path.write_bytes(orjson.dumps(meta))
    with pytest.raises(CorruptIndex, match=r"topics\[0\]"):
        open_site(copy).search("charlie", 3, topic="section0")  # a scoped query starts from meta.json
    # an unscoped one from records.json: its manifest is checked alike, and its records too
    records_path = copy / SEARCH_DIR / "records.json"
    held = orjson.loads(records_path.read_bytes())
    records_path.write_bytes(orjson.dumps({"meta": meta, "records": held["records"]}))
    with pytest.raises(CorruptIndex, match=r"topics\[0\]"):
        open_site(copy).search("charlie", 3)
    held["records"]["chunks"].pop()
    records_path.write_bytes(orjson.dumps(held))
    with pytest.raises(CorruptIndex, match=r"records\.json.*|records: "):
        open_site(copy).search("charlie", 3)


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
    build_search_index(copy, postings_per_shard=200)
    meta = orjson.loads((copy / SEARCH_DIR / "meta.json").read_bytes())
    assert meta["vectors"]["href"] == "centroids.bin" and "centroids" not in meta["vectors"]
    assert (copy / SEARCH_DIR / "centroids.bin").is_file()
    site = open_site(copy)
    fetched = paths_fetched(site)
    # the centroids choose vectors for a query without lexical hits (else its hits' documents do)
    got = site.search("zzzunknownword", 5, method="hybrid", embedder=HashingEmbedder())
    assert f"{SEARCH_DIR}/centroids.bin" in fetched and got
    assert [(h.chunk.path, h.score) for h in got] == \
        [(h.chunk.path, h.score) for h in open_site(built).search("zzzunknownword", 5, method="hybrid", embedder=HashingEmbedder())]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.fixed_dictionaries({f: st.dictionaries(st.sampled_from("abcdefgh"), st.integers(1, 9), max_size=5)
                                        for f in ("title", "heading", "body")}), min_size=1, max_size=25))
def test_the_posting_table_gives_exactly_the_reference_impacts(chunks):
    # build_search_index scores through PostingTable (flat arrays); impacts + quantise define it
    from pipeline.search.index import PostingTable

    fields = [{f: Counter(c) for f, c in chunk.items()} for chunk in chunks]
    lengths = [{f: sum(c.values()) for f, c in x.items()} for x in fields]
    want, want_scale = quantise(impacts(fields, lengths))
    table = PostingTable()
    for x in fields:
        table.add(x)
    got, scale = table.quantised()
    assert scale == want_scale
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
    assert "edit" in b"".join((site / SEARCH_DIR / "terms").joinpath(p.name).read_bytes() for p in (site / SEARCH_DIR / "terms").iterdir()).decode()


def test_the_shared_scoped_vectors_are_what_python_computes_now():
    # tests/js/scoped.test.mjs checks searchindex.js against these: a stale file would pass there
    from pipeline.client.searchindex import Filters, SearchIndex

    held = orjson.loads((Path(__file__).parent / "vectors" / "scoped.json").read_bytes())
    kinds = set()
    for case in held["cases"]:
        index = SearchIndex(None, held["manifests"][case["manifest"]])
        scope = index.scope(Filters(topic=case["prefix"]))
        assert scope == case["scope"]
        if scope is not None:
            assert index.scoped_files(scope, case["terms"]) == case["files"]
            kinds.update("shard" if "/terms/" in f else "bundle" for f in case["files"])
        assert [[n, index._record_file(n, scope)] for n, _ in case["records"]] == case["records"]
    assert kinds == {"shard", "bundle"}
