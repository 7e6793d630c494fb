"""pipeline.site.vectorpages: a topic's vectors as pages of 32 documents; an edit to one document
rewrites one page, and both clients read every page back as one table (issue 30)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.reuse.state import BuildState
from pipeline.site import vectorpages
from pipeline.site.build import build
from pipeline.siteformat import vectors
from test_client_support import Served

WORDS = "lantern harbour meadow copper violet summit orchard glacier canyon ember willow falcon".split()
NODE = shutil.which("node")
CLIENT = Path(__file__).resolve().parent.parent / "pipeline" / "assets" / "client.js"


def topic(n: int, seed: int = 5) -> tuple[str, list[tuple[str, np.ndarray]]]:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        rows = rng.normal(size=(1 + i % 3, 8)).astype(np.float32)
        docs.append((f"doc{i:03d}", rows / np.linalg.norm(rows, axis=1, keepdims=True)))
    return "m", docs


def pages_on_disk(site: Path, dir_rel: str) -> dict[str, bytes]:
    folder = site / dir_rel
    found = {vectors.FILE_NAME: (folder / vectors.FILE_NAME).read_bytes()} if (folder / vectors.FILE_NAME).is_file() else {}
    found |= {f"_index/{p.name}": p.read_bytes() for p in sorted((folder / "_index").glob("*.bin"))}
    return found


def test_pages_written_are_the_encoded_pages_and_stale_ones_go(tmp_path):
    (tmp_path / "notes" / "_index").mkdir(parents=True)
    (tmp_path / "notes" / "_index" / "page-2.json").write_text("{}")  # the index stage's: left alone
    model, docs = topic(70)
    out = vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: (model, docs), dtype="int8")
    assert pages_on_disk(tmp_path, "notes") == dict(vectors.encode_pages(model, docs))
    assert (out.pages, out.written) == (3, 3)
    out = vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: (model, docs[:40]), dtype="int8")
    assert sorted(pages_on_disk(tmp_path, "notes")) == ["_embeddings.bin", "_index/embeddings-2.bin"]
    assert out.removed == ["notes/_index/embeddings-3.bin"] and out.written == 1  # page 2 ends sooner; page 1 kept
    out = vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: None, dtype="int8")
    assert pages_on_disk(tmp_path, "notes") == {} and out.pages == 0
    assert sorted(out.removed) == ["notes/_embeddings.bin", "notes/_index/embeddings-2.bin"]
    assert (tmp_path / "notes" / "_index" / "page-2.json").is_file()


def test_with_a_state_an_unchanged_page_is_neither_encoded_nor_written(tmp_path, monkeypatch):
    model, docs = topic(70)
    first = BuildState()
    first.put("topics", "notes", "t1")
    vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: (model, docs), dtype="int8", state=first)
    assert set(first.new["embeddings"]) == {"notes", "notes/_embeddings.bin", "notes/_index/embeddings-2.bin",
                                            "notes/_index/embeddings-3.bin"}
    encoded = []
    real = vectors.encode
    monkeypatch.setattr(vectors, "encode", lambda *a, **k: encoded.append(k["page"]) or real(*a, **k))
    # the same topic digest: nothing read, nothing encoded
    second = BuildState(old=first.new)
    second.put("topics", "notes", "t1")
    read = []
    out = vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: read.append(d), dtype="int8", state=second)
    assert (read, encoded, out.written, out.pages) == ([], [], 0, 3) and second.new["embeddings"].keys() == first.new["embeddings"].keys()
    # a topic edited in its document 40 (page 2): only page 2 is encoded and written
    edited = list(docs)
    edited[40] = (docs[40][0], -docs[40][1])
    third = BuildState(old=second.new)
    third.put("topics", "notes", "t2")
    before = pages_on_disk(tmp_path, "notes")
    out = vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: (model, edited), dtype="int8", state=third)
    after = pages_on_disk(tmp_path, "notes")
    assert encoded == [2] and out.written == 1
    assert [name for name in after if after[name] != before[name]] == ["_index/embeddings-2.bin"]
    assert after == dict(vectors.encode_pages(model, edited))
    # a page damaged on disk is written again though its inputs are the same
    (tmp_path / "notes" / "_index" / "embeddings-3.bin").write_bytes(b"damaged")
    fourth = BuildState(old=third.new)
    fourth.put("topics", "notes", "t2")
    vectorpages.publish_topic_vectors(tmp_path, "notes", lambda d: (model, edited), dtype="int8", state=fourth)
    assert pages_on_disk(tmp_path, "notes") == dict(vectors.encode_pages(model, edited))


# --- end to end: a flat folder of 70 documents, 3 pages -------------------------------------


def note(d: int, extra: str = "") -> str:
    return f"# Note {d} {WORDS[d % 12]}\n\nAbout {WORDS[(d * 5) % 12]} and {WORDS[(d * 7) % 12]}, {WORDS[d % 5]} notes.\n{extra}"


JS_TABLE = r"""
import { openSite } from "%(client)s";
const site = await openSite(process.argv[1]);
try {
  const table = await site.embeddings("notes");
  process.stdout.write(JSON.stringify({ documents: table.documents, vectors: Array.from(table.vectors) }));
} catch (error) {
  process.stdout.write(JSON.stringify({ error: [error.kind, error.message] }));
}
"""


def js_table(url: str) -> dict:
    result = subprocess.run([NODE, "--input-type=module", "-e", JS_TABLE % {"client": CLIENT.as_uri()}, url],
                            capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_an_edit_in_a_flat_folder_rewrites_one_vectors_page_and_clients_read_the_whole_table(tmp_path):
    content = write_tree(tmp_path / "content", {f"notes/n{d:03d}.md": note(d) for d in range(70)})
    config = SiteConfig(title="T", cache_dir=tmp_path / "cache")
    site = tmp_path / "site"
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    before = pages_on_disk(site, "notes")
    assert sorted(before) == ["_embeddings.bin", "_index/embeddings-2.bin", "_index/embeddings-3.bin"]
    table_before = open_site(site).embeddings("notes")
    assert len(table_before.documents) == 70 and [d for d, _ in table_before.documents] == [f"n{d:03d}" for d in range(70)]

    (content / "notes" / "n040.md").write_text(note(40, "\nOne more sentence about the copper meadow.\n"))
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    after = pages_on_disk(site, "notes")
    assert [name for name in after if after[name] != before.get(name)] == ["_index/embeddings-2.bin"]

    table = open_site(site).embeddings("notes")
    assert table.documents == table_before.documents
    edited = table.row_of("n040", 0)
    others = [r for r in range(len(table.vectors)) if r != edited]
    assert np.array_equal(table.vectors[others], table_before.vectors[others])
    assert not np.array_equal(table.vectors[edited], table_before.vectors[edited])
    served = Served(site)
    try:
        js = js_table(served.url)
        assert [tuple(d) for d in js["documents"]] == list(table.documents)
        assert np.allclose(np.array(js["vectors"], dtype=np.float32), table.vectors.reshape(-1), atol=1e-6)
        # a page lost: both clients refuse the table, naming the page
        (site / "notes" / "_index" / "embeddings-3.bin").unlink()
        with pytest.raises(vectors.VectorFormatError, match="page 3 of the embeddings table is missing") as caught:
            open_site(site).embeddings("notes")
        assert "notes/_index/embeddings-3.bin" in str(caught.value)
        kind, message = js_table(served.url)["error"]
        assert kind == "corrupt-embeddings" and "page 3 of the embeddings table is missing" in message
        assert "notes/_index/embeddings-3.bin" in message
    finally:
        served.close()


def test_the_shared_page_plan_vectors_are_current():
    # tests/js/vectorpages.test.mjs checks searchplan.js against these: a stale file would pass there
    from pipeline.client.searchindex import Filters, SearchIndex
    from pipeline.client.searchplan import topic_pages

    held = json.loads((Path(__file__).parent / "vectors" / "vectorpages.json").read_text(encoding="utf-8"))
    assert any(case["whole"] for case in held["cases"]) and any(len(own) > 1 for c in held["cases"] for own in c["files"])
    for case in held["cases"]:
        meta = held["manifests"][case["manifest"]]
        index = SearchIndex(None, meta)
        assert index.whole_topics(Filters(topic=case["prefix"])) == case["whole"]
        assert index.vector_files([meta["topics"][i] for i in case["chosen"]], case["budget"]) == case["files"]
    multi = {"id": "notes", "docs": 70, "embeddings": "notes/_embeddings.bin"}
    assert topic_pages(multi) == ["notes/_embeddings.bin", "notes/_index/embeddings-2.bin", "notes/_index/embeddings-3.bin"]
    assert topic_pages({"id": "", "docs": 3, "embeddings": "_embeddings.bin"}) == ["_embeddings.bin"]
    assert topic_pages({"id": "x", "docs": 3, "embeddings": None}) == []
    # a scope of 70 one-chunk documents: 70 rows, but 3 pages of a budget of 3 at most: whole; 97: not
    for docs, whole in ((70, True), (96, True), (97, False)):
        meta = {"topics": [{**multi, "start": 0, "count": docs, "first": 0, "docs": docs}], "documents": [1] * docs,
                "chunks": docs, "vectors": {"dimension": 4}}
        assert SearchIndex(None, meta).whole_topics(Filters(topic="notes")) is whole


def test_search_reads_a_paged_topic_within_its_request_budget(tmp_path):
    from pipeline.client.searchplan import topic_pages

    content = write_tree(tmp_path / "content", {f"notes/n{d:03d}.md": note(d) for d in range(70)}
                         | {f"other/o{d}.md": note(d + 100) for d in range(3)})
    site = tmp_path / "site"
    build(content, site, SiteConfig(title="T", cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)

    def fetched_by(**options) -> tuple[list, list[str]]:
        reader = open_site(site)
        got = []
        original = reader.transport.get
        reader.transport.get = lambda rel: got.append(rel) or original(rel)
        hits = reader.search(options.pop("query"), 5, embedder=HashingEmbedder(), **options)
        return hits, [rel for rel in got if rel.endswith(".bin") and "/_search/" not in f"/{rel}"]

    pages = ["notes/_embeddings.bin", "notes/_index/embeddings-2.bin", "notes/_index/embeddings-3.bin"]
    meta = open_site(site).search_index().meta
    assert topic_pages(next(t for t in meta["topics"] if t["id"] == "notes")) == pages
    # a scope of 70 rows on 3 pages: its pages whole, every row a candidate
    hits, read = fetched_by(query="copper meadow", method="hybrid", topic="notes")
    assert hits and sorted(read) == pages
    # no lexical hit: the closest topics' pages, no more than the budget leaves (meta.json spent one)
    for budget, most in ((2, 1), (3, 2), (None, 5)):
        hits, read = fetched_by(query="zzzunknownword", method="embedding", request_budget=budget)
        assert hits and 1 <= len(read) <= most and len(set(read)) == len(read)
        assert [rel for rel in read if rel.startswith("notes/")] == pages[:len([r for r in read if r.startswith("notes/")])]
    # the default budget (5 vector files): both topics whole, 4 pages
    assert sorted(read) == sorted([*pages, "other/_embeddings.bin"])
