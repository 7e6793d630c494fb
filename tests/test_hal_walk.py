"""A HAL client nobody here wrote (traverson + traverson-hal from npm, under Node) walks a served
site by link relations alone: root -> topic -> document -> chunk, and every page of a paged
folder and of a paged document to every chunk file."""

from __future__ import annotations

import json
import shutil
import subprocess

import orjson
import pytest

from conftest import ROOT, document_resource
from test_client_support import Served, fixture_site, served_site  # noqa: F401

NODE = shutil.which("node")
MODULES = ROOT / "node_modules"
pytestmark = pytest.mark.skipif(
    NODE is None or not (MODULES / "traverson-hal").is_dir(), reason="needs node and npm's traverson-hal (make install)"
)

# Every step is a HAL relation: an embedded resource chosen by a secondary key, or a link
# (``item[name:i]``: the chunk item link whose name, HAL's secondary key, is chunk i's index).
SCRIPT = r"""
const traverson = require(process.argv[1] + "/traverson");
const JsonHalAdapter = require(process.argv[1] + "/traverson-hal");
traverson.registerMediaType(JsonHalAdapter.mediaType, JsonHalAdapter);
const [url, topic, key, index] = process.argv.slice(2);
const steps = ["topics[id:" + topic + "]", "self", "documents[key:" + key + "]", "self", "item[name:" + index + "]"];
const walk = () => traverson.from(url).jsonHal().follow(...steps);
walk().getUrl((error, chunkUrl) => {
  if (error) { console.error(String(error)); process.exit(2); }
  walk().get((error2, response) => {
    if (error2) { console.error(String(error2)); process.exit(3); }
    console.log(JSON.stringify({ url: chunkUrl, status: response.statusCode, text: response.body }));
  });
});
"""

# From a folder's index.json: every listing page by ``next``; on each, every embedded document
# by ``documents[i]`` then ``self``; on each document resource page every ``item[j]``, and its
# later pages by ``next``. Only relation names and the length of a relation's array are read.
WALK_ALL = r"""
const traverson = require(process.argv[1] + "/traverson");
const JsonHalAdapter = require(process.argv[1] + "/traverson-hal");
traverson.registerMediaType(JsonHalAdapter.mediaType, JsonHalAdapter);
const start = process.argv[2];
const resource = (url) => new Promise((ok, fail) => traverson.from(url).jsonHal().getResource((e, r) => (e ? fail(e) : ok(r))));
const follow = (url, ...steps) => new Promise((ok, fail) => traverson.from(url).jsonHal().follow(...steps).getUrl((e, u) => (e ? fail(e) : ok(u))));
(async () => {
  const chunks = [];
  let pages = 0, documents = 0, documentPages = 0;
  let page = start;
  while (page) {
    pages++;
    const listing = await resource(page);
    for (let i = 0; i < (listing._embedded.documents || []).length; i++) {
      documents++;
      let doc = await follow(page, "documents[" + i + "]", "self");
      while (doc) {
        documentPages++;
        const body = await resource(doc);
        for (let j = 0; j < body._links.item.length; j++) chunks.push(await follow(doc, "item[" + j + "]"));
        doc = body._links.next ? await follow(doc, "next") : null;
      }
    }
    page = listing._links.next ? await follow(page, "next") : null;
  }
  console.log(JSON.stringify({ chunks, pages, documents, documentPages }));
})().catch((error) => { console.error(String(error)); process.exit(2); });
"""


def walk(url: str, topic: str, key: str, index: int) -> dict:
    result = subprocess.run(
        [NODE, "-e", SCRIPT, str(MODULES), url, topic, key, str(index)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("topic, key, index", [("handbook", "alpha", 0), ("handbook", "alpha", 4), ("handbook", "beta", 3), ("notes", "unsafe", 1)])
def test_traverson_hal_walks_root_topic_document_chunk(fixture_site, served_site, topic, key, index):  # noqa: F811
    out = walk(served_site.url + "index.json", topic, key, index)
    chunk = fixture_site / topic / "_chunks" / f"{key}-{index}.md"
    assert out["status"] == 200 and out["url"] == f"{served_site.url}{topic}/_chunks/{key}-{index}.md"
    assert out["text"] == chunk.read_text(encoding="utf-8")


def test_traverson_hal_reaches_every_chunk_of_a_paged_folder_and_of_paged_documents(tmp_path):
    """70 notes (three listing pages of 32) and one document long enough for three pages."""
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.siteformat.indexnames import LISTING_ENTRIES
    from pipeline.site.build import build

    content = tmp_path / "content" / "vault"
    content.mkdir(parents=True)
    for i in range(70):
        (content / f"note-{i:03d}.md").write_text(f"# Note {i}\n\nAbout item {i}.\n\n## Details\n\nMore on {i}.\n", encoding="utf-8")
    (content / "long.md").write_text("# Long\n\nOverview.\n\n" + "".join(
        f"## Section {j}\n\n" + f"Section {j} explains the part number {j} of the long document in some detail. " * 6 + "\n\n"
        for j in range(90)), encoding="utf-8")
    site = tmp_path / "site"
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    first = orjson.loads((site / "vault/index.json").read_bytes())
    assert first["documents"] == 71 and first["pages"] == -(-71 // LISTING_ENTRIES) == 3
    assert document_resource(site, "vault", "long")["pages"] >= 3
    served = Served(site)
    try:
        result = subprocess.run([NODE, "-e", WALK_ALL, str(MODULES), served.url + "vault/index.json"],
                                capture_output=True, text=True, timeout=600)
    finally:
        served.close()
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    on_disk = sorted(f"{served.url}vault/_chunks/{p.name}" for p in (site / "vault/_chunks").glob("*.md"))
    assert sorted(out["chunks"]) == on_disk and len(out["chunks"]) == len(set(out["chunks"]))  # every chunk, once
    assert (out["pages"], out["documents"]) == (3, 71) and out["documentPages"] >= 71 + 2


def test_every_chunk_item_and_document_links_its_files(fixture_site):  # noqa: F811
    """``_links`` of items and documents name real files, items in reading order, absolute."""
    for topic in ("handbook", "notes"):
        listing = orjson.loads((fixture_site / topic / "index.json").read_bytes())
        for entry in listing["_embedded"]["documents"]:
            key = entry["key"]
            first = orjson.loads((fixture_site / entry["_links"]["self"]["href"].lstrip("/")).read_bytes())
            whole = document_resource(fixture_site, topic, key)
            items = whole["items"]
            links = first["_links"]
            assert links["alternate"]["href"] == f"/{topic}/{first['source']}" and links["up"]["href"] == f"/{topic}/index.json"
            assert orjson.loads((fixture_site / links["manifest"]["href"].lstrip("/")).read_bytes())["source"] == first["source"]
            # the page lists the overview, then the stripe order; item links follow the items
            assert [i["index"] for i in first["items"]] == [0, *first["stripe_order"]][: len(first["items"])]
            assert [link["href"] for link in links["item"]] == [i["_links"]["self"]["href"] for i in first["items"]]
            assert [link["name"] for link in links["item"]] == [str(i["index"]) for i in first["items"]]
            assert [s["index"] for s in entry["sample"]] == [*first["stripe_order"], 0][:3]
            for i, item in enumerate(items):
                assert item["_links"]["self"]["href"] == f"/{topic}/{item['href']}"
                assert (fixture_site / topic / item["href"]).is_file()
                assert ("prev" in item["_links"]) == (i > 0) and ("next" in item["_links"]) == (i + 1 < len(items))
                if i + 1 < len(items):
                    assert item["_links"]["next"]["href"] == items[i + 1]["_links"]["self"]["href"]


def test_no_manifest_or_resource_can_be_taken_for_an_index(tmp_path):
    """A document named index.md gets ``_chunks/index.manifest.json`` and
    ``_index/index.doc.json``; no ``index.json`` below ``_chunks`` or ``_index``."""
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.site.build import build

    content = tmp_path / "content" / "docs"
    content.mkdir(parents=True)
    (content / "index.md").write_text("# Home\n\nWelcome.\n\n## More\n\nDetails.\n", encoding="utf-8")
    site = tmp_path / "site"
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert (site / "docs/_chunks/index.manifest.json").is_file() and (site / "docs/_index/index.doc.json").is_file()
    assert not list(site.glob("**/_chunks/index.json")) and not list(site.glob("**/_index/index.json"))
    resource = document_resource(site, "docs", "index")
    assert resource["_links"]["manifest"]["href"] == "/docs/_chunks/index.manifest.json"
    # A site built before the rename: its old manifest is an orphan the next build removes.
    (site / "docs/_chunks/index.json").write_text('{"source": "index.md"}', encoding="utf-8")
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache", retire_removed_files=False), embedder=HashingEmbedder(), progress=False)
    assert sorted(p.name for p in (site / "docs/_chunks").iterdir()) == ["index-0.md", "index-1.md", "index.manifest.json"]
