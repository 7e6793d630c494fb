"""A document's chunk manifest (``chunking/manifest.py``): paged like a document resource, so no
manifest file a reader fetches is over 32 kB at any document size (issue 30); a reader following
``_links`` from the root reaches every chunk's record; the pages give back the manifest's data;
a rebuild reuses the pages and rewrites one that is not what the build writes."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from conftest import write_tree
from pipeline.chunking.manifest import join_pages, manifest_digest, manifest_files
from pipeline.client import NotFound, SiteError, open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.export.source import read_site
from pipeline.site.build import build
from pipeline.site.linkcheck import check_site
from pipeline.siteformat.indexnames import PAGE_BYTES

BUDGET = 32 * 1024  # bytes of a file a reader reads whole (~8k tokens)
SECTIONS = 400


def long_document() -> str:
    """A document of ``SECTIONS`` short sections (a chunk each), with front matter every record repeats."""
    parts = [f"## Part {j}\n\nPart {j} explains setting {j * 7 % 101} of the widget, step {j}.\n\n" for j in range(SECTIONS)]
    return "---\ntags: [widgets, settings]\nauthor: Someone\n---\n# Widget settings\n\nEvery setting of the widget.\n\n" + "".join(parts)


def make(tmp_path, base_url: str = "/kb/"):
    content = write_tree(tmp_path / "content", {"guide/long.md": long_document(), "guide/short.md": "# Short\n\nOne chunk.\n"})
    site, config = tmp_path / "site", SiteConfig(base_url=base_url, cache_dir=tmp_path / "cache")
    report = build(content, site, config, embedder=HashingEmbedder(), progress=False)
    return content, site, config, report


def test_a_long_documents_manifest_is_paged_within_budget_and_every_record_is_reached_by_links(tmp_path):
    _, site, *_ = make(tmp_path)
    manifests = {p.name: p.stat().st_size for p in (site / "guide/_chunks").glob("*.json")}
    assert len([n for n in manifests if n.startswith("long.manifest")]) >= 5  # the long document's is paged
    over = {name: size for name, size in manifests.items() if size > BUDGET}
    assert not over, over

    def get(href: str) -> dict:  # a reader of the format alone: only links, from the root
        assert href.startswith("/kb/"), href
        return orjson.loads((site / href.removeprefix("/kb/")).read_bytes())

    root = get("/kb/index.json")
    topic = get(next(t["_links"]["self"]["href"] for t in root["_embedded"]["topics"] if t["id"] == "guide"))
    entry = next(d for d in topic["_embedded"]["documents"] if d["key"] == "long")
    resource = get(entry["_links"]["self"]["href"])
    items, page = {}, resource
    while True:  # every item of the document resource, page after page
        items.update({item["index"]: item for item in page["items"]})
        if "next" not in page["_links"]:
            break
        page = get(page["_links"]["next"]["href"])
    first = page = get(resource["_links"]["manifest"]["href"])
    records, numbers = [], []
    while True:
        numbers.append(page["page"])
        records += page["chunks"]
        if "next" not in page["_links"]:
            break
        page = get(page["_links"]["next"]["href"])
    assert numbers == list(range(1, first["pages"] + 1)) and first["_links"]["last"] == page["_links"]["self"]
    assert first["count"] == resource["count"] == len(records) == len(items) >= SECTIONS
    assert [r["chunk_index"] for r in records] == list(range(first["count"]))
    for record in records:  # the record of each chunk the resource lists: same file, same lines
        item = items[record["chunk_index"]]
        assert (record["href"], record["start_line"], record["end_line"]) == (item["href"], item["start_line"], item["end_line"])
        assert record["metadata"]["front_matter"]["author"] == "Someone"
    assert check_site(site).ok


def test_the_python_client_exports_every_record_of_a_paged_manifest(tmp_path):
    _, site, *_ = make(tmp_path)
    document = next(d for d in read_site(open_site(site)).documents if d.source == "guide/long.md")
    source = (site / "guide/long.md").read_text(encoding="utf-8")
    assert len(document.chunks) > SECTIONS and document.front_matter["author"] == "Someone"
    assert [c.chunk_index for c in document.chunks] == list(range(len(document.chunks)))
    assert all(c.content.endswith(source[c.start_offset : c.end_offset]) for c in document.chunks)


def test_pages_that_do_not_fit_together_are_refused_naming_the_file(tmp_path):
    _, site, *_ = make(tmp_path)
    folder = site / "guide/_chunks"
    first = orjson.loads((folder / "long.manifest.json").read_bytes())
    pages = [first, *(orjson.loads((folder / f"long.manifest-{p}.json").read_bytes()) for p in range(2, first["pages"] + 1))]
    assert len(join_pages(pages)["chunks"]) == first["count"]
    with pytest.raises(ValueError, match="not page 2"):
        join_pages([pages[0], pages[2], pages[1], *pages[3:]])
    (folder / "long.manifest-3.json").write_bytes(orjson.dumps({**pages[2], "chunks": "not a list"}))
    with pytest.raises(SiteError, match="do not fit together") as raised:
        read_site(open_site(site))
    assert raised.value.url.endswith("guide/_chunks/long.manifest.json")
    (folder / "long.manifest-3.json").unlink()
    with pytest.raises(NotFound) as raised:
        read_site(open_site(site))
    assert raised.value.url.endswith("guide/_chunks/long.manifest-3.json")


def test_a_rebuild_reuses_the_pages_and_rewrites_one_not_as_the_build_writes_it(tmp_path):
    content, site, config, _ = make(tmp_path)
    folder = site / "guide/_chunks"
    before = {p.name: p.read_bytes() for p in folder.glob("long.manifest*.json")}
    assert build(content, site, config, embedder=HashingEmbedder(), progress=False).chunk.written == 0
    page = orjson.loads(before["long.manifest-3.json"])
    page["_links"]["prev"]["href"] = "/kb/guide/_chunks/elsewhere.json"  # the same records, a wrong link
    (folder / "long.manifest-3.json").write_bytes(orjson.dumps(page))
    (folder / "long.manifest-4.json").unlink()
    again = build(content, site, config, embedder=HashingEmbedder(), progress=False)
    assert again.chunk.written >= 2 and {p.name: p.read_bytes() for p in folder.glob("long.manifest*.json")} == before
    moved = build(content, site, SiteConfig(base_url="/moved/", cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert moved.chunk.written >= len(before)  # the pages' links name the new base
    first = orjson.loads((folder / "long.manifest.json").read_bytes())
    assert first["_links"]["next"]["href"] == "/moved/guide/_chunks/long.manifest-2.json"


record_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)
records = st.lists(st.fixed_dictionaries({"title": record_text, "start_line": st.integers(1, 10**6), "metadata": st.dictionaries(
    st.text(max_size=8), record_text, max_size=3)}), max_size=300)
names = st.lists(st.text(max_size=60), max_size=600)


@settings(max_examples=40, deadline=None)
@given(records, st.none() | st.tuples(names, names, names), st.sampled_from(["/", "/kb/", "https://host.example/docs/"]))
def test_the_pages_give_back_the_data_and_each_fits_a_page_unless_one_record_alone_does_not(chunks, note, base_url):
    data = {"manifest_version": 3, "source": "a b.md", "title": "A", "count": len(chunks)}
    if note is not None:
        data.update(links=note[0], tags=note[1], aliases=note[2])
    data["chunks"] = [{**c, "chunk_index": i} for i, c in enumerate(chunks)]
    files = manifest_files(data, base_url, "x/y", "a b")
    assert list(files)[0] == "a b.manifest.json" and all(name == f"a b.manifest-{p}.json" for p, name in enumerate(files, 1) if p > 1)
    pages = [orjson.loads(blob) for blob in files.values()]
    assert join_pages(pages) == data and manifest_digest(join_pages(pages)) == manifest_digest(data)
    assert manifest_files(data, base_url, "x/y", "a b") == files  # deterministic
    for blob, page in zip(files.values(), pages):
        assert len(blob) <= PAGE_BYTES or len(page["chunks"]) == 1, (len(blob), len(page["chunks"]))
