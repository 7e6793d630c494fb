"""A HAL client nobody here wrote (traverson + traverson-hal from npm, under Node) walks a served
site root -> topic -> document -> chunk by link relations alone and reads the chunk's text."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from conftest import ROOT
from test_client_support import fixture_site, served_site  # noqa: F401

NODE = shutil.which("node")
MODULES = ROOT / "node_modules"
pytestmark = pytest.mark.skipif(
    NODE is None or not (MODULES / "traverson-hal").is_dir(), reason="needs node and npm's traverson-hal (make install)"
)

# Every step is a HAL relation: an embedded resource chosen by a secondary key, or a link.
SCRIPT = r"""
const traverson = require(process.argv[1] + "/traverson");
const JsonHalAdapter = require(process.argv[1] + "/traverson-hal");
traverson.registerMediaType(JsonHalAdapter.mediaType, JsonHalAdapter);
const [url, topic, key, index] = process.argv.slice(2);
const steps = ["topics[id:" + topic + "]", "self", "documents[key:" + key + "]", "item[" + index + "]"];
const walk = () => traverson.from(url).jsonHal().follow(...steps);
walk().getUrl((error, chunkUrl) => {
  if (error) { console.error(String(error)); process.exit(2); }
  walk().get((error2, response) => {
    if (error2) { console.error(String(error2)); process.exit(3); }
    console.log(JSON.stringify({ url: chunkUrl, status: response.statusCode, text: response.body }));
  });
});
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


def test_every_chunk_item_and_document_links_its_files(fixture_site):  # noqa: F811
    """``_links`` of items and documents name real files, in document order, absolute."""
    for topic in ("handbook", "notes"):
        doc = orjson.loads((fixture_site / topic / "index.json").read_bytes())
        refs = {ref["key"]: ref for ref in doc["_embedded"]["documents"]}
        assert sorted(refs) == sorted(doc["_embedded"]["chunks"])
        for key, chunks in doc["_embedded"]["chunks"].items():
            items = chunks["items"]
            links = chunks["_links"]
            assert links["self"]["href"] == f"/{topic}/{chunks['source']}"
            assert links["first"]["href"] == items[0]["_links"]["self"]["href"]
            assert orjson.loads((fixture_site / links["manifest"]["href"].lstrip("/")).read_bytes())["source"] == chunks["source"]
            assert [i["href"] for i in refs[key]["_links"]["item"]] == [item["_links"]["self"]["href"] for item in items]
            for i, item in enumerate(items):
                assert item["_links"]["self"]["href"] == f"/{topic}/{item['href']}"
                assert (fixture_site / topic / item["href"]).is_file()
                assert ("prev" in item["_links"]) == (i > 0) and ("next" in item["_links"]) == (i + 1 < len(items))
                if i + 1 < len(items):
                    assert item["_links"]["next"]["href"] == items[i + 1]["_links"]["self"]["href"]


def test_no_manifest_can_be_taken_for_an_index(tmp_path):
    """A document named index.md gets ``_chunks/index.manifest.json``; no ``index.json`` below ``_chunks``."""
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.site.build import build

    content = tmp_path / "content" / "docs"
    content.mkdir(parents=True)
    (content / "index.md").write_text("# Home\n\nWelcome.\n\n## More\n\nDetails.\n", encoding="utf-8")
    site = tmp_path / "site"
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert (site / "docs/_chunks/index.manifest.json").is_file()
    assert not list(site.glob("**/_chunks/index.json"))
    topic = orjson.loads((site / "docs/index.json").read_bytes())
    assert topic["_embedded"]["chunks"]["index"]["_links"]["manifest"]["href"] == "/docs/_chunks/index.manifest.json"
    # A site built before the rename: its old manifest is an orphan the next build removes.
    (site / "docs/_chunks/index.json").write_text('{"source": "index.md"}', encoding="utf-8")
    build(tmp_path / "content", site, SiteConfig(cache_dir=tmp_path / "cache", retire_removed_files=False), embedder=HashingEmbedder(), progress=False)
    assert sorted(p.name for p in (site / "docs/_chunks").iterdir()) == ["index-0.md", "index-1.md", "index.manifest.json"]
