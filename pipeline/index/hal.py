"""HAL+JSON documents for a site directory (pure: data in, dict out).

Links: ``self``, ``parent`` and ``describedby`` (the JSON Schema of the document, under
``_schema/``) are absolute under ``base_url``; chunk ``href``s — items' and their ``_links``
``prev``/``next``/``related`` — are relative to the index.json that lists them (seed 001), so a
site can be moved as a folder.
"""

from __future__ import annotations

from pipeline.index.stripes import stripe_order
from pipeline.site.vectors import FILE_NAME as EMBEDDINGS_FILE
from pipeline.site.tree import document_key


def site_href(base_url: str, dir_rel: str, name: str) -> str:
    """Absolute link to file ``name`` of directory ``dir_rel``."""
    return f"{base_url}{dir_rel}/{name}" if dir_rel else f"{base_url}{name}"


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


def _link(item: dict) -> dict:
    return {"href": item["href"], "title": item["title"]}


def chunk_item(items: list[dict], i: int) -> dict:
    """Item ``i`` of a document as published: the spec item with its ``related`` list moved into
    HAL ``_links`` (``prev``/``next`` in document order, ``related`` by similarity)."""
    item = {k: v for k, v in items[i].items() if k != "related"}
    links: dict = {}
    if i > 0:
        links["prev"] = _link(items[i - 1])
    if i + 1 < len(items):
        links["next"] = _link(items[i + 1])
    if "related" in items[i]:
        links["related"] = [dict(r) for r in items[i]["related"]]
    item["_links"] = links
    return item


def chunk_set(spec: dict) -> dict:
    """``_embedded.chunks.<stem>`` for one document of a topic spec."""
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
    out["items"] = [chunk_item(items, i) for i in range(len(items))]
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
        "chunks": {document_key(spec["source"]): chunk_set(spec) for spec in specs},
    }
    return doc
