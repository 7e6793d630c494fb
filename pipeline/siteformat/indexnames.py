"""Where the index stage's files live, and the format's version and budgets (no I/O).

Every node directory has ``index.json``: the first page of its listing (its folders, then its
documents). Everything else the index stage writes for the directory is in its ``_index/``
folder (hidden: no node of the tree, like ``_chunks/``), owned by this stage alone:

- ``_index/page-<p>.json``: page ``p`` (2, 3, ...) of the listing;
- ``_index/<key>.doc.json``: the resource of document ``key`` (its stripe orders, every chunk
  item and, for a vault note, the links its author wrote both ways), and
  ``_index/<key>.doc-<p>.json`` its page ``p`` when it needs more than one.

Publish adds the topic's vector pages after the first, ``_index/embeddings-<p>.bin``
(``vectors.page_name``), which the index stage leaves alone. No two names collide: a document
resource ends in ``.doc.json`` or ``.doc-<digits>.json``, a listing page is ``page-<digits>.json``
(no ``.doc``), a vector page ends in ``.bin``, and a key holds no ``/``.
"""

from __future__ import annotations

import re

INDEX_VERSION = 2
"""``index_version`` of every index file: 2 since documents moved to their own resources and
listings were paged (1, implicit: one index.json per directory holding every chunk item)."""

INDEX_DIR = "_index"

PAGE_BYTES = 30_000
"""Largest page (bytes of compact JSON) the pager fills; the reader's budget is 32 kB (~8k
tokens): the margin covers a page whose single entry is larger than its share. Only a page
holding a single entry bigger than this exceeds it."""

LISTING_ENTRIES = 32
"""Most entries (folders and documents) on one listing page: pages then break by count, not by
bytes, so an edit that changes an entry's size moves no later page boundary (~15 kB a page on
FastAPI's docs)."""

ORDER_BYTES = 8_000
"""Most bytes of stripe-order numbers on one page of a document resource (both orders): a
longer order continues on the next pages (a document of ~700 chunks or more)."""

LINK_BYTES = 8_000
"""Most bytes of a vault note's authored ``links`` and ``backlinks`` on one page of its document
resource (half each): a note hundreds of notes link to lists the rest on the next pages, as a
long stripe order does (~50 links of each kind a page)."""

SAMPLE_ITEMS = 3
"""Chunks of a document's reading order its listing entry names (``sample``), so "index.json ->
the first chunks of a document" needs no document resource for up to this many."""

_PAGE = re.compile(r"page-([1-9][0-9]*)\.json")


def listing_page(page: int) -> str:
    """Page ``page`` (from 1) of a directory's listing, relative to the directory."""
    return "index.json" if page == 1 else f"{INDEX_DIR}/page-{page}.json"


def document_page(key: str, page: int = 1) -> str:
    """Page ``page`` (from 1) of document ``key``'s resource, relative to its directory."""
    return f"{INDEX_DIR}/{key}.doc.json" if page == 1 else f"{INDEX_DIR}/{key}.doc-{page}.json"


DEFAULT_MAX_DISTANCE = 14
"""The Hamming radius within which a query's SimHash matches a chunk's prompt hash, when an
``index.json`` publishes none (``prompt_matching.max_distance``): the spec stage's default
(``topicspec.prompts.PromptPolicy``) and every reader's."""

DOCUMENT_TEMPLATE = "{key}.doc.json"
"""``document_page(key)``'s name in ``INDEX_DIR`` as an RFC 6570 template: ``{key}`` expands
percent-encoded as ``hrefs.quote_path`` encodes a name without ``/``."""


def is_listing_page(name: str) -> bool:
    """True for the name (in ``_index/``) of a listing page after the first."""
    return _PAGE.fullmatch(name) is not None and name != "page-1.json"
