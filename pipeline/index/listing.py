"""A directory's listing read back from a built site on disk (the site's own later stages:
``llms.txt``; readers over HTTP use ``pipeline.client``)."""

from __future__ import annotations

from pathlib import Path

import orjson

from pipeline.siteformat.indexnames import listing_page


def read_listing(site: Path, dir_rel: str) -> tuple[dict, list[dict]] | None:
    """(the directory's ``index.json``, its document entries over every page), or None when it
    has no ``index.json``."""
    folder = Path(site) / dir_rel
    try:
        first = orjson.loads((folder / listing_page(1)).read_bytes())
    except FileNotFoundError:
        return None
    entries = list(first.get("_embedded", {}).get("documents") or [])
    pages = first.get("pages") if isinstance(first.get("pages"), int) else 1
    for number in range(2, pages + 1):
        page = orjson.loads((folder / listing_page(number)).read_bytes())
        entries += page.get("_embedded", {}).get("documents") or []
    return first, entries
