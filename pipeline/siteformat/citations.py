"""Public URLs a reader cites a chunk by (pure): the chunk's file and its section of the source.

The site says where it lives: its root ``index.json``'s ``_links.self`` (and ``_search/meta.json``'s
``base_url``, written from it) is the build's ``--base-url`` followed by ``index.json``. Public
links start with that base: absolute (``https://example.org/docs/``) when the site was built with
an absolute base URL; otherwise a path (``/docs/``), made absolute against the URL the site is
read from when that is an http(s) URL (``public_base``), else left root-relative.

- ``file_url``: a site file's public URL, ``base + quote_path(path)`` (for a chunk, the href the site itself
  publishes in ``_links.self`` of the chunk's item);
- ``section_url``: the search page at the base, opened at the source document scrolled to the
  chunk's lines and marking them: ``base + "#topic=<id>&doc=<name>&chunk=<i>"`` (the page's deep
  link, ``assets/app.js``), each value percent-encoded but for RFC 3986's unreserved characters.

``assets/client.js`` (``publicBase``, ``fileUrl``, ``sectionUrl``) is the browser's twin; both
read ``tests/vectors/citations.json``.
"""

from __future__ import annotations

from urllib.parse import quote, urljoin, urlsplit

from pipeline.siteformat.hrefs import quote_path

INDEX_FILE = "index.json"


def public_base(base_url: str, reading_root: str | None = None) -> str:
    """The base public links start with: ``base_url`` when it is absolute, else ``base_url``
    resolved against ``reading_root`` (the http(s) URL the site is read from), else ``base_url``."""
    if urlsplit(base_url).scheme or not reading_root:
        return base_url
    return urljoin(reading_root, base_url)


def file_url(base: str, path: str) -> str:
    """The public URL of the site file at ``path`` (site-relative, unquoted)."""
    return base + quote_path(path)


def section_url(base: str, topic: str, document: str, index: int) -> str:
    """The search page's link to chunk ``index`` of ``document`` (its name) in ``topic``."""
    return f"{base}#topic={quote(topic, safe='')}&doc={quote(document, safe='')}&chunk={index}"
