"""pipeline/index/pages.py: the index cut into pages within a byte budget, linked as HAL pages,
every entry once and in order (pure: specs in, bytes out)."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.index import hal, pages
from pipeline.siteformat import paging
from pipeline.siteformat.indexnames import LISTING_ENTRIES, PAGE_BYTES, document_page, listing_page


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=500), max_size=60), st.integers(min_value=1, max_value=2000),
       st.one_of(st.none(), st.integers(min_value=1, max_value=7)))
def test_pack_cuts_consecutive_pages_within_the_room(costs, room, most):
    slices = paging.pack(costs, lambda p: room, most)
    assert slices[0][0] == 0 and slices[-1][1] == len(costs)
    assert all(a[1] == b[0] for a, b in zip(slices, slices[1:]))  # consecutive, nothing skipped or repeated
    for start, end in slices:
        assert end > start or not costs  # a page always takes one entry
        assert sum(costs[start:end]) <= room or end - start == 1  # over the room only alone
        assert most is None or end - start <= most
        if end < len(costs) and (most is None or end - start < most):
            assert sum(costs[start:end + 1]) > room  # filled: the next entry would not fit


def spec(key: str, count: int, *, technical: bool = False, words: int = 12) -> dict:
    """A document spec as the spec stage writes it, with ``count`` chunks."""
    items = []
    for i in range(count):
        item = {
            "index": i, "href": f"_chunks/{key}-{i}.md", "title": f"Part {i} " + "word " * words, "header_path": f"## Part {i}",
            "is_code": False, "token_count": 100, "start_line": 1 + 3 * i, "end_line": 3 + 3 * i,
            "similarity_conceptual": round(1 - (i * 7919 % 101) / 101, 4), "keywords": [{"name": "part", "score": 5}],
            "promotion_level": "standard", "prompt_hashes": [], "prompt_hashes_hex": [], "position": f"{i + 1} of {count}",
            "related": [{"href": f"_chunks/{key}-{(i + 1) % count}.md", "title": "Next", "similarity": 0.5}],
        }
        if technical:
            item["similarity_technical"] = round((i * 104729 % 97) / 97, 4)
        items.append(item)
    out = {"source": f"{key}.md", "title": key.title(), "document_id": key, "strategy": "markdown-256", "count": count,
           "baseline_conceptual": 0, "promotion_level": "standard", "items": items}
    if technical:
        out["baseline_technical"] = 1
    return out


def read_pages(files: dict[str, bytes], key: str) -> list[dict]:
    first = orjson.loads(files[document_page(key)])
    return [first] + [orjson.loads(files[document_page(key, p)]) for p in range(2, first["pages"] + 1)]


def test_a_long_document_is_paged_within_the_budget_overview_first_then_its_stripe_order():
    doc = spec("long", 200, technical=True)
    files = pages.document_files(doc, "/kb/", "guide")
    assert all(len(data) <= PAGE_BYTES for data in files.values())
    read = read_pages(files, "long")
    assert len(read) == len(files) >= 5
    conceptual, technical = hal.orders(doc)
    # items: the overview, then the conceptual stripe order, over the pages in order
    assert [i["index"] for page in read for i in page["items"]] == [0, *conceptual]
    assert read[0]["stripe_order"] == conceptual and read[0]["stripe_order_technical"] == technical  # whole on page 1
    for number, page in enumerate(read, 1):
        links = page["_links"]
        assert links["self"]["href"] == f"/kb/guide/{document_page('long', number)}"
        assert ("prev" in links) == ("first" in links) == (number > 1) and ("next" in links) == (number < len(read))
        assert [link["name"] for link in links["item"]] == [str(i["index"]) for i in page["items"]]
        assert links["up"]["href"] == "/kb/guide/index.json"
    assert read[0]["_links"]["last"]["href"] == f"/kb/guide/{document_page('long', len(read))}"


def test_a_stripe_order_longer_than_its_share_continues_on_the_next_pages(monkeypatch):
    monkeypatch.setattr(pages, "ORDER_BYTES", 60)
    doc = spec("orders", 40, technical=True, words=0)
    read = read_pages(pages.document_files(doc, "/", ""), "orders")
    conceptual, technical = hal.orders(doc)
    assert len(read) > 1 and len(read[0]["stripe_order"]) < len(conceptual)
    assert [i for page in read for i in page.get("stripe_order", [])] == conceptual
    assert [i for page in read for i in page.get("stripe_order_technical", [])] == technical


def test_a_listing_pages_folders_then_documents_by_count_and_links_them():
    children = [{"id": f"f{i}", "title": f"F{i}", "documents": 1} for i in range(5)]
    specs = [spec(f"d{i:03d}", 3) for i in range(80)]
    fields, links = hal.directory_fields(base_url="/", dir_rel="", title="Root", topics=5, documents=80, model="m", prompt_matching=None)
    files = pages.listing_files(
        base_url="/", dir_rel="", fields=fields, links=links, topics=[hal.topic_ref(c, "/") for c in children],
        documents=[hal.document_entry(s, hal.orders(s)[0], "/", "") for s in specs],
    )
    read = [orjson.loads(files[listing_page(p)]) for p in range(1, len(files) + 1)]
    assert read[0]["pages"] == len(read) == -(-85 // LISTING_ENTRIES)
    assert all(len(p["_embedded"]["topics"]) + len(p["_embedded"]["documents"]) <= LISTING_ENTRIES for p in read)
    assert [t["id"] for p in read for t in p["_embedded"]["topics"]] == [c["id"] for c in children]
    assert [d["key"] for p in read for d in p["_embedded"]["documents"]] == [s["source"][:-3] for s in specs]
    assert read[0]["_links"]["next"]["href"] == "/_index/page-2.json" and "first" not in read[0]["_links"]
    assert read[1]["_links"]["first"]["href"] == "/index.json" and read[1]["_links"]["prev"]["href"] == "/index.json"
    assert "next" not in read[-1]["_links"] and all(len(data) <= PAGE_BYTES for data in files.values())
    assert read[0]["_links"]["document"] == {"href": "/_index/{key}.doc.json", "templated": True}


def test_a_documents_entry_names_the_first_chunks_of_its_reading_order():
    doc = spec("x", 12)
    conceptual, _ = hal.orders(doc)
    entry = hal.document_entry(doc, conceptual, "/", "t")
    assert [s["index"] for s in entry["sample"]] == conceptual[:3]
    assert [s["href"] for s in entry["sample"]] == [f"_chunks/x-{i}.md" for i in conceptual[:3]]
    assert entry["_links"]["self"]["href"] == "/t/_index/x.doc.json"
    one = spec("y", 1)
    assert [s["index"] for s in hal.document_entry(one, hal.orders(one)[0], "/", "t")["sample"]] == [0]  # only the baseline


def noted(doc: dict, links: int, backlinks: int, name_words: int = 6) -> dict:
    """``doc`` as a vault note's spec: ``links`` documents it links to, ``backlinks`` linking to it."""
    def other(i: int) -> dict:
        return {"source": f"notes/{'long ' * name_words}name {i:05d}.md", "title": f"Note {i}"}

    return {**doc, "links": [other(i) for i in range(links)], "backlinks": [other(i) for i in range(backlinks)]}


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=60), st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=1500),
       st.booleans())
def test_a_notes_authored_links_continue_over_its_pages_every_one_once_within_the_budget(count, links, backlinks, technical):
    doc = noted(spec("hub", count, technical=technical), links, backlinks)
    files = pages.document_files(doc, "/", "t")
    assert all(len(data) <= PAGE_BYTES for data in files.values())
    read = read_pages(files, "hub")
    assert (read[0]["links"], read[0]["backlinks"]) == (links, backlinks)  # the counts, on the first page only
    assert all("links" not in page and "backlinks" not in page for page in read[1:])
    authored = hal.authored_links(doc, "/")
    for rel in ("links", "backlinks"):
        assert rel in read[0]["_links"]  # on the first page even when empty
        assert [link for page in read for link in page["_links"].get(rel, [])] == authored[rel]
    conceptual, _ = hal.orders(doc)
    assert [i["index"] for page in read for i in page["items"]] == [0, *conceptual]  # the items as without links


def test_an_authored_link_leads_to_the_other_documents_resource():
    doc = {**spec("a", 2), "links": [{"source": "b c/d e.md", "title": "D"}], "backlinks": [{"source": "top.md", "title": "Top"}]}
    assert hal.authored_links(doc, "/kb/") == {"links": [{"href": "/kb/b%20c/_index/d%20e.doc.json", "title": "D"}],
                                              "backlinks": [{"href": "/kb/_index/top.doc.json", "title": "Top"}]}
    assert hal.authored_links(spec("plain", 2), "/") == {}  # not a vault note: no such links, no counts
    first = orjson.loads(pages.document_files(spec("plain", 2), "/", "")[document_page("plain")])
    assert "links" not in first and "backlinks" not in first["_links"]
