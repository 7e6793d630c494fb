"""The HTTP rules of ``pipeline serve`` as pure functions: content types, byte ranges,
validators and path confinement (the behaviour is listed in ``pipeline/serve/__init__.py``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import unquote, urlsplit

HAL_JSON = "application/hal+json; charset=utf-8"
OCTET_STREAM = "application/octet-stream"

CONTENT_TYPES: dict[str, str] = {
    ".json": "application/json; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".xml": "application/xml",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".wasm": "application/wasm",
    ".bin": OCTET_STREAM,
}
"""Suffix (lowercase) -> Content-Type; ``index.json`` and the index files in ``_index/`` (later
listing pages, document resources: ``pipeline/siteformat/indexnames.py``) are HAL_JSON; anything else
OCTET_STREAM."""

DIRECTORY_INDEXES = ("index.html", "index.json")
REVALIDATE = "no-cache"
"""Cache-Control of a file whose name may hold new bytes after a build: keep, but revalidate."""
IMMUTABLE = "public, max-age=31536000, immutable"
"""Cache-Control of a content-named file (``pipeline/search/layout.py``: every file in a folder of
``_search/``; the page's bundle ``_assets/app-<hash>.js``, ``site/bundle.py``): its name never
holds other bytes, so a reader may keep it for a year unasked."""
PAGE_BUNDLE = re.compile(r"_assets/app-[0-9a-f]{12}\.js")
ALLOWED_METHODS = "GET, HEAD, OPTIONS"
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": "Content-Range, Content-Length, ETag, Accept-Ranges",
}
PREFLIGHT_HEADERS = {
    "Access-Control-Allow-Methods": ALLOWED_METHODS,
    "Access-Control-Allow-Headers": "Range, If-None-Match",
    "Access-Control-Max-Age": "86400",
}


def content_type(path: Path) -> str:
    """The Content-Type sent for ``path`` (by name only)."""
    if path.name == "index.json" or (path.parent.name == "_index" and path.suffix == ".json"):
        return HAL_JSON
    return CONTENT_TYPES.get(path.suffix.lower(), OCTET_STREAM)


def cache_control(rel: str) -> str:
    """The Cache-Control sent for the site file at ``rel`` (its path below the site root, ``/``
    separated): IMMUTABLE for a content-named file, in a folder of ``_search/`` or the page's
    bundle; else REVALIDATE. ``build/nginx.conf`` and ``build/_headers`` say the same."""
    parts = rel.strip("/").split("/")
    named = (len(parts) >= 3 and parts[0] == "_search") or PAGE_BUNDLE.fullmatch(rel.strip("/")) is not None
    return IMMUTABLE if named else REVALIDATE


# --- Range header ------------------------------------------------------------------------


@dataclass(frozen=True)
class ByteRange:
    """An inclusive, satisfiable byte range ``first..last`` of a file of ``size`` bytes."""

    first: int
    last: int
    size: int

    @property
    def length(self) -> int:
        return self.last - self.first + 1

    @property
    def content_range(self) -> str:
        return f"bytes {self.first}-{self.last}/{self.size}"


class Unsatisfiable(Exception):
    """The Range header is valid but selects no byte of the file: answer 416."""


_RANGE_HEADER = re.compile(r"[ \t]*bytes[ \t]*=[ \t]*(.*?)[ \t]*", re.IGNORECASE | re.DOTALL)
_RANGE_SPEC = re.compile(r"([0-9]*)[ \t]*-[ \t]*([0-9]*)")


def parse_range(header: str | None, size: int) -> ByteRange | None:
    """The single byte range that ``header`` asks of a ``size``-byte file.

    Returns None when the header is absent or must be ignored (malformed, another unit,
    several ranges, ``last < first``, a suffix range of an empty file); the caller then
    sends the whole file. Raises Unsatisfiable when the range starts at or past the end,
    or is ``-0``.
    """
    if header is None:
        return None
    whole = _RANGE_HEADER.fullmatch(header)
    if whole is None or "," in whole.group(1):
        return None
    spec = _RANGE_SPEC.fullmatch(whole.group(1))
    if spec is None:
        return None
    first_text, last_text = (_clamp_digits(t) for t in spec.groups())
    if not first_text:
        if not last_text:
            return None  # "bytes=-"
        suffix = int(last_text)
        if suffix == 0:
            raise Unsatisfiable
        if size == 0:
            return None
        return ByteRange(max(size - suffix, 0), size - 1, size)
    first = int(first_text)
    last = int(last_text) if last_text else None
    if last is not None and last < first:
        return None
    if first >= size:
        raise Unsatisfiable
    return ByteRange(first, size - 1 if last is None else min(last, size - 1), size)


_MAX_DIGITS = 19  # any position with more digits lies beyond every file (int() refuses >4300 digits)


def _clamp_digits(text: str) -> str:
    """A decimal position, cut to a value past any file when it is absurdly long."""
    text = text.lstrip("0") or ("0" if text else "")
    return "9" * _MAX_DIGITS if len(text) > _MAX_DIGITS else text


# --- validators ----------------------------------------------------------------------------


def etag_for(st: os.stat_result) -> str:
    """Strong ETag from size and modification time (nanoseconds)."""
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


def _etag_list(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def weak_match(header: str, etag: str) -> bool:
    """If-None-Match semantics: ``*`` or any listed tag equal to ``etag`` ignoring ``W/``."""
    opaque = etag.removeprefix("W/")
    return any(tag == "*" or tag.removeprefix("W/") == opaque for tag in _etag_list(header))


def http_seconds(header: str) -> int | None:
    try:
        return int(parsedate_to_datetime(header).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# --- path confinement ---------------------------------------------------------------------


def request_path(root: Path, target: str) -> Path | None:
    """The path under ``root`` that request target ``target`` names, before symlinks, or None.

    None means "answer 404": the target is malformed or has a ``.``/``..``/hidden segment
    or a NUL (a backslash too where it separates folders: on POSIX ``back\\slash.md`` is a name). The result is lexically inside ``root`` but may not exist, and
    symlinks in it may still point outside: pass it through ``confined`` before opening.
    """
    raw_path = urlsplit(target).path
    if not raw_path.startswith("/"):
        return None
    try:
        decoded = unquote(raw_path, errors="strict")
    except UnicodeDecodeError:
        return None
    segments = [s for s in decoded.split("/") if s]
    for segment in segments:
        if segment.startswith(".") and segment != ".well-known":
            return None
        if "\x00" in segment or (os.sep == "\\" or os.altsep == "\\") and "\\" in segment:
            return None  # a backslash is a separator only where the system says so (Windows)
    return root.joinpath(*segments)


def confined(root: Path, path: Path) -> Path | None:
    """``path`` with symlinks resolved if that lies inside ``root`` (itself resolved), else None."""
    try:
        real = path.resolve(strict=False)
    except (OSError, RuntimeError):  # symlink loops
        return None
    return real if real.is_relative_to(root) else None


# --- the handler ---------------------------------------------------------------------------
