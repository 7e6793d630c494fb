"""``pipeline serve``: a local static server for a built site, standard library only.

It behaves the way readers expect a static host to behave, so a site can be tried locally
with the same clients (agents, the browser module in ``pipeline/assets``) that will read it
from GitHub Pages, Netlify or nginx (``build/nginx.conf`` and ``build/_headers`` configure the
same rules). Choices:

* Methods: GET and HEAD serve files; OPTIONS answers any CORS preflight with 204; any other
  method gets 405 with ``Allow: GET, HEAD, OPTIONS``.
* Content types: a file named ``index.json`` is ``application/hal+json; charset=utf-8`` (every
  directory's index is a HAL document); other ``.json`` is ``application/json;
  charset=utf-8``; ``.md`` is ``text/markdown; charset=utf-8`` (RFC 7763 asks for the
  charset); ``.js``/``.mjs`` ``text/javascript; charset=utf-8``; ``.bin`` and unknown
  suffixes ``application/octet-stream`` (see ``CONTENT_TYPES``). JSON is UTF-8 by
  definition, and RFC 8259 says a ``charset`` parameter has no effect on compliant
  recipients; we send it anyway for clients that decode text by the header. Every file
  response has ``X-Content-Type-Options: nosniff``.
* Ranges (RFC 9110 §14): a single ``bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` on GET gets 206
  with ``Content-Range`` and exactly those bytes (an end past the file is clamped); a range
  starting at or past the end, or ``bytes=-0``, gets 416 with ``Content-Range: bytes */size``.
  A malformed header, a unit other than ``bytes``, several ranges, a Range on HEAD, a
  suffix range of an empty file, or an ``If-Range`` that does not match the current ETag or
  Last-Modified are ignored: the full 200 response is sent, as RFC 9110 allows.
  Every file response carries ``Accept-Ranges: bytes``.
* Validators: a strong ``ETag`` ``"<size hex>-<mtime_ns hex>"`` (like nginx's, from the
  open file's ``fstat``) and ``Last-Modified``. ``If-None-Match`` (weak comparison, ``*``
  allowed) answers 304; ``If-Modified-Since`` is honoured only without ``If-None-Match``.
  ``Cache-Control: no-cache``: clients may keep copies but revalidate, because a local site
  is rebuilt under the server.
* CORS: every response, errors included, has ``Access-Control-Allow-Origin: *`` and
  ``Access-Control-Expose-Headers: Content-Range, Content-Length, ETag, Accept-Ranges``;
  preflight answers add ``Access-Control-Allow-Methods: GET, HEAD, OPTIONS``,
  ``Access-Control-Allow-Headers: Range, If-None-Match`` and a one-day ``Max-Age``.
* Directories: ``/foo/`` serves ``foo/index.html`` if present, else ``foo/index.json``, else
  404; never a listing. ``/foo`` naming a directory redirects (301) to ``/foo/`` so relative
  links resolve like on static hosts.
* Confinement: the URL path is percent-decoded once, then split on ``/``. A segment that is
  ``..`` or ``.``, contains a backslash or NUL, or starts with ``.`` (hidden files, and the
  temporary files of an atomic write in progress; ``.well-known`` excepted) is refused with 404, as is anything whose
  real path (symlinks resolved) is outside the site directory, and anything that is not a
  regular file. A refused path answers exactly like a missing one, so nothing leaks.
* Logging: one line per request on stderr (method, path, status, bytes); ``log_requests=False``
  silences it.
* HTTP/1.1 with keep-alive; one thread per connection; idle connections close after 30 s.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import time
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from pipeline.errors import PipelineError
from pipeline.fsutil import require_dir

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
"""Suffix (lowercase) -> Content-Type; ``index.json`` is HAL_JSON; anything else OCTET_STREAM."""

DIRECTORY_INDEXES = ("index.html", "index.json")
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
_COPY_CHUNK = 64 * 1024


def content_type(path: Path) -> str:
    """The Content-Type sent for ``path`` (by name only)."""
    if path.name == "index.json":
        return HAL_JSON
    return CONTENT_TYPES.get(path.suffix.lower(), OCTET_STREAM)


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
    first_text, last_text = spec.groups()
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


# --- validators ----------------------------------------------------------------------------


def etag_for(st: os.stat_result) -> str:
    """Strong ETag from size and modification time (nanoseconds)."""
    return f'"{st.st_size:x}-{st.st_mtime_ns:x}"'


def _etag_list(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def _weak_match(header: str, etag: str) -> bool:
    """If-None-Match semantics: ``*`` or any listed tag equal to ``etag`` ignoring ``W/``."""
    opaque = etag.removeprefix("W/")
    return any(tag == "*" or tag.removeprefix("W/") == opaque for tag in _etag_list(header))


def _http_seconds(header: str) -> int | None:
    try:
        return int(parsedate_to_datetime(header).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


# --- path confinement ---------------------------------------------------------------------


def request_path(root: Path, target: str) -> Path | None:
    """The path under ``root`` that request target ``target`` names, before symlinks, or None.

    None means "answer 404": the target is malformed or has a ``.``/``..``/hidden segment,
    a backslash or a NUL. The result is lexically inside ``root`` but may not exist, and
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
        if "\\" in segment or "\x00" in segment:
            return None
    return root.joinpath(*segments)


def confined(root: Path, path: Path) -> Path | None:
    """``path`` with symlinks resolved if that lies inside ``root`` (itself resolved), else None."""
    try:
        real = path.resolve(strict=False)
    except (OSError, RuntimeError):  # symlink loops
        return None
    return real if real.is_relative_to(root) else None


# --- the handler ---------------------------------------------------------------------------


class SiteServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that serves the files under ``site_root`` (a resolved path)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], site_root: Path, *, log_requests: bool = True):
        self.site_root = site_root
        self.log_requests = log_requests
        super().__init__(address, SiteRequestHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}/"


class SiteRequestHandler(BaseHTTPRequestHandler):
    """GET/HEAD/OPTIONS over ``server.site_root``; see the module docstring for the rules."""

    server: SiteServer
    protocol_version = "HTTP/1.1"
    server_version = "pipeline-serve"
    timeout = 30
    disable_nagle_algorithm = True  # headers and body are separate writes; avoid delayed-ACK stalls

    def version_string(self) -> str:
        return self.server_version

    # ----- methods

    def do_OPTIONS(self) -> None:
        # 204 carries neither a body nor Content-Length (RFC 9110 §8.6).
        self._send_head(HTTPStatus.NO_CONTENT, {**PREFLIGHT_HEADERS, "Allow": ALLOWED_METHODS})

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def _not_allowed(self) -> None:
        self.close_connection = True  # a request body may follow; do not try to parse it
        self._send_text(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed\n", {"Allow": ALLOWED_METHODS})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_TRACE = do_CONNECT = _not_allowed

    # ----- serving files

    def _serve(self) -> None:
        root = self.server.site_root
        wanted = request_path(root, self.path)
        real = confined(root, wanted) if wanted is not None else None
        if real is None:
            return self._not_found()
        if real.is_dir():
            if not urlsplit(self.path).path.endswith("/"):
                return self._redirect_to_slash()
            for name in DIRECTORY_INDEXES:
                index = confined(root, wanted / name)
                if index is not None and index.is_file():
                    wanted, real = wanted / name, index
                    break
            else:
                return self._not_found()
        elif urlsplit(self.path).path.endswith("/"):
            return self._not_found()  # "/file.md/" is not a directory
        try:
            handle = open(real, "rb")
        except OSError:
            return self._not_found()
        with handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                return self._not_found()
            # The type follows the name asked for, not a symlink's target.
            self._send_file(handle, st, content_type(wanted))

    def _send_file(self, handle: BinaryIO, st: os.stat_result, ctype: str) -> None:
        etag = etag_for(st)
        last_modified = formatdate(st.st_mtime, usegmt=True)
        headers = {
            "ETag": etag,
            "Last-Modified": last_modified,
            "Accept-Ranges": "bytes",
            "Cache-Control": "no-cache",
        }
        if self._not_modified(etag, int(st.st_mtime)):
            return self._send_head(HTTPStatus.NOT_MODIFIED, headers)

        byte_range = None
        if self.command == "GET" and self._if_range_holds(etag, last_modified):
            try:
                byte_range = parse_range(self.headers.get("Range"), st.st_size)
            except Unsatisfiable:
                headers["Content-Range"] = f"bytes */{st.st_size}"
                return self._send_text(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, "range not satisfiable\n", headers)
        headers["Content-Type"] = ctype
        headers["X-Content-Type-Options"] = "nosniff"
        if byte_range is None:
            first, length, status = 0, st.st_size, HTTPStatus.OK
        else:
            first, length, status = byte_range.first, byte_range.length, HTTPStatus.PARTIAL_CONTENT
            headers["Content-Range"] = byte_range.content_range
        headers["Content-Length"] = str(length)
        self._send_head(status, headers)
        if self.command == "GET":
            self._copy(handle, first, length)

    def _not_modified(self, etag: str, mtime: int) -> bool:
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:
            return _weak_match(if_none_match, etag)
        since = self.headers.get("If-Modified-Since")
        if since is not None:
            seconds = _http_seconds(since)
            return seconds is not None and mtime <= seconds
        return False

    def _if_range_holds(self, etag: str, last_modified: str) -> bool:
        """True when there is no If-Range or it still describes the file (strong match)."""
        if_range = self.headers.get("If-Range")
        if if_range is None:
            return True
        if_range = if_range.strip()
        if if_range.startswith(('"', "W/")):
            return if_range == etag
        return if_range == last_modified

    def _copy(self, handle: BinaryIO, first: int, length: int) -> None:
        handle.seek(first)
        remaining = length
        try:
            while remaining > 0:
                block = handle.read(min(_COPY_CHUNK, remaining))
                if not block:
                    # The file shrank after fstat: the promised length cannot be kept.
                    self.close_connection = True
                    return
                self.wfile.write(block)
                remaining -= len(block)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # ----- responses

    def _not_found(self) -> None:
        self._send_text(HTTPStatus.NOT_FOUND, "not found\n")

    def _redirect_to_slash(self) -> None:
        parts = urlsplit(self.path)
        location = parts.path + "/" + (f"?{parts.query}" if parts.query else "")
        self._send_text(HTTPStatus.MOVED_PERMANENTLY, f"moved to {location}\n", {"Location": location})

    def _send_text(self, status: HTTPStatus, body: str, headers: dict[str, str] | None = None) -> None:
        """A short plain-text response (errors, redirects); no body for HEAD."""
        data = body.encode("utf-8")
        self._send_head(
            status, {**(headers or {}), "Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(data))}
        )
        if self.command != "HEAD":
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    def _send_head(self, status: HTTPStatus, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in {**CORS_HEADERS, **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        if self.server.log_requests:
            sys.stderr.write(
                f"{time.strftime('%H:%M:%S')} {self.command or '-'} {getattr(self, 'path', '-')} "
                f"{int(status)} {headers.get('Content-Length', '-')}\n"
            )

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Protocol errors found by the base class (bad request line, ...) as plain text."""
        self.close_connection = True
        try:
            self._send_text(HTTPStatus(code), f"{message or HTTPStatus(code).phrase}\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Silenced: ``_send_head`` logs each response once, with its length."""

    def log_message(self, format: str, *args) -> None:
        if self.server.log_requests:
            sys.stderr.write(f"{time.strftime('%H:%M:%S')} {self.address_string()} {format % args}\n")


# --- entry points ------------------------------------------------------------------------


def make_server(
    site_dir: Path, *, host: str = "127.0.0.1", port: int = 8000, log_requests: bool = True
) -> SiteServer:
    """A bound, not yet running server for ``site_dir`` (port 0 picks a free port).

    Raises PipelineError if ``site_dir`` is not a directory or the address cannot be bound.
    Call ``serve_forever()`` (possibly in a thread), then ``shutdown()`` and ``server_close()``.
    """
    root = require_dir(Path(site_dir), "site")
    try:
        return SiteServer((host, port), root.resolve(), log_requests=log_requests)
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise PipelineError(f"cannot listen on {host}:{port}: {reason}") from None


def serve(site_dir: Path, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``site_dir`` until interrupted (Ctrl-C), logging one line per request to stderr."""
    server = make_server(site_dir, host=host, port=port)
    sys.stderr.write(f"Serving {site_dir} at {server.url} (Ctrl-C to stop)\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.stderr.write("stopped\n")
    finally:
        server.server_close()
