"""A built site's index files as every reader walks them: the root ``index.json`` checked, each
index file fetched once and kept, hrefs resolved to site-relative paths, folders and documents
found by following links (``IndexWalk``). Shared by the Python client (``pipeline.client.Site``
adds chunk texts, embeddings and search) and the search index's writer, which reads the site it
has just built as a client would (``read_site``), so neither depends on the other.
"""

from __future__ import annotations

import os
import posixpath
import threading
from urllib.parse import unquote, urlsplit

import orjson

from pipeline.siteformat import citations
from pipeline.siteformat.hrefs import base_of, site_relative
from pipeline.siteformat.indexfiles import DocumentPages, check_version
from pipeline.siteformat.localfiles import LocalTransport, Transport, clean_rel
from pipeline.siteformat.readerrors import CorruptIndex, NotASite, NotFound
from pipeline.siteformat.records import Node, TopicIndex, links_href
from pipeline.siteformat.walk import IndexWalk


def read_site(directory: str | os.PathLike) -> "SiteReader":
    """The site built in ``directory``, read from its files (nothing read yet)."""
    return SiteReader(LocalTransport(directory))


class SiteReader(IndexWalk):
    """A pipeline site's index files read through ``transport`` (``Transport``): the root's
    fields, ``nodes()``, ``topics()``, ``topic(node)``, ``document(...)``, ``listing(...)``."""

    def __init__(self, transport: Transport, index: str = "index.json"):
        self.transport = transport
        self._lock = threading.Lock()
        self._docs: dict[str, dict] = {}
        self._topics: dict[str, TopicIndex] = {}
        self._documents: dict[tuple[str, str], DocumentPages] = {}
        self._nodes: list[Node] | None = None
        self.index_path = clean_rel(index) or "index.json"
        self._root_fields: tuple[str, str, str, str | None, str] | None = None
        self._root_lock = threading.Lock()  # not self._lock: _json takes that one

    def _http_root(self) -> str | None:
        """The http(s) URL the site is read from, or None (a directory): the client's to say."""
        return None

    def _root(self) -> tuple[str, str, str, str | None, str]:
        """(base path, root id, title, model, base URL) from the root ``index.json``, fetched and checked
        on first use: a search through ``_search/`` needs none of it, so a cold query costs one
        request fewer. Raises NotASite when it is missing or not a pipeline site's root index."""
        if self._root_fields is not None:
            return self._root_fields
        with self._root_lock:  # threads reading chunks concurrently: one fetch of the root
            if self._root_fields is None:
                self._root_fields = self._read_root()
        return self._root_fields

    def _read_root(self) -> tuple[str, str, str, str | None, str]:
        try:
            root = self._json(self.index_path)
        except NotFound:
            raise NotASite("no index.json here: not a pipeline site", self.transport.locate(self.index_path)) from None
        except CorruptIndex as exc:
            raise NotASite(f"index.json is not a pipeline site index ({exc.message})", exc.url) from None
        self_href = links_href(root, "self") if isinstance(root, dict) else None
        if self_href is None or not isinstance(root.get("_embedded"), dict) or not isinstance(root.get("id", ""), str):
            raise NotASite("index.json lacks _links.self or _embedded: not a pipeline site index", self.url)
        check_version(root, self.url)
        path = unquote(urlsplit(self_href).path)
        return (
            path.rsplit("/", 1)[0] + "/",  # e.g. "/" or "/my-repo/"; what hrefs start with
            root.get("id", ""),
            root.get("title", "") if isinstance(root.get("title"), str) else "",
            root.get("model") if isinstance(root.get("model"), str) else None,
            base_of(self_href),
        )

    def check(self) -> "SiteReader":
        """Fetch and check the root ``index.json`` now (``open_site`` defers it); returns self.
        Raises NotASite as ``_root`` does."""
        self._root()
        return self

    @property
    def base_path(self) -> str:
        """The path every absolute href of the site starts with (from the root's ``_links.self``)."""
        return self._root()[0]

    @property
    def root_id(self) -> str:
        return self._root()[1]

    @property
    def title(self) -> str:
        return self._root()[2]

    @property
    def model(self) -> str | None:
        return self._root()[3]

    @property
    def base_url(self) -> str:
        """The base URL the site was built with, as its root's ``_links.self`` says
        (``https://example.org/docs/``, ``/docs/``)."""
        return self._root()[4]

    @property
    def site_url(self) -> str:
        """The base the site's public URLs start with (``citations.public_base``: ``base_url``,
        made absolute against the URL the site is read from when it is a path and that an http(s) URL)."""
        return citations.public_base(self.base_url, self._http_root())

    @property
    def url(self) -> str:
        """The root index.json's URL or file path."""
        return self.transport.locate(self.index_path)

    # --- fetching -----------------------------------------------------------------------

    def _json(self, rel: str) -> dict:
        with self._lock:
            cached = self._docs.get(rel)
        if cached is not None:
            return cached
        data = self.transport.get(rel)
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise CorruptIndex(f"not valid JSON ({exc})", self.transport.locate(rel)) from None
        if not isinstance(doc, dict):
            raise CorruptIndex(f"expected a JSON object, got {type(doc).__name__}", self.transport.locate(rel))
        with self._lock:
            self._docs[rel] = doc
        return doc

    def resolve(self, href: str, from_rel: str) -> str:
        """The site-relative path of ``href`` found in the document at ``from_rel``.

        An absolute href must start with the site's own base URL (from the root's
        ``_links.self``: ``/my-repo/``, ``https://host/docs/``) or, with a scheme, with where the
        site was opened, so a site reads the same from a directory, a mirror or another prefix.
        """
        under_base = site_relative(href, self.base_url) if href.startswith(("/", "http:", "https:")) else None
        parts = urlsplit(href)
        if under_base is not None:
            rel = under_base
        elif parts.scheme or parts.netloc:
            root = self._http_root()
            if root is None or not href.startswith(root):
                raise CorruptIndex(f"link {href!r} points outside the site", self.transport.locate(from_rel))
            rel = unquote(urlsplit(href[len(root) :]).path)
        elif href.startswith("/"):
            path = unquote(parts.path)
            if not path.startswith(self.base_path):
                raise CorruptIndex(f"link {href!r} is not under the site's base path {self.base_path!r}", self.transport.locate(from_rel))
            rel = path[len(self.base_path) :]
        else:
            rel = posixpath.join(posixpath.dirname(from_rel), unquote(parts.path))
        clean = clean_rel(rel, backslash="\\" not in href)  # a %5C in the href: part of a name
        if clean is None or posixpath.normpath(rel.lstrip("/")).startswith(".."):
            raise CorruptIndex(f"link {href!r} points outside the site", self.transport.locate(from_rel))
        return clean

    def _node_path(self, topic_id: str) -> str:
        """Where a node's index.json lives: as found by ``nodes()``, else ``<id>/index.json``."""
        for node in self._nodes or ():
            if node.id == topic_id:
                return node.path
        rel = topic_id.strip("/")
        if self.root_id:
            if rel == self.root_id:
                rel = ""
            elif rel.startswith(self.root_id + "/"):
                rel = rel[len(self.root_id) + 1 :]
        return f"{rel}/index.json" if rel else self.index_path

    def _concurrent(self) -> bool:
        """True when fetches are worth running concurrently (HTTP, not a directory)."""
        return self._http_root() is not None
