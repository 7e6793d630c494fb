"""Getting a site's files by site-relative path, over HTTP(S) or from a local directory.

A transport knows nothing of HAL: it maps ``guide/index.json`` to bytes or raises a
``SiteError`` naming the exact URL or file. Guarantees:

* HTTP: every socket wait (connect, send, each read) is bounded by ``timeout`` seconds, and a
  body still arriving ``timeout`` seconds after the request began is abandoned, so a request
  never takes much longer than twice ``timeout``. A body shorter than its ``Content-Length``
  is an error, never silently short. 404 and 410 raise ``NotFound``; anything else that is not
  2xx, a timeout or a refused connection raises ``FetchFailed``.
* Local (``pipeline.siteformat.localfiles.LocalTransport``, shared with the writers): a path
  that would leave the site directory (``..``, a symlink pointing outside) raises ``NotFound``
  like a missing file.
* ``requests`` counts ``get`` calls, so callers can prove how many fetches an operation made;
  over HTTP ``bytes`` counts the body bytes transferred (gzip-compressed where the server
  compressed them). HTTP connections are kept alive and reused; requests accept gzip.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit

from pipeline import __version__
from pipeline.siteformat.localfiles import LocalTransport, Transport
from pipeline.siteformat.readerrors import FetchFailed, NotASite, NotFound

DEFAULT_TIMEOUT = 10.0
"""Seconds; see the module docstring for what it bounds."""
MAX_BYTES = 256 * 1024 * 1024
"""Largest response read; anything bigger is refused rather than exhausting memory."""
_READ_SIZE = 64 * 1024
_MAX_REDIRECTS = 5


class HttpTransport:
    """Files under an ``http://`` or ``https://`` root URL (which ends with ``/``).

    Connections are kept alive and reused (one per thread, so concurrent chunk reads do not
    share a socket); a reused connection the server has closed meanwhile is reopened once.
    Requests ask for gzip (``Accept-Encoding: gzip``); ``bytes`` counts the body bytes as
    they came over the wire (compressed when the server compressed them).
    """

    def __init__(self, root: str, *, timeout: float = DEFAULT_TIMEOUT):
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.root = root if root.endswith("/") else root + "/"
        self.timeout = timeout
        self.requests = 0
        self.bytes = 0
        self._count = threading.Lock()  # chunks are fetched from several threads
        self._local = threading.local()

    def locate(self, rel: str) -> str:
        return self.root + quote(rel, safe="/")

    def get(self, rel: str) -> bytes:
        with self._count:
            self.requests += 1
        url = self.locate(rel)
        started = time.monotonic()
        try:
            for _ in range(_MAX_REDIRECTS + 1):
                status, reason, headers, body = self._exchange(url, started)
                if status in (301, 302, 303, 307, 308) and headers.get("Location"):
                    url = urljoin(url, headers["Location"])
                    continue
                break
            else:
                raise FetchFailed(f"more than {_MAX_REDIRECTS} redirects", url)
        except (TimeoutError, socket.timeout):
            raise FetchFailed(f"timed out after {self.timeout:g} s", url) from None
        except http.client.IncompleteRead as exc:
            raise FetchFailed(f"connection closed after {len(exc.partial)} bytes of the body", url) from None
        except ConnectionRefusedError as exc:
            raise FetchFailed(f"cannot connect: {exc.strerror or exc}", url) from None
        except socket.gaierror as exc:
            raise FetchFailed(f"cannot connect: {exc.strerror or exc}", url) from None
        except (http.client.HTTPException, ConnectionError, OSError) as exc:
            raise FetchFailed(f"transfer failed: {exc.__class__.__name__}: {exc}", url) from None
        if status in (404, 410):
            raise NotFound(f"not found (HTTP {status})", url)
        if not 200 <= status < 300:
            raise FetchFailed(f"HTTP {status} {reason}", url)
        with self._count:
            self.bytes += len(body)
        if headers.get("Content-Encoding", "").lower() == "gzip":
            try:
                return _gunzip(body)
            except (OSError, EOFError, zlib.error) as exc:
                raise FetchFailed(f"invalid gzip body: {exc}", url) from None
        return body

    def _connection(self, parts, fresh: bool):
        key = (parts.scheme, parts.netloc)
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        conn = conns.get(key)
        if conn is not None and fresh:
            conn.close()
            conn = None
        if conn is None:
            kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            conn = conns[key] = kind(parts.netloc, timeout=self.timeout)
            return conn, False
        return conn, True

    def _exchange(self, url: str, started: float):
        """(status, reason, headers, raw body) of one GET, on a kept-alive connection."""
        parts = urlsplit(url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = {"User-Agent": f"pipeline-client/{__version__}", "Accept-Encoding": "gzip"}
        fresh = False
        while True:
            conn, reused = self._connection(parts, fresh)
            try:
                conn.request("GET", target, headers=headers)
                response = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if reused and not fresh:  # the server closed an idle kept-alive connection
                    fresh = True
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            try:
                body = self._read(response, url, started)
            except BaseException:
                conn.close()
                raise
            response.close()  # fully read: frees the connection for the next request
            if response.will_close:
                conn.close()
            return response.status, response.reason, response.headers, body

    def _read(self, response, url: str, started: float) -> bytes:
        expected = response.headers.get("Content-Length")
        expected = int(expected) if expected and expected.isdigit() else None
        if expected is not None and expected > MAX_BYTES:
            raise FetchFailed(f"response of {expected} bytes is larger than the {MAX_BYTES}-byte limit", url)
        parts: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() - started > self.timeout:
                raise FetchFailed(f"timed out after {self.timeout:g} s (body still arriving)", url)
            part = response.read1(_READ_SIZE)  # returns after one socket read: the deadline is checked often
            if not part:
                break
            parts.append(part)
            size += len(part)
            if size > MAX_BYTES:
                raise FetchFailed(f"response larger than the {MAX_BYTES}-byte limit", url)
        if expected is not None and size != expected:
            raise FetchFailed(f"body has {size} bytes but Content-Length says {expected}", url)
        return b"".join(parts)


def _gunzip(data: bytes) -> bytes:
    """Decompress a gzip body, refusing more than MAX_BYTES of output (a gzip bomb)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = d.decompress(data, MAX_BYTES + 1)
    if len(out) > MAX_BYTES or d.unconsumed_tail:
        raise OSError(f"decompressed body larger than the {MAX_BYTES}-byte limit")
    if not d.eof:
        raise EOFError("gzip stream ends early")
    return out


def transport_for(location: str | os.PathLike, *, timeout: float = DEFAULT_TIMEOUT) -> tuple[Transport, str]:
    """The transport for a site URL or directory, and the root index's path relative to it.

    ``location`` may name the site root (``http://host/docs/``, ``site``) or its root
    ``index.json`` (``http://host/docs/index.json``, ``site/index.json``). ``file://`` URLs
    are local directories.
    """
    text = os.fspath(location)
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if scheme in ("http", "https"):
        parts = urlsplit(text)
        path = parts.path or "/"
        index = "index.json"
        if path.endswith(".json"):
            path, index = path.rsplit("/", 1)[0] + "/", unquote(path.rsplit("/", 1)[1])
        root = f"{parts.scheme}://{parts.netloc}{path if path.endswith('/') else path + '/'}"
        return HttpTransport(root, timeout=timeout), index
    if scheme == "file":
        text = unquote(urlsplit(text).path)
    elif scheme:
        raise NotASite(f"unsupported URL scheme {scheme!r}; use http, https or a directory", text)
    path = Path(text)
    if path.suffix == ".json" and path.is_file():
        return LocalTransport(path.parent), path.name
    if not path.is_dir():
        raise NotASite("no such directory (expected a site directory or an http(s) URL)", text)
    return LocalTransport(path), "index.json"
