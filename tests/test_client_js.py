"""The browser client (client.js, under Node) and the Python client give the same answers on
the same served site: nodes, samples, SimHash and keyword hits (with their citations), and
decoded embeddings."""

from __future__ import annotations

import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.client import open_site
from pipeline.siteformat import vectors
from test_client_support import PROMPTS, fixture_site, served_site  # noqa: F401

CLIENT = Path(__file__).resolve().parent.parent / "pipeline" / "assets" / "client.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")

QUERIES = [
    *[q for qs in PROMPTS.values() for q in qs],
    "how does the stripe order spread chunks over a document",
    "publish site github pages",
    "which cache headers",
    "stripe order",
    "embedding model vectors",
    "deployment",
    "the",
    "",
]
FILTERS = [{}, {"is_code": True}, {"is_code": False}, {"keyword": "cache"}, {"topic": "notes"},
           {"promotion_level": "critical"}, {"promotion_level": "standard"}]
SAMPLES = [(n, order, doc) for n in (0, 1, 5, 20) for order in ("conceptual", "technical") for doc in (None, "alpha", "beta")]

SCRIPT = r"""
import { openSite } from "%(client)s";
const [url, samplesJson, queriesJson, filtersJson] = process.argv.slice(1);
const site = await openSite(url);
const out = { nodes: (await site.nodes()).map((n) => [n.id, n.parent, n.documents, n.children]), samples: [], searches: [] };
for (const [n, order, document] of JSON.parse(samplesJson)) {
  try {
    const chunks = await site.sample("handbook", n, { order, document });
    out.samples.push(chunks.map((c) => [c.document, c.index, c.href, c.text]));
  } catch (error) {  // a technical order the document lacks: refused by both clients
    out.samples.push(["refused", /has no technical order/.test(error.message)]);
  }
}
const hitRow = (h) => [h.topic, h.source, h.chunk.document, h.index, h.href, h.headerPath, h.method, h.distance, h.score,
                       h.startLine, h.endLine, h.url, h.sectionUrl];
for (const query of JSON.parse(queriesJson)) {
  for (const f of JSON.parse(filtersJson)) {
    const options = { k: 10, keyword: f.keyword ?? null, isCode: f.is_code ?? null, topic: f.topic ?? null,
                      promotionLevel: f.promotion_level ?? null };
    for (const method of ["simhash", "keyword"]) {
      out.searches.push((await site.search(query, { ...options, method })).map(hitRow));
    }
  }
}
const table = await site.embeddings("handbook");
out.embeddings = { model: table.model, dtype: table.dtype, documents: table.documents, head: Array.from(table.vectors.slice(0, 768)) };
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def js_answers(served_site):
    script = SCRIPT % {"client": CLIENT.as_uri()}
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", script, served_site.url, json.dumps(SAMPLES), json.dumps(QUERIES), json.dumps(FILTERS)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_same_nodes(js_answers, served_site):
    nodes = open_site(served_site.url).nodes()
    assert js_answers["nodes"] == [[n.id, n.parent, n.documents, list(n.children)] for n in nodes]


def test_same_samples(js_answers, served_site):
    site = open_site(served_site.url)

    def sample(n, order, doc):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the topic's beta falls back to its conceptual order, said
                return [[c.ref.document, c.ref.index, c.ref.href, c.text] for c in site.sample("handbook", n, order=order, document=doc)]
        except ValueError as error:
            return ["refused", "has no technical order" in str(error)]

    expected = [sample(n, order, doc) for n, order, doc in SAMPLES]
    assert ["refused", True] in expected
    assert js_answers["samples"] == expected


def test_same_hits_in_the_same_order(js_answers, served_site):
    site = open_site(served_site.url)
    expected = []
    for query in QUERIES:
        for f in FILTERS:
            for method in ("simhash", "keyword"):
                hits = site.search(query, 10, method=method, **f)
                expected.append(
                    [[h.topic, h.source, h.chunk.document, h.chunk.index, h.href, h.header_path, h.method, h.distance, h.score,
                      *(h.chunk.citation()[k] for k in ("start_line", "end_line", "url", "section_url"))]
                     for h in hits]
                )
    got = js_answers["searches"]
    assert len(got) == len(expected)
    assert any(rows and rows[0][6] == "simhash" for rows in got) and any(rows and rows[0][6] == "keyword" for rows in got)
    for js_rows, py_rows in zip(got, expected):
        assert [r[:8] for r in js_rows] == [r[:8] for r in py_rows]
        assert [r[8] for r in js_rows] == pytest.approx([r[8] for r in py_rows], abs=1e-9)


def test_same_decoded_embeddings(js_answers, fixture_site):
    table = vectors.decode((fixture_site / "handbook" / "_embeddings.bin").read_bytes())
    js = js_answers["embeddings"]
    assert (js["model"], js["dtype"]) == (table.model, table.dtype)
    assert [tuple(d) for d in js["documents"]] == list(table.documents)
    assert np.allclose(js["head"], table.vectors.reshape(-1)[:768], atol=1e-6)


def test_the_default_radius_is_the_one_the_spec_stage_publishes():
    import re

    from pipeline.topicspec.prompts import DEFAULT_POLICY

    source = CLIENT.read_text(encoding="utf-8")
    assert re.search(r"export const DEFAULT_MAX_DISTANCE = (\d+);", source).group(1) == str(DEFAULT_POLICY.max_distance)


NAV_SCRIPT = r"""
import { openSite } from "%(client)s";
const url = process.argv[1];
const fetched = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => { fetched.push(String(input)); return realFetch(input, init); };
const row = (n) => [n.id, n.title, n.parent, n.documents, n.children, n.path, n.url];
const listed = await openSite(url);
const before = fetched.length;
const nav = (await listed.navigation()).map(row);
const navFetched = fetched.slice(before).map((u) => new URL(u).pathname);
const walked = (await (await openSite(url)).nodes()).map(row);
console.log(JSON.stringify({ nav, navFetched, walked }));
"""


def test_the_pages_navigation_is_the_walk_in_two_requests(served_site):
    """``navigation()`` (the page's topic list) reads _search/nodes.json: the nodes a walk of every
    index.json finds, in the same order, with records.json (the manifest, read as the page's first
    search will want it) and nodes.json as its only requests."""
    result = subprocess.run([NODE, "--input-type=module", "-e", NAV_SCRIPT % {"client": CLIENT.as_uri()}, served_site.url],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["nav"] == out["walked"] and len(out["walked"]) == 3  # root, handbook, notes
    assert sorted(out["navFetched"]) == ["/_search/nodes.json", "/_search/records.json"]
