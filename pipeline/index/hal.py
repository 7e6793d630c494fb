"""HAL+JSON pieces of the index (pure: data in, dicts out): links, chunk items, a document's
listing entry and the fields of its resource. ``pages.py`` cuts them into files.

Links: every ``_links`` href is absolute under ``base_url`` (a generic HAL client resolves hrefs
against its start URL, as traverson does), through the one encoder ``hrefs.quote_path``. A
chunk's data ``href`` is relative to its topic's directory (where its ``index.json`` is), in
the listing's ``sample`` and in the document resource alike (seed 001: ``_chunks/x-3.md``).
"""

from __future__ import annotations

from pipeline.index.stripes import stripe_order
from pipeline.siteformat.hrefs import quote_item, quote_path, site_href
from pipeline.siteformat.indexnames import DOCUMENT_TEMPLATE, INDEX_DIR, INDEX_VERSION, SAMPLE_ITEMS, document_page
from pipeline.siteformat.schemas import schema_href
from pipeline.siteformat.tree import CHUNKS_DIR, document_key, manifest_name
from pipeline.siteformat.vectors import FILE_NAME as EMBEDDINGS_FILE


def index_href(base_url: str, dir_rel: str) -> str:
    return site_href(base_url, dir_rel, "index.json")


def parent_rel(dir_rel: str) -> str | None:
    if not dir_rel:
        return None
    return dir_rel.rsplit("/", 1)[0] if "/" in dir_rel else ""


def kind(dir_rel: str, has_documents: bool) -> str:
    """``root`` (the site's top), ``topic`` (a directory with chunked documents) or ``section``."""
    if not dir_rel:
        return "root"
    return "topic" if has_documents else "section"


def _link(base_url: str, dir_rel: str, item: dict) -> dict:
    return {"href": site_href(base_url, dir_rel, item["href"]), "title": item["title"]}


def chunk_item(items: list[dict], i: int, base_url: str = "/", dir_rel: str = "") -> dict:
    """Item ``i`` of a document as published: the spec item with HAL ``_links``: ``self`` (its
    chunk file), ``prev``/``next`` in document order and ``related`` (moved from the spec item),
    all absolute under ``base_url`` like every ``_links`` href; ``href`` stays relative."""
    item = {k: v for k, v in quote_item(items[i]).items() if k != "related"}  # data href: quoted, relative
    links: dict = {"self": {"href": site_href(base_url, dir_rel, items[i]["href"])}}
    if i > 0:
        links["prev"] = _link(base_url, dir_rel, items[i - 1])
    if i + 1 < len(items):
        links["next"] = _link(base_url, dir_rel, items[i + 1])
    if "related" in items[i]:
        links["related"] = [{**r, "href": site_href(base_url, dir_rel, r["href"])} for r in items[i]["related"]]
    item["_links"] = links
    return item


def orders(spec: dict) -> tuple[list[int], list[int] | None]:
    """(the conceptual stripe order, the technical one or None) of a document spec: every chunk
    but the conceptual baseline, resp. but both baselines (``stripes.stripe_order``)."""
    items = spec["items"]
    conceptual = stripe_order([i["similarity_conceptual"] for i in items], {spec["baseline_conceptual"]})
    technical = spec.get("baseline_technical")
    if technical is None:
        return conceptual, None
    return conceptual, stripe_order([i["similarity_technical"] for i in items], {spec["baseline_conceptual"], technical})


def reading_order(count: int, stripe: list[int]) -> list[int]:
    """Chunk indexes in ``stripe`` order, then every chunk it leaves out (the baselines),
    ascending: what a sampler reads first (``client.records.Document.reading_order``)."""
    listed = set(stripe)
    return [*stripe, *(i for i in range(count) if i not in listed)]


def page_order(spec: dict, conceptual: list[int]) -> list[int]:
    """The order of a document resource's items: the overview (the conceptual baseline), then
    the conceptual stripe order. Every chunk once; the first page is a representative sample."""
    first = spec["baseline_conceptual"]
    return [first, *(i for i in conceptual if i != first)]


def document_entry(spec: dict, conceptual: list[int], base_url: str, dir_rel: str) -> dict:
    """A document in its directory's listing (``_embedded.documents[]``): key, title, source,
    chunk count, level, the first ``SAMPLE_ITEMS`` chunks of its reading order (``sample``:
    index, relative href, title) and ``_links.self``, its resource."""
    key = document_key(spec["source"])
    items = spec["items"]
    entry = {"key": key, "title": spec["title"], "source": spec["source"], "count": spec["count"]}
    if "promotion_level" in spec:
        entry["promotion_level"] = spec["promotion_level"]
    entry["sample"] = [
        {"index": i, "href": quote_path(items[i]["href"]), "title": items[i]["title"]}
        for i in reading_order(len(items), conceptual)[:SAMPLE_ITEMS]
    ]
    entry["_links"] = {"self": {"href": site_href(base_url, dir_rel, document_page(key))}}
    return entry


AUTHORED = ("links", "backlinks")
"""A vault note's links as its author wrote them, both ways (``vault/graph.py``): the documents it
links to and those linking to it, beside each chunk's computed ``related``."""


def resource_href(base_url: str, source: str) -> str:
    """Absolute link to the resource (first page) of the document at site path ``source``."""
    folder, name = source.rsplit("/", 1) if "/" in source else ("", source)
    return site_href(base_url, folder, document_page(document_key(name)))


def authored_links(spec: dict, base_url: str) -> dict[str, list[dict]]:
    """``{"links": [...], "backlinks": [...]}`` of a vault note's spec (``{}`` for any other
    document), in the spec's order: HAL links to the other documents' resources (a reader
    following one lands on a page within budget, as from a listing; its ``alternate`` is the
    source file). ``pages.py`` cuts them into runs over the resource's pages."""
    return {rel: [{"href": resource_href(base_url, link["source"]), "title": link["title"]} for link in spec[rel]]
            for rel in AUTHORED if rel in spec}


def document_fields(spec: dict, dir_rel: str) -> dict:
    """The first page's fields of a document resource, before its stripe orders, links and items."""
    out = {
        "index_version": INDEX_VERSION,
        "topic": dir_rel,
        "key": document_key(spec["source"]),
        "source": spec["source"],
        "title": spec["title"],
        "strategy": spec["strategy"],
        "count": spec["count"],
        "baseline_conceptual": spec["baseline_conceptual"],
    }
    if spec.get("baseline_technical") is not None:
        out["baseline_technical"] = spec["baseline_technical"]
    if "promotion_level" in spec:  # the document's level; each item repeats it
        out["promotion_level"] = spec["promotion_level"]
    for rel in AUTHORED:  # a vault note's: how many (its pages' ``_links.<rel>`` list them)
        if rel in spec:
            out[rel] = len(spec[rel])
    return out


def document_links(spec: dict, base_url: str, dir_rel: str) -> dict:
    """The links every page of a document resource has besides its own and its paging ones:
    ``up`` (the topic's ``index.json``), ``describedby``, ``alternate`` (the source file) and
    ``manifest`` (its chunk records, ``_chunks/<key>.manifest.json``)."""
    key = document_key(spec["source"])
    return {
        "up": {"href": index_href(base_url, dir_rel)},
        "describedby": {"href": schema_href(base_url, "document")},
        "alternate": {"href": site_href(base_url, dir_rel, spec["source"]), "type": "text/markdown", "title": spec["title"]},
        "manifest": {"href": site_href(base_url, dir_rel, f"{CHUNKS_DIR}/{manifest_name(key)}")},
    }


def topic_ref(child: dict, base_url: str) -> dict:
    """A child folder in its parent's listing (``_embedded.topics[]``)."""
    return {
        "id": child["id"],
        "title": child["title"],
        "documents": child["documents"],
        "_links": {"self": {"href": index_href(base_url, child["id"])}},
    }


def directory_fields(
    *, base_url: str, dir_rel: str, title: str, topics: int, documents: int, model: str | None,
    prompt_matching: dict | None,
) -> tuple[dict, dict]:
    """(the fields of a directory's ``index.json`` before ``_links``, its ``_links`` without
    paging). ``prompt_matching`` (the spec's policy: algorithm, max_distance, ...) is given when
    some chunk of the directory carries prompt hashes, so readers know how to match queries."""
    fields: dict = {"index_version": INDEX_VERSION, "id": dir_rel, "title": title}
    if model:
        fields["model"] = model
    if prompt_matching:
        fields["prompt_matching"] = prompt_matching
    fields["topics"] = topics
    fields["documents"] = documents
    links = {"self": {"href": index_href(base_url, dir_rel)}}
    parent = parent_rel(dir_rel)
    if parent is not None:
        links["parent"] = {"href": index_href(base_url, parent)}
    links["describedby"] = {"href": schema_href(base_url, kind(dir_rel, documents > 0))}
    if documents:  # the publish stage writes every topic's chunk vectors beside its index.json
        links["embeddings"] = {"href": site_href(base_url, dir_rel, EMBEDDINGS_FILE)}
        # any document's resource by key, wherever the listing pages it (RFC 6570)
        links["document"] = {"href": f"{site_href(base_url, dir_rel, INDEX_DIR)}/{DOCUMENT_TEMPLATE}", "templated": True}
    return fields, links
