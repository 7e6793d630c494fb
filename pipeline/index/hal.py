"""HAL+JSON documents for a site directory (pure: data in, dict out).

Links: ``self`` and ``parent`` are absolute under ``base_url``; chunk ``href``s are relative to
the index.json that lists them (seed 001), so a site can be moved as a folder.
"""

from __future__ import annotations

from pipeline.index.stripes import stripe_order


def index_href(base_url: str, dir_rel: str) -> str:
    return f"{base_url}{dir_rel}/index.json" if dir_rel else f"{base_url}index.json"


def parent_rel(dir_rel: str) -> str | None:
    if not dir_rel:
        return None
    return dir_rel.rsplit("/", 1)[0] if "/" in dir_rel else ""


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
    if technical is not None:
        out["baseline_technical"] = technical
    out["stripe_order"] = stripe_order([i["similarity_conceptual"] for i in items], {spec["baseline_conceptual"]})
    if technical is not None:
        out["stripe_order_technical"] = stripe_order(
            [i["similarity_technical"] for i in items], {spec["baseline_conceptual"], technical}
        )
    out["items"] = items
    return out


def directory_index(
    *,
    base_url: str,
    dir_rel: str,
    title: str,
    children: list[dict],
    specs: list[dict],
    model: str | None,
) -> dict:
    """The index.json of one directory. ``children``: ``{"id", "title", "documents"}`` per subdirectory."""
    links = {"self": {"href": index_href(base_url, dir_rel)}}
    parent = parent_rel(dir_rel)
    if parent is not None:
        links["parent"] = {"href": index_href(base_url, parent)}
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
    doc["_embedded"] = {
        "topics": topics,
        "chunks": {spec["source"].removesuffix(".md"): chunk_set(spec) for spec in specs},
    }
    return doc
