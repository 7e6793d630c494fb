"""client.js (under Node) and the Python client rank the same chunks in the same order with the
``_search/`` index: lexical, hybrid (both fusions) and auto, with every filter, on a served site."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder
from test_client_support import PROMPTS, fixture_site, served_site, site_copy  # noqa: F401

CLIENT = Path(__file__).resolve().parent.parent / "pipeline" / "assets" / "client.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")

QUERIES = [
    *[q for qs in PROMPTS.values() for q in qs],
    "how does the stripe order spread chunks over a document",
    "publish site github pages",
    "which cache headers",
    "base_url CNAME record",
    "max_tokens configuration",
    "installing python virtual environments",
    "rebuilds embedding caches",
    "the",
    "zzz unknown words",
]
FILTERS = [{}, {"is_code": True}, {"keyword": "cache"}, {"topic": "notes"}, {"topic": "handbook"},
           {"header_path": "## Cache"}, {"header_path": "alpha handbook > ## s"}, {"tags": ["x"]},
           {"promotion_level": "standard"}, {"promotion_level": "critical"}]
RUNS = [("lexical", "score"), ("hybrid", "rrf"), ("hybrid", "score"), ("auto", "score"), ("simhash", "score")]
BUDGETS = [None, 2, 0]
"""Request budgets run besides the default (a cap of 6; hybrid, score fusion, the first filters):
no cap, and caps that leave documents without vectors (``rank.within_slots`` then), whose effect
also depends on what the earlier queries of the same site fetched."""

SCRIPT = r"""
import { openSite } from "%(client)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const casesJson = readFileSync(0, "utf8");
const site = await openSite(url);
const out = [];
for (const c of JSON.parse(casesJson)) {
  const f = c.filters;
  const hits = await site.search(c.query, {
    k: 6, method: c.method, fusion: c.fusion, queryVector: c.vector, keyword: f.keyword ?? null,
    isCode: f.is_code ?? null, topic: f.topic ?? null, headerPath: f.header_path ?? null, tags: f.tags ?? [],
    promotionLevel: f.promotion_level ?? null, ...(c.budget === "default" ? {} : { requestBudget: c.budget }),
  });
  out.push(hits.map((h) => [h.topic, h.chunk.document, h.index, h.href, h.method, h.distance, h.score,
                           h.startLine, h.endLine, h.url, h.sectionUrl]));
}
console.log(JSON.stringify(out));
"""


def cases():
    embedder = HashingEmbedder()
    return [
        {"query": q, "filters": f, "method": m, "fusion": fusion, "vector": embedder.embed([q])[0].tolist(), "budget": b}
        for q in QUERIES for f in FILTERS for m, fusion, b in [*((m, fu, "default") for m, fu in RUNS),
                                                               *(("hybrid", "score", b) for b in BUDGETS if f in FILTERS[:4])]
    ]


def test_python_and_js_rank_identically(served_site):
    all_cases = cases()
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT % {"client": CLIENT.as_uri()}, served_site.url],
        input=json.dumps(all_cases), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    site = open_site(served_site.url)
    methods_seen = set()
    for case, js_rows in zip(all_cases, got, strict=True):
        budget = {} if case["budget"] == "default" else {"request_budget": case["budget"]}
        hits = site.search(case["query"], 6, method=case["method"], fusion=case["fusion"], embedder=HashingEmbedder(),
                           **case["filters"], **budget)
        py_rows = [[h.topic, h.chunk.document, h.chunk.index, h.href, h.method, h.distance, h.score,
                    *(h.chunk.citation()[k] for k in ("start_line", "end_line", "url", "section_url"))] for h in hits]
        assert [r[:6] + r[7:] for r in js_rows] == [r[:6] + r[7:] for r in py_rows], case  # citations included
        # cosines come from float32 rows decoded in each language: equal to ~1e-7, ranks exactly
        assert [r[6] for r in js_rows] == pytest.approx([r[6] for r in py_rows], abs=1e-6)
        methods_seen.update(r[4] for r in py_rows)
    assert methods_seen == {"lexical", "hybrid", "simhash"}


def test_shared_constants_are_the_same_in_both_languages():
    from pipeline.client import searchindex
    from pipeline.search import index
    from pipeline.siteformat import searchrank as rank

    source = (CLIENT.parent / "lexical.js").read_text(encoding="utf-8")
    for name, value in [("RRF_K", rank.RRF_K), ("FUSION_DEPTH", rank.FUSION_DEPTH), ("SCORE_ALPHA", rank.SCORE_ALPHA),
                        ("VECTOR_TOPICS", searchindex.VECTOR_TOPICS), ("VECTOR_ROWS", searchindex.VECTOR_ROWS), ("LEX_DOCUMENTS", searchindex.LEX_DOCUMENTS),
                        ("REQUEST_BUDGET", "null" if searchindex.REQUEST_BUDGET is None else searchindex.REQUEST_BUDGET),
                        ("VERSION", index.VERSION), ("MAX_TERM", 64), ("BUNDLE_TOPICS", searchindex.BUNDLE_TOPICS), ("DEFAULT_FUSION", f'"{rank.DEFAULT_FUSION}"'),
                        ("RERANK_DEPTH", rank.RERANK_DEPTH), ("MIN_SENTENCE", rank.MIN_SENTENCE), ("IDF_SCALE", rank.IDF_SCALE)]:
        assert f"export const {name} = {value};" in source, name


SCOPED = r"""
import { openSite } from "%(client)s";
const [url, topic, query] = process.argv.slice(1);
const site = await openSite(url);
const got = [];
const get = site._get.bind(site);
site._get = (rel, as) => { got.push(rel); return get(rel, as); };
const hits = await site.search(query, { k: 5, method: "lexical", topic });
console.log(JSON.stringify({ got, hits: hits.map((h) => [h.topic, h.chunk.document, h.index]) }));
"""


@pytest.mark.parametrize("topic", ["notes", "handbook"])
def test_a_topic_scoped_query_fetches_the_same_segments_in_both_languages(served_site, topic):
    query = "which cache headers"
    result = subprocess.run([NODE, "--input-type=module", "-e", SCOPED % {"client": CLIENT.as_uri()}, served_site.url, topic, query],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    js = json.loads(result.stdout)
    site = open_site(served_site.url)
    fetched = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    hits = site.search(query, 5, method="lexical", topic=topic)
    index = site.search_index()
    segments = index.segment_files(index_filters(topic))
    assert segments and sorted(fetched) == sorted(["_search/meta.json", *segments])
    assert sorted(js["got"]) == sorted(fetched)  # openSite read the root index.json before the wrap; open_site reads none
    assert js["hits"] == [[h.topic, h.chunk.document, h.chunk.index] for h in hits]


def index_filters(topic):
    from pipeline.client.searchindex import Filters

    return Filters(topic=topic)


HYBRID = r"""
import { openSite } from "%(client)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const site = await openSite(url);
const out = [];
for (const c of JSON.parse(readFileSync(0, "utf8"))) {
  const hits = await site.search(c.query, { k: 6, method: "hybrid", queryVector: c.vector, topic: c.topic });
  out.push(hits.map((h) => [h.topic, h.chunk.document, h.index]));
}
console.log(JSON.stringify(out));
"""


def test_centroids_in_a_file_rank_the_same_in_both_languages(site_copy, monkeypatch):
    """A site of many topics links centroids.bin instead of inlining the centroids."""
    from test_client_support import Served

    from pipeline.search import index as search_index, layout

    monkeypatch.setattr(layout, "CENTROIDS_INLINE_BYTES", 0)
    search_index.build_search_index(site_copy)
    href = json.loads((site_copy / "_search" / "meta.json").read_text())["vectors"]["href"]
    assert href.startswith("centroids/") and (site_copy / "_search" / href).is_file()
    embedder = HashingEmbedder()
    cases = [{"query": q, "vector": embedder.embed([q])[0].tolist(), "topic": t}
             for q in QUERIES[-9:-2] for t in (None, "notes")]
    served = Served(site_copy)
    try:
        result = subprocess.run([NODE, "--input-type=module", "-e", HYBRID % {"client": CLIENT.as_uri()}, served.url],
                                input=json.dumps(cases), capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        site = open_site(served.url)
        py = [[[h.topic, h.chunk.document, h.chunk.index] for h in site.search(c["query"], 6, method="hybrid", embedder=embedder,
                                                                              topic=c["topic"])] for c in cases]
    finally:
        served.close()
    assert json.loads(result.stdout) == py and any(py)


SENTENCES = r"""
import { openSite } from "%(client)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const { vectors, cases } = JSON.parse(readFileSync(0, "utf8"));
const site = await openSite(url);
const embed = async (text) => vectors[text] ?? null;
const out = [];
for (const c of cases) {
  const hits = await site.search(c.query, { k: 6, method: "hybrid", sentences: true, embed, topic: c.topic, isCode: c.is_code });
  out.push(hits.map((h) => [h.topic, h.chunk.document, h.index, h.method, h.score]));
}
console.log(JSON.stringify(out));
"""


def test_sentence_rerank_is_the_same_in_both_languages_and_changes_the_order(served_site, fixture_site):
    from pipeline.siteformat import searchrank as rank

    embedder = HashingEmbedder()
    texts = {s for path in fixture_site.rglob("*.md") for s in rank.sentences(path.read_text(encoding="utf-8"))}
    texts |= set(QUERIES)
    vectors = {t: v.tolist() for t, v in zip(sorted(texts), embedder.embed(sorted(texts)))}
    cases = [{"query": q, "topic": f.get("topic"), "is_code": f.get("is_code")}
             for q in QUERIES for f in ({}, {"topic": "handbook"}, {"is_code": False})]
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", SENTENCES % {"client": CLIENT.as_uri()}, served_site.url],
        input=json.dumps({"vectors": vectors, "cases": cases}), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    site = open_site(served_site.url)
    changed = 0
    for case, js_rows in zip(cases, json.loads(result.stdout), strict=True):
        kwargs = {"topic": case["topic"], "is_code": case["is_code"]}
        hits = site.search(case["query"], 6, method="hybrid", embedder=embedder, sentences=True, **kwargs)
        py_rows = [[h.topic, h.chunk.document, h.chunk.index, h.method, h.score] for h in hits]
        assert [r[:4] for r in js_rows] == [r[:4] for r in py_rows], case
        assert [r[4] for r in js_rows] == pytest.approx([r[4] for r in py_rows], abs=1e-6)
        plain = site.search(case["query"], 6, method="hybrid", embedder=embedder, **kwargs)
        changed += [(h.topic, h.chunk.document, h.chunk.index) for h in plain] != [tuple(r[:3]) for r in py_rows]
    assert changed > 0  # the re-ranking acts on these queries, so the comparison above means something


UNPACK = r"""
import { unpackRecords } from "%(searchindex)s";
import { readFileSync } from "node:fs";
const cases = JSON.parse(readFileSync(0, "utf8"));
console.log(JSON.stringify(cases.map(([packed, topicOf]) => unpackRecords(packed, (n) => topicOf[n]))));
"""


def test_packed_records_unpack_to_the_same_records_in_both_languages(fixture_site):
    from pipeline.siteformat.packedrecords import pack, unpack

    meta = json.loads((fixture_site / "_search" / "meta.json").read_text(encoding="utf-8"))
    assert meta["parts"]  # the fixture site is small: its records travel in its parts
    starts = [0]
    for count in meta["documents"]:
        starts.append(starts[-1] + count)
    topic_of = [t["id"] for t in meta["topics"] for _ in range(t["count"])]
    cases, site_records = [], []
    for first, n, name in meta["parts"]:
        packed = json.loads((fixture_site / "_search" / "parts" / f"{name}.json").read_text(encoding="utf-8"))["records"]
        cases.append([packed, topic_of[starts[first]:starts[first + n]]])
        site_records += unpack(*cases[-1])
    # records that break every derivation rule (the overrides), and a root-level topic ("")
    odd = [dict(site_records[0], path="x/y.md", title="  Odd ", source="z.md", prompt_hashes=["00ff00ff00ff00ff"], index=7),
           dict(site_records[1], header_path="## A > ### B", tags=["changed"], document_title="Other"),
           dict(site_records[2], topic="", document="root", header_path="", title="Root title")]
    odd_topics = [odd[0]["topic"], odd[1]["topic"], ""]
    cases.append([pack(odd, odd_topics), odd_topics])
    result = subprocess.run([NODE, "--input-type=module", "-e", UNPACK % {"searchindex": (CLIENT.parent / "searchmanifest.js").as_uri()}],
                            input=json.dumps(cases), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [unpack(*case) for case in cases]
    assert unpack(*cases[-1]) == odd and len(site_records) == meta["chunks"]


UNSCOPED = r"""
import { openSite } from "%(client)s";
const [url, query] = process.argv.slice(1);
const site = await openSite(url);
const got = [];
const get = site._get.bind(site);
site._get = (rel, as) => { got.push(rel); return get(rel, as); };
const hits = await site.search(query, { k: 5, method: "lexical" });
console.log(JSON.stringify({ got, hits: hits.map((h) => [h.topic, h.chunk.document, h.index, h.chunk.title, h.chunk.headerPath]) }));
"""


def _unscoped_in_both_languages(url: str, query: str) -> list[str]:
    """The files a cold lexical query fetches, checked to be the same in both clients, which
    return the same hits."""
    result = subprocess.run([NODE, "--input-type=module", "-e", UNSCOPED % {"client": CLIENT.as_uri()}, url, query],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    js = json.loads(result.stdout)
    site = open_site(url)
    fetched = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    hits = site.search(query, 5, method="lexical")
    assert sorted(js["got"]) == sorted(fetched)
    assert js["hits"] == [[h.topic, h.chunk.document, h.chunk.index, h.chunk.title, h.chunk.header_path] for h in hits]
    return fetched


def test_an_unscoped_query_fetches_the_same_files_in_both_languages(served_site):
    fetched = _unscoped_in_both_languages(served_site.url, "which cache headers")
    # records.json (the manifest), the parts (every record and term); no term shard or record block
    assert fetched[0] == "_search/records.json" and fetched[1:] and all(p.startswith("_search/parts/") for p in fetched[1:])


def test_a_site_with_some_terms_in_records_json_fetches_the_same_shards_in_both_languages(site_copy):
    import orjson

    from pipeline.search.index import build_search_index
    from test_client_support import Served

    meta = orjson.loads((site_copy / "_search" / "meta.json").read_bytes())
    records = sum(len(orjson.dumps(orjson.loads((site_copy / "_search" / "parts" / f"{h}.json").read_bytes())["records"]))
                  for _, _, h in meta["parts"])
    import pytest

    from pipeline.search import layout

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "ALL_TERMS_FACTOR", 1)  # else a site this small goes in parts
        build_search_index(site_copy, postings_per_shard=300, records_inline_bytes=records + 600)
    held = orjson.loads((site_copy / "_search" / "records.json").read_bytes())
    assert held["terms"] and held["records"]
    shards_needed = []
    served = Served(site_copy)
    try:
        for query in ("which cache headers", "stripe order spread chunks over a document", "publish site github pages"):
            fetched = _unscoped_in_both_languages(served.url, query)
            assert fetched[0] == "_search/records.json"
            shards_needed.append(len(fetched) - 1)
        assert max(shards_needed) > 0  # some terms came from their shards
    finally:
        served.close()


COLD = r"""
import { openSite } from "%(client)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const out = [];
for (const c of JSON.parse(readFileSync(0, "utf8"))) {
  const site = await openSite(url); // cold: a new site per case
  const got = [];
  const get = site._get.bind(site);
  site._get = (rel, as) => { got.push(rel); return get(rel, as); };
  const hits = await site.search(c.query, { k: 6, method: c.method, queryVector: c.vector, topic: c.topic });
  out.push({ got, hits: hits.map((h) => [h.topic, h.chunk.document, h.index, h.method, h.score]) });
}
console.log(JSON.stringify(out));
"""


def test_topics_too_big_for_bundles_fetch_and_rank_the_same_in_both_languages(site_copy, fixture_site):
    """Every topic indexed as a big one (its own term shards and record blocks): a scoped query
    fetches the same files in both clients, none site-wide or of another topic, and both rank
    as the segments did."""
    import orjson

    from pipeline.search.index import build_search_index
    from test_client_support import Served
    from test_search_fetches import outside

    build_search_index(site_copy, postings_per_shard=50, bundle_postings=0)  # the threshold lowered: no segments
    meta = orjson.loads((site_copy / "_search" / "meta.json").read_bytes())
    assert all(t["segments"] is None and t["shards"] and t["blocks"] for t in meta["topics"] if t["count"])
    assert max(len(t["shards"]) for t in meta["topics"] if t["shards"]) >= 2
    embedder = HashingEmbedder()
    cases = [{"query": q, "topic": t, "method": m, "vector": embedder.embed([q])[0].tolist()}
             for q in QUERIES for t in ("notes", "handbook") for m in ("lexical", "hybrid", "auto")]
    served = Served(site_copy)
    try:
        result = subprocess.run([NODE, "--input-type=module", "-e", COLD % {"client": CLIENT.as_uri()}, served.url],
                                input=json.dumps(cases), capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        block_files = 0
        for case, js in zip(cases, json.loads(result.stdout), strict=True):
            site = open_site(served.url)
            fetched = []
            original = site.transport.get
            site.transport.get = lambda rel: fetched.append(rel) or original(rel)
            hits = site.search(case["query"], 6, method=case["method"], topic=case["topic"], embedder=embedder)
            rows = [[h.topic, h.chunk.document, h.chunk.index, h.method, h.score] for h in hits]
            assert [r[:4] for r in js["hits"]] == [r[:4] for r in rows], case["query"]
            assert [r[4] for r in js["hits"]] == pytest.approx([r[4] for r in rows], abs=1e-6)
            assert sorted(js["got"]) == sorted(fetched), case["query"]
            assert outside(meta, fetched, case["topic"]) == [], case["query"]
            block_files += sum("/blocks/" in p for p in fetched)
            # the ranking the segments give (the fixture site as built)
            bundled = open_site(fixture_site).search(case["query"], 6, method=case["method"], topic=case["topic"], embedder=embedder)
            assert [(h.chunk.path, h.score) for h in bundled] == [(h.chunk.path, h.score) for h in hits], case["query"]
        assert block_files > 0  # the hits' records came from the topics' own blocks
    finally:
        served.close()
