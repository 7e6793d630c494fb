"""An edit rewrites little: after a one-document edit, a rebuild changes that document's files and
the small summaries above it, not its topic's or the site's (issue 30: a deploy uploads, and a
reader's cache refetches, what changed). In index format 2 that is the document's resource and
the one page of its folder's listing that names it, not the folder's other pages."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.index import pages
from pipeline.search import layout
from pipeline.search.index import SEARCH_DIR, listed_spans
from pipeline.site.build import build
from pipeline.siteformat.indexnames import listing_page
from pipeline.topicspec.specfile import read_topic_spec

WORDS = "lantern harbour meadow copper violet summit orchard glacier canyon ember willow falcon".split()


def document(t: int, d: int) -> str:
    sections = "".join(
        f"## {WORDS[(t + d + s) % 12].title()} section {s}\n\n"
        f"About {WORDS[(t * 5 + s) % 12]} and {WORDS[(d * 7 + s) % 12]}, with {' '.join(WORDS[s:s + 5])}.\n\n"
        for s in range(4)
    )
    return f"# Guide {t}.{d} {WORDS[t]}\n\nThe {WORDS[d]} overview.\n\n{sections}"


@pytest.fixture
def site(tmp_path, monkeypatch):
    # a small site in several parts, as a site of a few thousand chunks is
    monkeypatch.setattr(layout, "PART_WEIGHT", 4_000)
    # and listings of several pages, as a folder of more than 32 documents has
    monkeypatch.setattr(pages, "LISTING_ENTRIES", 2)
    files = {f"topic{t}/doc{d}.md": document(t, d) for t in range(4) for d in range(6)}
    content = write_tree(tmp_path / "content", files)
    config = SiteConfig(title="T", cache_dir=tmp_path / "cache")
    site = tmp_path / "site"
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    return content, site, config


def files(site: Path) -> dict[str, bytes]:
    """Every file a reader can fetch but ``_assets/`` (the same for every site), without the files
    the retired window keeps (the previous build's bytes)."""
    retired = set(json.loads((site / ".pipeline-retired").read_bytes())) if (site / ".pipeline-retired").exists() else set()
    return {rel: p.read_bytes() for p in site.rglob("*")
            if p.is_file() and not (rel := p.relative_to(site).as_posix()).startswith(("_assets/", "."))
            and rel not in retired}


def listing(site: Path, dir_rel: str) -> dict[str, list[str]]:
    """{site path of each page of the folder's listing: the keys of the documents it names}."""
    found, number, count = {}, 1, 1
    while number <= count:
        rel = f"{dir_rel}/{listing_page(number)}"
        page = orjson.loads((site / rel).read_bytes())
        count = page.get("pages", count)
        found[rel] = [entry["key"] for entry in page["_embedded"].get("documents", [])]
        number += 1
    return found


def rewritten(content: Path, site: Path, config, edit) -> tuple[set[str], dict[str, bytes]]:
    before = files(site)
    edit(content / "topic2/doc3.md")
    build(content, site, config, embedder=HashingEmbedder(), progress=False)
    after = files(site)
    return {rel for rel, data in after.items() if before.get(rel) != data}, after


def append_sentence(path: Path) -> None:
    path.write_text(path.read_text() + "One more sentence about the ember harbour.\n")


def append_section(path: Path) -> None:
    path.write_text(path.read_text() + "\n## Appended\n\nA new section about copper lanterns.\n")


@pytest.mark.parametrize("edit", [append_sentence, append_section])
def test_an_edit_rewrites_its_documents_files_and_the_summaries_above_it(site, edit):
    content, root, config = site
    changed, after = rewritten(content, root, config, edit)
    meta = orjson.loads(after[f"{SEARCH_DIR}/meta.json"])
    spans = {f"{SEARCH_DIR}/{rel}": span for rel, span in listed_spans(meta).items()}
    starts = [0, *itertools.accumulate(meta["documents"])]
    topic = next(t for t in meta["topics"] if t["id"] == "topic2")
    d = topic["first"] + 3  # doc3 of topic2
    edited = range(starts[d], starts[d + 1])
    # the spec pages of the topic's other documents change only where a chunk lists an edited chunk as related
    spec = read_topic_spec(root / "topic2" / "topic-spec.md")
    # (and so do their resources, whose items carry the same related links)
    relating = {f"topic2/{folder}/{doc['source'].removesuffix('.md')}{suffix}"
                for doc in spec["documents"]
                if any(r["href"].startswith("_chunks/doc3-") for item in doc["items"] for r in item["related"])
                for folder, suffix in (("_spec", ".md"), ("_index", ".doc.json"))}
    own = {"topic2/doc3.md", "topic2/_spec/doc3.md"} | {
        rel for rel in after if rel.startswith(("topic2/_chunks/doc3", "topic2/_index/doc3.doc"))}
    listing_pages = listing(root, "topic2")
    assert len(listing_pages) == 3  # index.json and _index/page-2.json, page-3.json: 2 documents a page
    naming = next(rel for rel, keys in listing_pages.items() if "doc3" in keys)
    assert naming == "topic2/_index/page-2.json"
    summaries = {
        "topic2/topic-spec.md",  # the topic's keywords, questions, documents (and its pages' hashes)
        naming,  # the page of the topic's listing that names the document (its count, its sample)
        "topic2/llms-full.txt",  # the topic's text, one file a topic
        "topic2/_embeddings.bin",  # the topic's vectors
        "llms.txt",  # the documents' chunk counts
        f"{SEARCH_DIR}/meta.json", f"{SEARCH_DIR}/records.json",  # the search index's manifests: the new names
    }
    keyword_tables = {rel for rel in after if rel.endswith("/_keywords/words.md")}  # generated: a site-wide column
    search = {rel for rel in changed if rel.startswith(SEARCH_DIR + "/") and rel in spans and rel not in summaries}
    assert changed <= own | relating | summaries | keyword_tables | search
    assert {"topic2/doc3.md", "topic2/_spec/doc3.md", "topic2/_index/doc3.doc.json"} <= changed
    # the topic's other listing pages, its index.json among them, stay as they were
    assert not changed & (set(listing_pages) - {naming})
    if edit is append_section:  # a chunk more: the document's entry says so
        assert naming in changed
    # every other topic's files, and its spec pages, stay as they were
    assert not [rel for rel in changed if rel.startswith(("topic0/", "topic1/", "topic3/")) and not rel.endswith("_keywords/words.md")]
    # in _search/: the part, the segment and the vector shard that hold the document, nothing else
    kinds = sorted(rel.split("/")[1] for rel in search if not rel.startswith(f"{SEARCH_DIR}/words/"))
    assert kinds == ["parts", "segments", "vectors"], kinds
    # and the word files of the words the edit brought (the query encoder's rows), at most one a word
    new_words = {"one", "more", "sentence", "ember", "harbour"} if edit is append_sentence else {"appended", "new", "section", "copper", "lanterns"}
    assert len([rel for rel in search if rel.startswith(f"{SEARCH_DIR}/words/")]) <= len(new_words)
    for rel in search:
        span = spans[rel]
        if rel.startswith(f"{SEARCH_DIR}/words/"):
            continue
        if span is None:  # a part: its run of documents holds the edited one
            first, n, _ = next(p for p in meta["parts"] if rel.endswith(f"/{p[2]}.json"))
            assert first <= d < first + n
        else:
            assert span[0] <= edited.start and edited.stop <= span[1]
    # the search index's new names are the only new files there: an unchanged file keeps its name
    assert len(meta["parts"]) >= 3 and len(topic["segments"]) >= 1


def test_an_edit_in_a_big_topic_rewrites_its_own_shards_of_its_terms_only(site, monkeypatch):
    from pipeline.search import index as search_index

    content, root, config = site
    monkeypatch.setattr(search_index, "BUNDLE_POSTINGS", 0)  # every topic big: its own term shards and blocks
    monkeypatch.setattr(layout, "ALL_TERMS_FACTOR", 0)  # and site-wide term shards: as on a bigger site
    monkeypatch.setitem(search_index.build_search_index.__kwdefaults__, "postings_per_shard", 40)  # of a bigger site's size
    build(content, root, config, embedder=HashingEmbedder(), progress=False)
    build(content, root, config, embedder=HashingEmbedder(), progress=False)
    changed, after = rewritten(content, root, config, append_section)
    meta = orjson.loads(after[f"{SEARCH_DIR}/meta.json"])
    assert meta["parts"] is None and all(t["shards"] for t in meta["topics"])
    new = [rel for rel in changed if rel.startswith(SEARCH_DIR + "/") and rel.count("/") == 2]
    by_kind = {kind: [rel for rel in new if rel.split("/")[1] == kind] for kind in ("terms", "topics", "blocks", "vectors")}
    topic = next(t for t in meta["topics"] if t["id"] == "topic2")
    own_shards = {f"{SEARCH_DIR}/topics/{h}.json" for h in topic["shards"]}
    # the topic's own shards of its new terms and the site-wide shards of the same terms; one
    # record block and one vector shard; no other topic's file, though every chunk after the
    # edited document moved one number on
    assert set(by_kind["topics"]) <= own_shards and len(by_kind["blocks"]) == 1 and len(by_kind["vectors"]) == 1
    assert 0 < len(by_kind["terms"]) < len(meta["terms"]) and 0 < len(by_kind["topics"]) < len(topic["shards"])


def test_an_edit_in_a_flat_folder_rewrites_its_spec_page_one_list_page_and_the_topic_page(tmp_path):
    """A folder of more than two list pages' documents: ``topic-spec.md`` and every list page
    stay within a reader's budget, and an edit rewrites the document's spec page, the list page
    naming it and ``topic-spec.md``, no other spec page (``related_k = 0``: no other document's
    related links name the edited chunks)."""
    import shutil

    from pipeline.chunking.tool import plan_chunks, write_chunks
    from pipeline.index.tool import run_index
    from pipeline.topicspec.specfile import SPEC_ENTRIES, list_page
    from pipeline.topicspec.topicspec import run_spec

    count = 2 * SPEC_ENTRIES + 6
    sources = {f"notes/n{d:03d}.md": f"# Note {d}\n\nWords about {WORDS[d % 12]} and {WORDS[(d * 5) % 12]} {d}.\n"
             for d in range(count)}
    content = write_tree(tmp_path / "content", sources)
    config = SiteConfig(title="T", cache_dir=tmp_path / "cache", related_k=0)
    site = tmp_path / "site"
    for _ in range(2):
        build(content, site, config, embedder=HashingEmbedder(), progress=False)
    spec = {rel: data for rel, data in files(site).items() if rel.startswith(("notes/topic-spec.md", "notes/_spec/"))}
    assert {rel for rel in spec if "/_spec/_documents-" in rel} == {f"notes/{list_page(2)}", f"notes/{list_page(3)}"}
    assert max(len(data) for rel, data in spec.items() if not rel.startswith("notes/_spec/n")) <= 32_000
    assert [d["source"] for d in read_topic_spec(site / "notes/topic-spec.md")["documents"]] == sorted(
        rel.removeprefix("notes/") for rel in sources)
    # the stages run alone (`pipeline chunk-dir`, `spec`, `index` on a copy of the content) write the same pages
    tree = shutil.copytree(content, tmp_path / "tree")
    write_chunks(tree, plan_chunks(tree, config, HashingEmbedder().counter()))
    run_spec(tree, config, HashingEmbedder(), progress=False)
    run_index(tree, config)
    alone = {rel: data for rel, data in files(tree).items() if rel.startswith(("notes/topic-spec.md", "notes/_spec/"))}
    assert alone == spec and files(tree)["notes/index.json"] == files(site)["notes/index.json"]
    for d, expected in ((SPEC_ENTRIES + 4, {f"notes/{list_page(2)}"}), (3, set())):
        path = content / f"notes/n{d:03d}.md"
        before = files(site)
        path.write_text(path.read_text() + "One more sentence about the ember harbour.\n")
        build(content, site, config, embedder=HashingEmbedder(), progress=False)
        changed = {rel for rel, data in files(site).items() if before.get(rel) != data}
        assert {rel for rel in changed if rel.startswith(("notes/topic-spec.md", "notes/_spec/"))} == {
            "notes/topic-spec.md", f"notes/_spec/n{d:03d}.md", *expected}

