"""The one place a file path becomes an href (RFC 3986 percent-encoding).

Folder and file names may hold any character the filesystem allows (``a#b``, ``p%2e%2e``, spaces,
non-ASCII). Written raw into a link, ``#`` starts a fragment, ``%2e`` decodes to ``.`` and a space
breaks markdown links, so clients would open the wrong file or none. Every href the pipeline
publishes goes through ``quote_path``; both clients decode it (``unquote`` in
``pipeline/client``, ``decodeURIComponent`` in ``assets/client.js``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote, unquote, urlsplit

from pipeline.errors import PipelineError

# a path ``quote`` leaves as it is: most of a site's (a build quotes ~60,000 hrefs at 1,000
# documents, and ``quote`` took 0.18 s of the work after the last vector)
_UNCHANGED = re.compile(r"[A-Za-z0-9_.~/-]*")


def quote_path(path: str) -> str:
    """``path`` (``/``-separated, as the site stores it) with every byte of its UTF-8 form that is
    not unreserved (``A-Z a-z 0-9 - . _ ~``) or ``/`` percent-encoded. Decoding gives ``path`` back."""
    return path if _UNCHANGED.fullmatch(path) else quote(path, safe="/")


def quote_item(item: dict) -> dict:
    """A topic-spec chunk item with its ``href`` and its related chunks' ``href``s quoted."""
    out = dict(item, href=quote_path(item["href"]))
    if "related" in item:
        out["related"] = [dict(r, href=quote_path(r["href"])) for r in item["related"]]
    return out


# -- the site's base URL ---------------------------------------------------------------------
# Every absolute link a site publishes starts with its base URL: a path (``/``, ``/repo/``), or an
# absolute URL (``https://host/docs/``) where a protocol needs one (sitemap ``<loc>``). A site
# says its own: its root ``index.json``'s ``_links.self`` is the base URL + ``index.json``
# (``base_of`` reads it back), so a reader (the clients, the search index
# builder, linkcheck) never needs it repeated.

_WEB_SCHEMES = ("http", "https")


@lru_cache(maxsize=16)  # asked once a document by a rebuild's reuse checks
def normalize_base_url(value: str | None) -> str:
    """The base URL a user gave, as every link starts with it: ``""``/``/`` -> ``/``; a path
    ``repo``, ``/repo``, ``repo/`` -> ``/repo/``; ``https://host/docs`` -> ``https://host/docs/``.
    Percent-encoded like every href (``quote_path``; ``%XX`` already there is kept). Raises
    PipelineError naming the value for another scheme, a host without a scheme (``//host``), a
    query or fragment, or ``.``/``..`` segments."""
    text = (value or "").strip() or "/"
    parts = urlsplit(text)
    usage = "give a path such as /repo/ or an absolute URL such as https://example.org/docs/"
    if parts.scheme and parts.scheme.lower() not in _WEB_SCHEMES or (parts.scheme and not parts.netloc):
        raise PipelineError(f"base URL {value!r} is not an http(s) URL or a path; {usage}")
    if not parts.scheme and text.startswith("//"):
        raise PipelineError(f"base URL {value!r} names a host without a scheme; {usage}")
    if parts.query or parts.fragment or text.endswith(("?", "#")):
        raise PipelineError(f"base URL {value!r} has a query or fragment; {usage}")
    path = parts.path if parts.scheme else text
    segments = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segments) or "\\" in path:
        raise PipelineError(f"base URL {value!r} has . or .. segments or backslashes; {usage}")
    path = quote("/" + "".join(f"{s}/" for s in segments), safe="/%")
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}" if parts.scheme else path


def is_absolute_url(base_url: str) -> bool:
    """True for a base URL with a scheme and host (``https://host/docs/``)."""
    return base_url.startswith(("http://", "https://"))


def base_path(base_url: str) -> str:
    """The path part of a base URL: ``https://host/docs/`` -> ``/docs/``; a path as it is."""
    return (urlsplit(base_url).path or "/") if is_absolute_url(base_url) else base_url


def site_relative(href: str, base_url: str) -> str | None:
    """The site-relative path (percent-decoded, query and fragment dropped) of an absolute
    ``href`` under ``base_url``: one starting with the base URL, or, for an absolute base URL,
    with its path (a root-relative link). None when ``href`` is not under it (or is relative)."""
    for base in (base_url, base_path(base_url)) if is_absolute_url(base_url) else (base_url,):
        if base.startswith("/") and not href.startswith("/"):
            continue
        if href.startswith(base) and not (base.startswith("/") and href.startswith("//")):
            rest = href[len(base) :]
            return unquote(rest.split("#", 1)[0].split("?", 1)[0])
    return None


def base_of(self_href: str) -> str:
    """The base URL of a site from its root ``index.json``'s ``_links.self`` href:
    everything up to its last ``/`` (``https://h/docs/index.json`` -> ``https://h/docs/``)."""
    cut = self_href.split("#", 1)[0].split("?", 1)[0]
    return cut[: cut.rfind("/") + 1] or "/"


@lru_cache(maxsize=1 << 16)
def site_href(base_url: str, dir_rel: str, name: str) -> str:
    """Absolute link to file ``name`` of directory ``dir_rel`` (kept: a chunk's link is made for
    itself, its neighbours, the chunks it is related to and its page's ``item`` list)."""
    return base_url + quote_path(f"{dir_rel}/{name}" if dir_rel else name)
