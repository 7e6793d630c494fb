"""The search page asks the engine only for the hits it shows (search-ui.js ``engineSearch`` with a
small ``k``) and asks again for more: the first n hits must be the same for every ``k``, and
``more`` must say whether hits follow. Run under Node against a served site (``_search/`` index),
for lexical, hybrid (with a query vector) and keyword searches, with and without filters."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.embedding.hashing import HashingEmbedder
from test_client_support import fixture_site, served_site  # noqa: F401

SEARCH_UI = Path(__file__).resolve().parent.parent / "pipeline" / "assets" / "search-ui.js"
CLIENT = SEARCH_UI.parent / "client.js"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed (the project's machines have Node 20)")

QUERIES = ["cache", "how does the stripe order spread chunks over a document", "publish site github pages", "the"]
OPTIONS = [{}, {"topic": "notes"}, {"isCode": True}, {"mode": "keyword"}]
KS = [1, 2, 3, 5, 8]

SCRIPT = r"""
import { openSite } from "%(client)s";
import { MAX_HITS, engineSearch } from "%(ui)s";
import { readFileSync } from "node:fs";
const [url] = process.argv.slice(1);
const site = await openSite(url);
const key = (h) => [h.topic, h.source, h.index, h.method];
const out = [];
for (const c of JSON.parse(readFileSync(0, "utf8"))) {
  const all = await engineSearch(site, c.query, c.options, c.vector, MAX_HITS);
  const pages = [];
  for (const k of c.ks) {
    const page = await engineSearch(site, c.query, c.options, c.vector, k);
    pages.push({ k, hits: page.hits.map(key), more: page.more });
  }
  out.push({ all: all.hits.map(key), allMore: all.more, pages });
}
console.log(JSON.stringify(out));
"""


def test_the_first_hits_do_not_depend_on_how_many_are_asked_for(served_site):
    embedder = HashingEmbedder()
    cases = [
        {"query": q, "options": o, "vector": vector, "ks": KS}
        for q in QUERIES
        for o in OPTIONS
        for vector in (None, embedder.embed([q])[0].tolist())
    ]
    result = subprocess.run(
        [NODE, "--input-type=module", "-e", SCRIPT % {"client": CLIENT.as_uri(), "ui": SEARCH_UI.as_uri()}, served_site.url],
        input=json.dumps(cases), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    longest = 0
    methods = set()
    for case, row in zip(cases, got, strict=True):
        everything = row["all"]
        assert not row["allMore"]  # the fixture has far fewer matches than MAX_HITS
        longest = max(longest, len(everything))
        methods.update(h[3] for h in everything)
        for page in row["pages"]:
            assert page["hits"] == everything[: page["k"]], (case["query"], case["options"], page["k"])
            assert page["more"] == (len(everything) > page["k"]), (case["query"], case["options"], page["k"])
    assert longest > max(KS)  # some query had more hits than any page: "more" was exercised both ways
    # the site has a static query encoder, so "auto" is hybrid with or without the page's vector
    assert {"hybrid", "keyword"} <= methods
