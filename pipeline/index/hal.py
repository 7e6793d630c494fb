"""HAL+JSON documents for a site directory (pure: data in, dict out).

Links: every ``_links`` href — ``self``, ``parent``, ``describedby`` (the JSON Schema of the
document, under ``_schema/``), a chunk item's ``self``/``prev``/``next``/``related``, a
document's ``self``/``first``/``manifest``/``item`` — is absolute under ``base_url``, so a
generic HAL client (which resolves hrefs against its start URL, as traverson does) reaches
every chunk. A chunk item's data ``href`` stays relative to the index.json that lists it
(seed 001).
"""

from __future__ import annotations

from pipeline.index.hrefs import quote_item, quote_path
from pipeline.index.stripes import stripe_order
from pipeline.site.vectors import FILE_NAME as EMBEDDINGS_FILE
from pipeline.site.tree import CHUNKS_DIR, document_key, manifest_name


def site_href(base_url: str, dir_rel: str, name: str) -> str:
    """Absolute link to file ``name`` of directory ``dir_rel``."""
    return base_url + quote_path(f"{dir_rel}/{name}" if dir_rel else name)


def index_href(base_url: str, dir_rel: str) -> str:
    return site_href(base_url, dir_rel, "index.json")


def parent_rel(dir_rel: str) -> str | None:
    if not dir_rel:
        return None
    return dir_rel.rsplit("/", 1)[0] if "/" in dir_rel else ""


SCHEMA_DIR = "_schema"  # "_": not a node of the tree, like every generated folder
SCHEMA_FILES = {"root": "root.schema.json", "section": "section.schema.json", "topic": "topic.schema.json"}


def kind(dir_rel: str, specs: list[dict]) -> str:
    """``root`` (the site's top), ``topic`` (a directory with chunked documents) or ``section``."""
    if not dir_rel:
        return "root"
    return "topic" if specs else "section"


def schema_href(base_url: str, dir_rel: str, specs: list[dict]) -> str:
    return f"{base_url}{SCHEMA_DIR}/{SCHEMA_FILES[kind(dir_rel, specs)]}"


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


def document_links(spec: dict, base_url: str = "/", dir_rel: str = "") -> dict:
    """A document's ``_links``: ``self`` (the source file), ``first`` (its chunk 0, the overview)
    and ``manifest`` (its chunk records, ``_chunks/<key>.manifest.json``); a vault note's also
    ``links`` and ``backlinks`` (the documents its author linked to, and those linking to it:
    their source files, beside each chunk's computed ``related``)."""
    first = spec["items"][0]
    links = {
        "self": {"href": site_href(base_url, dir_rel, spec["source"]), "title": spec["title"]},
        "first": _link(base_url, dir_rel, first),
        "manifest": {"href": site_href(base_url, dir_rel, f"{CHUNKS_DIR}/{manifest_name(document_key(spec['source']))}")},
    }
    for rel in ("links", "backlinks"):
        if rel in spec:  # site paths (vault/graph.py)
            links[rel] = [{"href": site_href(base_url, "", link["source"]), "title": link["title"]} for link in spec[rel]]
    return links


def document_ref(spec: dict, base_url: str = "/", dir_rel: str = "") -> dict:
    """``_embedded.documents[]``: a document as a HAL resource a generic client selects by
    ``key`` (``documents[key:setup]``) and leaves by ``item[i]`` (chunk ``i``'s file)."""
    links = document_links(spec, base_url, dir_rel)
    links["item"] = [{"href": site_href(base_url, dir_rel, item["href"])} for item in spec["items"]]
    return {"key": document_key(spec["source"]), "title": spec["title"], "count": spec["count"], "_links": links}


def chunk_set(spec: dict, base_url: str = "/", dir_rel: str = "") -> dict:
    """``_embedded.chunks.<key>`` for one document of a topic spec."""
    items = spec["items"]
    technical = spec.get("baseline_technical")
    out = {
        "source": spec["source"],
        "title": spec["title"],
        "strategy": spec["strategy"],
        "count": spec["count"],
        "baseline_conceptual": spec["baseline_conceptual"],
    }
    if "promotion_level" in spec:  # the document's level; each item repeats it
        out["promotion_level"] = spec["promotion_level"]
    if technical is not None:
        out["baseline_technical"] = technical
    out["stripe_order"] = stripe_order([i["similarity_conceptual"] for i in items], {spec["baseline_conceptual"]})
    if technical is not None:
        out["stripe_order_technical"] = stripe_order(
            [i["similarity_technical"] for i in items], {spec["baseline_conceptual"], technical}
        )
    out["_links"] = document_links(spec, base_url, dir_rel)
    out["items"] = [chunk_item(items, i, base_url, dir_rel) for i in range(len(items))]
    return out


def directory_index(
    *,
    base_url: str,
    dir_rel: str,
    title: str,
    children: list[dict],
    specs: list[dict],
    model: str | None,
    prompt_matching: dict | None = None,
) -> dict:
    """The index.json of one directory. ``children``: ``{"id", "title", "documents"}`` per subdirectory.

    ``prompt_matching`` (the spec's policy: algorithm, max_distance, ...) is published when some
    chunk of the directory carries prompt hashes, so readers know how to match queries.
    """
    links = {"self": {"href": index_href(base_url, dir_rel)}}
    parent = parent_rel(dir_rel)
    if parent is not None:
        links["parent"] = {"href": index_href(base_url, parent)}
    links["describedby"] = {"href": schema_href(base_url, dir_rel, specs)}
    if specs:  # the publish stage writes every topic's chunk vectors beside its index.json
        links["embeddings"] = {"href": site_href(base_url, dir_rel, EMBEDDINGS_FILE)}
    topics = [
        {
            "id": child["id"],
            "title": child["title"],
            "documents": child["documents"],
            "_links": {"self": {"href": index_href(base_url, child["id"])}},
        }
        for child in children
    ]
    doc = {"id": dir_rel, "title": title, "_links": links}
    if model:
        doc["model"] = model
    if prompt_matching and any(item.get("prompt_hashes") for spec in specs for item in spec["items"]):
        doc["prompt_matching"] = prompt_matching
    doc["_embedded"] = {
        "topics": topics,
        "chunks": {document_key(spec["source"]): chunk_set(spec, base_url, dir_rel) for spec in specs},
    }
    if specs:  # the same documents as HAL resources, for generic HAL clients (chunks is a map)
        doc["_embedded"]["documents"] = [document_ref(spec, base_url, dir_rel) for spec in specs]
    return doc
