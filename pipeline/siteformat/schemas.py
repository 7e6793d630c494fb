"""Where the published site's JSON Schemas live: ``SITE/_schema/<file>``, copied from the ones
shipped in ``pipeline/schemas/``; every index file's ``describedby`` link names one of them."""

from __future__ import annotations

from importlib import resources

SCHEMA_DIR = "_schema"  # "_": not a node of the tree, like every generated folder
SCHEMA_FILES = {
    "root": "root.schema.json",
    "section": "section.schema.json",
    "topic": "topic.schema.json",
    "page": "page.schema.json",  # a listing's pages after index.json
    "document": "document.schema.json",  # every page of a document resource
}


def schema_href(base_url: str, schema: str) -> str:
    """Absolute link to the schema of kind ``schema`` (a key of SCHEMA_FILES) under ``base_url``."""
    return f"{base_url}{SCHEMA_DIR}/{SCHEMA_FILES[schema]}"


def schema_texts() -> dict[str, bytes]:
    """The shipped JSON Schemas (``pipeline/schemas/*.json``) by file name."""
    folder = resources.files("pipeline") / "schemas"
    return {entry.name: entry.read_bytes() for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".json")}
