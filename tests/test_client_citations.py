"""What a citation needs, on every hit: source lines that hold the chunk's text, public URLs
that the built site serves, the same fields from the index walk and from ``_search/``, and the
shared vectors (tests/vectors/citations.json) the browser's readers are held to."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.siteformat.packedrecords import pack, unpack
from pipeline.siteformat import citations
from pipeline.siteformat.hrefs import base_of
from test_client_support import fixture_site, served_site, site_copy  # noqa: F401

VECTORS = Path(__file__).parent / "vectors" / "citations.json"


def test_the_shared_citation_vectors_are_what_python_computes_now():
    # tests/js/citations.test.mjs checks the browser's readers against these: a stale file would pass there
    held = orjson.loads(VECTORS.read_bytes())
    for case in held["records"]:
        assert pack(case["records"], case["topic_of"]) == case["packed"]
        assert unpack(case["packed"], case["topic_of"]) == case["records"]
    kinds = set()
    for case in held["urls"]:
        base = base_of(case["self_href"])
        site = citations.public_base(base, case["reading_root"])
        assert (base, site) == (case["base_url"], case["site_url"])
        assert citations.file_url(site, case["path"]) == case["chunk_url"]
        assert citations.section_url(site, case["topic"], case["document"], case["index"]) == case["section_url"]
        kinds.add((urlsplit(site).scheme != "", case["reading_root"] is not None))
    assert kinds == {(True, True), (True, False), (False, False)}  # absolute, made absolute, root-relative
    gaps = [row[3] for case in held["records"] for row in case["packed"]["chunks"]]
    assert None in gaps and 2 in gaps and any(g is not None and g < 2 for g in gaps)


line = st.one_of(st.none(), st.integers(1, 5000))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), line, line), min_size=1, max_size=30))
def test_packed_lines_unpack_to_exactly_the_lines_packed(rows):
    records = [{"topic": "t", "document": doc, "document_title": doc, "source": f"t/{doc}.md", "index": 0,
                "path": f"t/_chunks/{doc}-0.md", "title": doc, "header_path": "", "start_line": start, "end_line": end,
                "is_code": False, "keywords": [], "prompt_hashes": [], "promotion_level": "standard", "type": None, "tags": []}
               for doc, start, end in rows]
    positions: dict[str, int] = {}
    previous = None
    for record in records:  # a document run restarts its positions (pack numbers chunks within a run)
        positions[record["document"]] = positions.get(record["document"], -1) + 1 if previous == record["document"] else 0
        previous = record["document"]
        i = positions[record["document"]]
        record.update(index=i, path=f"t/_chunks/{record['document']}-{i}.md")
    assert unpack(pack(records, ["t"] * len(records)), ["t"] * len(records)) == records


def source_lines(site: Path, source: str, start: int, end: int) -> str:
    return "\n".join((site / source).read_text(encoding="utf-8").split("\n")[start - 1:end])


def test_every_chunk_cites_the_source_lines_that_hold_its_text(fixture_site):
    site = open_site(fixture_site)
    seen = 0
    for node in site.topics():
        for doc in site.topic(node).documents:
            for chunk in site.read_all(list(doc.items)):
                ref = chunk.ref
                assert 1 <= ref.start_line <= ref.end_line
                span = source_lines(fixture_site, ref.source, ref.start_line, ref.end_line)
                # a chunk is its heading context then exactly its span of the source: those lines
                assert span.strip() and chunk.text.rstrip().endswith(span.strip()), (ref.path, span)
                seen += 1
    assert seen >= 17


def test_search_hits_carry_the_same_citation_on_every_path(fixture_site):
    site = open_site(fixture_site)
    walked = {(c.source, c.index): c for n in site.topics() for d in site.topic(n).documents for c in d.items}
    paths = 0
    for method in ("lexical", "hybrid", "auto", "keyword", "embedding"):
        for hit in site.search("stripe order vectors cached", 5, method=method, embedder=HashingEmbedder()):
            ref = walked[(hit.source, hit.chunk.index)]
            assert hit.chunk.citation() == ref.citation() and hit.chunk.start_line is not None
            assert hit.to_dict()["url"] == "/" + ref.path and hit.to_dict()["start_line"] == ref.start_line
            paths += 1
    assert paths >= 15


def test_public_urls_resolve_on_the_served_site(served_site):
    import urllib.request

    site = open_site(served_site.url)
    hits = site.search("stripe order", 4, method="lexical")
    assert hits and site.site_url == served_site.url  # a "/" site read over HTTP: absolute against where it is read
    for hit in hits:
        ref = hit.chunk
        assert ref.url.startswith(served_site.url)
        with urllib.request.urlopen(ref.url) as response:
            assert response.read().decode("utf-8") == site.read(ref).text
        page, _, fragment = ref.section_url.partition("#")
        assert page == served_site.url
        params = dict(part.split("=", 1) for part in fragment.split("&"))
        assert {k: unquote(v) for k, v in params.items()} == {"topic": ref.topic, "doc": ref.document, "chunk": str(ref.index)}
        with urllib.request.urlopen(page) as response:
            assert b"<html" in response.read().lower()  # the search page that shows the section


def test_an_absolute_base_url_gives_absolute_citations(site_copy):
    copy = site_copy
    root = copy / "index.json"
    doc = orjson.loads(root.read_bytes())
    doc["_links"]["self"]["href"] = "https://example.org/docs/index.json"
    root.write_bytes(orjson.dumps(doc))
    meta = copy / "_search" / "records.json"
    held = orjson.loads(meta.read_bytes())
    held["meta"]["base_url"] = "https://example.org/docs/"
    meta.write_bytes(orjson.dumps(held))
    hit = open_site(copy).search("stripe order", 1, method="lexical")[0]
    assert hit.chunk.url == "https://example.org/docs/" + hit.chunk.path
    assert hit.chunk.section_url.startswith("https://example.org/docs/#topic=")


@pytest.mark.parametrize("bad", [0, -1, "3", 2.5])
def test_a_bad_line_number_in_a_document_resource_names_the_file_and_field(site_copy, bad):
    from pipeline.siteformat.readerrors import CorruptIndex

    resource = site_copy / "handbook" / "_index" / "alpha.doc.json"  # index format 2: its chunk items
    doc = orjson.loads(resource.read_bytes())
    doc["items"][2]["start_line"] = bad
    resource.write_bytes(orjson.dumps(doc))
    with pytest.raises(CorruptIndex, match=r"items\[2\]\.start_line") as info:
        open_site(site_copy).topic("handbook")
    assert info.value.url.endswith("handbook/_index/alpha.doc.json")
