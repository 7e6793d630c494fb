"""On-the-fly gzip for the development server (the static hosts in build/ compress by themselves).

A response is compressed when the client accepts gzip, the whole file is asked for (no Range:
byte ranges address the stored bytes), the type is text-like (JSON, markdown, JS, CSS, HTML,
SVG, plain text) and the file is big enough to gain. The body is deterministic (mtime 0), and
the ETag gets a ``-gzip`` suffix so caches never mix the two representations; responses carry
``Vary: Accept-Encoding``. Compressed bodies are kept in a small cache keyed by path and ETag.
"""

from __future__ import annotations

import gzip
import threading
from collections import OrderedDict

MIN_SIZE = 512
"""Smaller files are sent as they are: gzip's 20-byte frame would eat the gain."""
_COMPRESSIBLE = ("application/json", "application/hal+json", "text/", "application/javascript", "image/svg+xml")
_CACHE_ENTRIES = 256
_cache: OrderedDict[tuple[str, str], bytes] = OrderedDict()
_lock = threading.Lock()


def accepts_gzip(header: str | None) -> bool:
    """True when an ``Accept-Encoding`` header allows gzip (``q=0`` refuses it)."""
    for item in (header or "").split(","):
        name, _, params = item.strip().partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().lower()
            return not (q.startswith("q=") and q[2:].strip() in ("0", "0.0", "0.00", "0.000"))
    return False


def should_compress(ctype: str, size: int, accept_encoding: str | None, range_header: str | None) -> bool:
    return range_header is None and size >= MIN_SIZE and ctype.startswith(_COMPRESSIBLE) and accepts_gzip(accept_encoding)


def gzip_etag(etag: str) -> str:
    """The ETag of the gzip representation of a file whose ETag is ``etag``."""
    return etag[:-1] + '-gzip"' if etag.endswith('"') else etag + "-gzip"


def compressed(key: str, etag: str, data: bytes) -> bytes:
    """``data`` gzipped (level 6, mtime 0), cached by (key, etag)."""
    with _lock:
        hit = _cache.get((key, etag))
        if hit is not None:
            _cache.move_to_end((key, etag))
            return hit
    body = gzip.compress(data, compresslevel=6, mtime=0)
    with _lock:
        _cache[(key, etag)] = body
        while len(_cache) > _CACHE_ENTRIES:
            _cache.popitem(last=False)
    return body
