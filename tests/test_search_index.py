"""pipeline.search.index: the _search/ files in each layout, and the hits they give."""

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
from pipeline.search.index import MAX_IMPACT, SEARCH_DIR, build_search_index, impacts, listed_files, quantise
from pipeline.siteformat.packedrecords import pack, unpack
from pipeline.siteformat.searchlayout import WORD_ROWS
from pipeline.siteformat.searchtext import shard_of, word_term
from pipeline.site.build import build
from pipeline.siteformat.searchlayout import encoder_names
from searchsites import SMALL, files_of, meta_of, read, site_postings
from searchsites import (  # noqa: F401  (module fixtures, used by name)
    blocks, built, partial, split,
)



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
            held = read(site, "terms", h)
            for word in held.pop(WORD_ROWS, {}):  # the static encoder's rows of the shard's terms' words
                assert shard_of(word_term(word), len(meta["terms"])) == s
            for term, (deltas, indexes, levels) in held.items():
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
    shards = {t: e for h in meta["terms"] for t, e in read(partial, "terms", h).items() if t != WORD_ROWS}
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
