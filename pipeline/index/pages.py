"""The index's files, cut into pages within a byte budget (pure: specs in, ``{name: bytes}`` out)
by the format's pager (``siteformat/paging.py``, which also pages a document's chunk manifest).

Guarantees: every file is compact JSON of at most ``PAGE_BYTES`` bytes unless one entry alone
(a folder, a document's listing entry, a chunk item, a manifest record) is bigger, and then that
page holds only it; pages are consecutive slices (``pack``), linked with HAL's ``first``/
``prev``/``next`` (and ``last`` from the first page); a listing page holds at most
``LISTING_ENTRIES`` entries, so its boundaries move only when entries are added or removed before
it. The same inputs give the same bytes.
"""

from __future__ import annotations

import orjson

from pipeline.index import hal
from pipeline.siteformat.indexnames import INDEX_VERSION, LINK_BYTES, LISTING_ENTRIES, ORDER_BYTES, PAGE_BYTES, document_page, listing_page
from pipeline.siteformat.paging import cut_runs, dumps, json_cost, pack, paged_files, paging_links, worst_paging_links
from pipeline.siteformat.schemas import schema_href
from pipeline.siteformat.tree import document_key


def listing_files(
    *, base_url: str, dir_rel: str, fields: dict, links: dict, topics: list[dict], documents: list[dict],
) -> dict[str, bytes]:
    """A directory's listing: ``index.json`` (``fields``, ``links`` and the first entries) and
    ``_index/page-<p>.json`` for the rest, ``topics`` (``hal.topic_ref``) before ``documents``
    (``hal.document_entry``)."""
    raw = [dumps(entry) for entry in (*topics, *documents)]
    costs = [len(e) + 1 for e in raw]
    encoded = [orjson.Fragment(e) for e in raw]
    name = lambda p: listing_page(p)  # noqa: E731
    worst = worst_paging_links(base_url, dir_rel, name, len(encoded) + 1)
    first = {**fields, "page": 1, "pages": 10**9, "_links": {**links, **worst}, "_embedded": {"topics": [], "documents": []}}
    rest = _later_listing(base_url, dir_rel, links, worst, [], [])
    sizes = (len(dumps(first)), len(dumps(rest)))
    slices = pack(costs, lambda p: PAGE_BYTES - sizes[p > 0], LISTING_ENTRIES)
    pages = len(slices)
    out = {}
    for number, (start, end) in enumerate(slices, 1):
        paging = paging_links(base_url, dir_rel, name, number, pages)
        split = min(max(len(topics), start), end)  # entries before it are folders
        page_topics, page_documents = encoded[start:split], encoded[split:end]
        if number == 1:
            own = {"self": paging.pop("self")}
            doc = {**fields, "page": 1, "pages": pages, "_links": {**own, **paging, **{k: v for k, v in links.items() if k != "self"}},
                   "_embedded": {"topics": page_topics, "documents": page_documents}}
        else:
            doc = _later_listing(base_url, dir_rel, links, paging, page_topics, page_documents, number)
        out[listing_page(number)] = dumps(doc)
    return out


def _later_listing(base_url: str, dir_rel: str, links: dict, paging: dict, topics: list, documents: list,
                   number: int = 10**9) -> dict:
    """Page ``number`` (2, 3, ...) of a listing: the directory's id, its paging links, ``parent``
    as on ``index.json`` and its own schema."""
    page_links = dict(paging)
    if "parent" in links:
        page_links["parent"] = links["parent"]
    page_links["describedby"] = {"href": schema_href(base_url, "page")}
    return {"index_version": INDEX_VERSION, "id": dir_rel, "page": number, "_links": page_links,
            "_embedded": {"topics": topics, "documents": documents}}


def document_files(spec: dict, base_url: str, dir_rel: str, orders: tuple | None = None) -> dict[str, bytes]:
    """A document's resource: ``_index/<key>.doc.json`` and, when it needs more, pages
    ``_index/<key>.doc-<p>.json``. Its items come in ``hal.page_order`` (the overview, then the
    conceptual stripe order), so its first page is a representative sample; its stripe orders
    are on the first page (cut into runs over the next pages only past ``ORDER_BYTES``), and so
    are a vault note's ``_links.links`` and ``_links.backlinks`` (past ``LINK_BYTES``: a note
    thousands link to lists them over as many pages as they need, its first page their counts).
    ``orders``: ``hal.orders(spec)`` when the caller has them."""
    key = document_key(spec["source"])
    conceptual, technical = orders if orders is not None else hal.orders(spec)
    items = spec["items"]
    order = hal.page_order(spec, conceptual)
    published = [hal.chunk_item(items, i, base_url, dir_rel) for i in order]
    raw = [dumps(item) for item in published]
    # ``name``: HAL's secondary key, the chunk's index (``item[name:3]`` selects chunk 3)
    raw_links = [dumps({"href": item["_links"]["self"]["href"], "name": str(item["index"])}) for item in published]
    costs = [len(e) + len(link) + 2 for e, link in zip(raw, raw_links)]
    encoded, links = [orjson.Fragment(e) for e in raw], [orjson.Fragment(link) for link in raw_links]
    runs = {"stripe_order": cut_runs(conceptual, ORDER_BYTES // 2),
            "stripe_order_technical": cut_runs(technical, ORDER_BYTES // 2)}
    authored = {rel: cut_runs(found, LINK_BYTES // 2, json_cost) for rel, found in hal.authored_links(spec, base_url).items()}
    shared = hal.document_links(spec, base_url, dir_rel)
    name = lambda p: document_page(key, p)  # noqa: E731
    longest = max(len(segments) for segments in (*runs.values(), *authored.values()))

    def page(number: int, pages: int, paging: dict, item_slice: slice) -> dict:
        doc = document_fields(spec, dir_rel, number, pages)
        for field, segments in runs.items():
            if number <= len(segments) and (number == 1 or segments[number - 1]):
                doc[field] = segments[number - 1]
        doc["_links"] = {**paging, **shared}
        for rel, segments in authored.items():  # on the first page always (maybe empty), later where a run is
            if number <= len(segments) and (number == 1 or segments[number - 1]):
                doc["_links"][rel] = segments[number - 1]
        doc["_links"]["item"] = links[item_slice]
        doc["items"] = encoded[item_slice]
        return doc

    return paged_files(base_url=base_url, dir_rel=dir_rel, name=name, costs=costs, page=page, least=longest)


def document_fields(spec: dict, dir_rel: str, number: int, pages: int) -> dict:
    """The fields of page ``number`` of ``pages`` of a document resource before its orders and
    links (the document's own fields and ``pages`` on the first only)."""
    if number == 1:
        return {**hal.document_fields(spec, dir_rel), "page": 1, "pages": pages}
    return {"index_version": INDEX_VERSION, "topic": dir_rel, "key": document_key(spec["source"]), "page": number}
