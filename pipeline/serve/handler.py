"""The request handler of ``pipeline serve``: one request of a connection whose head is in,
answered by the rules of ``serve/rules.py`` from the files of the site."""

from __future__ import annotations

import os
import re
import socket
import stat
import sys
import time
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit

from pipeline.terminal import escape_controls
from pipeline.serve.prefix import strip_prefix
from pipeline.serve import compress
from pipeline.serve.connections import Connection, RequestInput, ResponseOutput
from pipeline.serve.rules import (
    ALLOWED_METHODS,
    CORS_HEADERS,
    DIRECTORY_INDEXES,
    PREFLIGHT_HEADERS,
    Unsatisfiable,
    cache_control,
    confined,
    content_type,
    etag_for,
    http_seconds,
    parse_range,
    request_path,
    weak_match,
)

if TYPE_CHECKING:
    from pipeline.serve.server import SiteServer

_COPY_CHUNK = 64 * 1024
MAX_TARGET = 4096  # characters of a request target (PATH_MAX): longer is 414, never a path looked up
_VERSION = re.compile(r"HTTP/(\d)\.(\d)")


class SiteRequestHandler(BaseHTTPRequestHandler):
    """GET/HEAD/OPTIONS over ``server.site_root``; see the module docstring for the rules."""

    server: SiteServer
    protocol_version = "HTTP/1.1"
    server_version = "pipeline-serve"
    timeout = 10  # seconds per socket read or write once a head is in: a stalled client is dropped
    disable_nagle_algorithm = True  # headers and body are separate writes; avoid delayed-ACK stalls

    # One handler per request (``SiteServer._answer``): ``request`` is a Connection whose buffer
    # starts with the whole head; what follows it stays there for the next request.
    def setup(self) -> None:
        conn: Connection = self.request
        self.connection = conn.sock
        if self.disable_nagle_algorithm:
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.rfile = RequestInput(conn)
        self.wfile = ResponseOutput(conn.sock)

    def handle(self) -> None:
        self.close_connection = True
        try:
            self.handle_one_request()
        except (TimeoutError, ConnectionError):
            self.close_connection = True

    def finish(self) -> None:
        """Nothing buffered to flush; the connection outlives the request (``SiteServer._answer``)."""

    def parse_request(self) -> bool:
        """The standard parse, stricter first: a request line of three words ending in
        ``HTTP/1.x`` (else 400, or 505 for another major version; no HTTP/0.9, whose answers
        have no status line), a target of at most MAX_TARGET characters (else 414); then the
        request's body, if any, is dropped so it is never taken for the next request: when it
        came in whole with its head; else (a slow body, chunked) it is never waited for and
        the connection closes after the answer."""
        self.request_version = "HTTP/1.1"  # every answer, errors included, starts with a status line
        self.command = None
        self.close_connection = True
        self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = self.requestline.split()
        version = _VERSION.fullmatch(words[-1]) if len(words) == 3 else None
        if version is None:
            self.send_error(HTTPStatus.BAD_REQUEST, "Bad request line")
            return False
        if version.group(1) != "1":
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED)
            return False
        if len(words[1]) > MAX_TARGET:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
            return False
        if not super().parse_request():
            return False
        return self._drop_body()

    def _drop_body(self) -> bool:
        if self.headers.get("Transfer-Encoding") is not None:
            self.close_connection = True  # not parsed: the connection ends with this answer
            return True
        lengths = set(self.headers.get_all("Content-Length") or [])
        if not lengths:
            return True
        length = lengths.pop().strip()
        if lengths or not length.isdigit():
            self.send_error(HTTPStatus.BAD_REQUEST, "Bad Content-Length")
            return False
        if not self.rfile.drop(int(length) if len(length) < 19 else -1):
            self.close_connection = True
        return True

    def version_string(self) -> str:
        return self.server_version

    # ----- methods

    def do_OPTIONS(self) -> None:
        # 204 carries neither a body nor Content-Length (RFC 9110 §8.6).
        self._send_head(HTTPStatus.NO_CONTENT, {**PREFLIGHT_HEADERS, "Allow": ALLOWED_METHODS})

    def do_GET(self) -> None:
        self._serve_or_500()

    def do_HEAD(self) -> None:
        self._serve_or_500()

    def _serve_or_500(self) -> None:
        """Every request gets an answer: an unexpected error is a 500, never a dropped connection."""
        self._head_sent = False
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - the server must outlive any one request
            self.close_connection = True
            if not self._head_sent:
                self._send_text(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error\n")
            if self.server.log_requests:
                sys.stderr.write(escape_controls(f"error serving {self.path}: {type(exc).__name__}: {exc}") + "\n")

    def _not_allowed(self) -> None:
        self.close_connection = True  # a request body may follow; do not try to parse it
        self._send_text(HTTPStatus.METHOD_NOT_ALLOWED, "method not allowed\n", {"Allow": ALLOWED_METHODS})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_TRACE = do_CONNECT = _not_allowed

    # ----- serving files

    def _serve(self) -> None:
        root = self.server.site_root
        target = strip_prefix(self.server.prefix, self.path)
        wanted = request_path(root, target) if target is not None else None
        real = confined(root, wanted) if wanted is not None else None
        if real is None:
            return self._not_found()
        try:
            is_dir = real.is_dir()
        except OSError:  # a name too long for the filesystem, a folder we may not enter
            return self._not_found()
        if is_dir:
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
            # The type and caching follow the name asked for, not a symlink's target.
            self._send_file(handle, st, content_type(wanted), cache_control(wanted.relative_to(root).as_posix()))

    def _send_file(self, handle: BinaryIO, st: os.stat_result, ctype: str, caching: str = "no-cache") -> None:
        etag = etag_for(st)
        last_modified = formatdate(st.st_mtime, usegmt=True)
        headers = {
            "ETag": etag,
            "Last-Modified": last_modified,
            "Accept-Ranges": "bytes",
            "Cache-Control": caching,
        }
        encode = compress.should_compress(ctype, st.st_size, self.headers.get("Accept-Encoding"), self.headers.get("Range"))
        if encode:  # serve/compress.py: a gzip representation with its own ETag
            etag = headers["ETag"] = compress.gzip_etag(etag)
            headers["Vary"] = "Accept-Encoding"
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
        if encode and byte_range is None:
            body = compress.compressed(str(handle.name), etag, handle.read())
            headers["Content-Encoding"] = "gzip"
            headers["Content-Length"] = str(len(body))
            self._send_head(HTTPStatus.OK, headers)
            if self.command == "GET":
                self.wfile.write(body)
            return
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
            return weak_match(if_none_match, etag)
        since = self.headers.get("If-Modified-Since")
        if since is not None:
            seconds = http_seconds(since)
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
        self._head_sent = True
        self.send_response(status)
        for name, value in {**CORS_HEADERS, **headers}.items():
            self.send_header(name, value)
        if self.close_connection:  # a connection is closed only after a response that says so
            self.send_header("Connection", "close")
        self.end_headers()
        if self.server.log_requests:
            # The path is the client's: escaped, so it cannot drive the terminal.
            sys.stderr.write(escape_controls(
                f"{time.strftime('%H:%M:%S')} {self.command or '-'} {getattr(self, 'path', '-')} "
                f"{int(status)} {headers.get('Content-Length', '-')}"
            ) + "\n")

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
            sys.stderr.write(escape_controls(f"{time.strftime('%H:%M:%S')} {self.address_string()} {format % args}") + "\n")
