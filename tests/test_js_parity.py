"""The two clients offer the same search: the same method names (client.js's ``METHODS`` is
Python's), and the ``embedding`` method gives the same hits in both on a small built site (the
hashing embedder's), whether the query is embedded by the site's static encoder or by the caller;
the same files fetched; the same refusals."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from pipeline.client import METHODS, SiteError, open_site
from pipeline.siteformat.readerrors import NO_EMBEDDINGS
from pipeline.embedding.hashing import HashingEmbedder
from test_client_support import PROMPTS, Served, fixture_site, served_site, site_copy  # noqa: F401

ASSETS = Path(__file__).resolve().parent.parent / "pipeline" / "assets"
CLIENT = ASSETS / "client.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")


def node(script: str, *args: str, stdin: str = "") -> dict | list:
    result = subprocess.run([NODE, "--input-type=module", "-e", script % {"client": CLIENT.as_uri()}, *args],
                            input=stdin, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


CONSTANTS = r"""
import { METHODS, NO_EMBEDDINGS, NO_ENCODER } from "%(client)s";
console.log(JSON.stringify({ METHODS, NO_EMBEDDINGS, NO_ENCODER }));
"""


def test_the_method_list_and_the_refusals_are_the_same_in_both_languages():
    from pipeline.agents import mcp_server

    js = node(CONSTANTS)
    assert tuple(js["METHODS"]) == METHODS and "embedding" in METHODS
    assert js["NO_EMBEDDINGS"] == NO_EMBEDDINGS
    # the static encoder's refusal: Python's words, but the remedy the JS caller has
    assert js["NO_ENCODER"].startswith("this site publishes no static query encoder (_search/encoder/); rebuild it")
    assert tuple(mcp_server.SEARCH_METHODS) == METHODS  # the MCP tool offers every method too


QUERIES = [
    *[q for qs in PROMPTS.values() for q in qs],
    "how does the stripe order spread chunks over a document",
    "which cache headers",
    "vectors numbers embedding model chunk",
    "serving static files with range requests",
    "installing python virtual environments",
    "zzz unknown words",
]
FILTERS = [{}, {"topic": "notes"}, {"topic": "handbook"}, {"is_code": False}, {"keyword": "cache"},
           {"promotion_level": "standard"}, {"header_path": "alpha handbook"}]

TIE = 1e-9
"""Cosines this close to 0 are ties (see below)."""

EMBEDDING = r"""
import { openSite } from "%(client)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const out = [];
for (const c of JSON.parse(readFileSync(0, "utf8"))) {
  const site = await openSite(url); // cold, each query: the files it fetches are its own
  const seen = [];
  const get = site._get.bind(site);
  site._get = (rel, as) => { seen.push(rel); return get(rel, as); };
  const f = c.filters;
  const hits = await site.search(c.query, {
    k: 6, method: "embedding", ...(c.vector ? { queryVector: c.vector } : {}), keyword: f.keyword ?? null,
    isCode: f.is_code ?? null, topic: f.topic ?? null, headerPath: f.header_path ?? null, promotionLevel: f.promotion_level ?? null,
  });
  out.push({ hits: hits.map((h) => [h.topic, h.chunk.document, h.index, h.method, h.score]), seen });
}
console.log(JSON.stringify(out));
"""


def test_embedding_hits_are_the_same_in_both_languages(served_site):
    embedder = HashingEmbedder()
    cases = [{"query": q, "filters": f, "vector": v} for q in QUERIES for f in FILTERS
             for v in (None, embedder.embed([q])[0].tolist())]
    got = node(EMBEDDING, served_site.url, stdin=json.dumps(cases))
    ranked_by_encoder = 0
    for case, js in zip(cases, got, strict=True):
        site = open_site(served_site.url)
        fetched = []
        original = site.transport.get
        site.transport.get = lambda rel: fetched.append(rel) or original(rel)
        hits = site.search(case["query"], 6, method="embedding", embedder=embedder if case["vector"] else None, **case["filters"])
        py = [[h.topic, h.chunk.document, h.chunk.index, h.method] for h in hits if h.score > TIE]
        # the hashing embedder's vectors are sparse: chunks sharing no word with the query score
        # 0 give or take the float summation order of each language (1e-18), so their order is not
        # the rankings' to agree on; every chunk that does score must be in the same place
        assert [r[:4] for r in js["hits"] if r[4] > TIE] == py, case
        assert len(js["hits"]) == len(hits)
        assert [r[4] for r in js["hits"]] == pytest.approx([h.score for h in hits], abs=1e-6)
        assert sorted(r for r in js["seen"] if r != "index.json") == sorted(fetched), case  # openSite reads the root
        if case["vector"] is None and py:
            ranked_by_encoder += 1
            # the static encoder embedded the query: from its words' rows, or its own shards
            assert any("/encoder/" in r or "/words/" in r for r in fetched)
    assert ranked_by_encoder >= len(QUERIES)  # the comparison is over real hits
    assert {r[3] for c in got for r in c["hits"]} == {"embedding"}


def test_embedding_ranks_by_vectors_alone(served_site):
    """A query sharing no word with a chunk still finds it by its vector; hybrid's lexical side
    would not rank it first (here: the prompt the chunk answers, reworded)."""
    site = open_site(served_site.url)
    hits = site.search("vectors numbers embedding model chunk", 3, method="embedding")
    assert hits and (hits[0].chunk.document, hits[0].chunk.index) == ("alpha", 5)  # "## Embedding Models"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


NO_ENCODER_SCRIPT = r"""
import { openSite } from "%(client)s";
const [url, query] = process.argv.slice(1);
const site = await openSite(url);
const answer = {};
try {
  await site.search(query, { k: 3, method: "embedding" });
  answer.error = null;
} catch (error) {
  answer.error = error.message;
}
answer.withVector = (await site.search(query, { k: 3, method: "embedding", queryVector: JSON.parse(process.argv[3]) }))
  .map((h) => [h.topic, h.chunk.document, h.index]);
console.log(JSON.stringify(answer));
"""


def test_without_a_static_encoder_js_needs_a_vector_and_python_uses_the_model(site_copy):
    for name in ("meta.json", "records.json"):
        path = site_copy / "_search" / name
        doc = orjson.loads(path.read_bytes())
        (doc.get("meta", doc))["encoder"] = None
        path.write_bytes(orjson.dumps(doc))
    query = "which cache headers"
    vector = HashingEmbedder().embed([query])[0].tolist()
    served = Served(site_copy)
    try:
        js = node(NO_ENCODER_SCRIPT, served.url, query, json.dumps(vector))
        site = open_site(served.url)
        with pytest.raises(SiteError, match=r"publishes no static query encoder \(_search/encoder/\); rebuild it"):
            site.search(query, 3, method="embedding", embedder="static")
        py = [[h.topic, h.chunk.document, h.chunk.index] for h in site.search(query, 3, method="embedding")]  # the model's own
    finally:
        served.close()
    assert js["error"].endswith("this site publishes no static query encoder (_search/encoder/); rebuild it, or pass queryVector or embed")
    assert js["withVector"] == py and py
