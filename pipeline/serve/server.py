"""The server of ``pipeline serve``: a threading HTTP server and its request handler, which apply
the rules of ``serve/rules.py`` to the files of a site."""

from __future__ import annotations

import errno
import os
import stat
import sys
import threading
import time
from email.utils import formatdate
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit

from pipeline.errors import PipelineError
from pipeline.fsutil import require_dir
from pipeline.terminal import escape_controls
from pipeline.serve.prefix import normalize_prefix, strip_prefix
from pipeline.serve import compress
from pipeline.serve.rules import (
    ALLOWED_METHODS,
    CORS_HEADERS,
    DIRECTORY_INDEXES,
    PREFLIGHT_HEADERS,
    Unsatisfiable,
    confined,
    content_type,
    etag_for,
    http_seconds,
    parse_range,
    request_path,
    weak_match,
)

_COPY_CHUNK = 64 * 1024

class SiteServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that serves the files under ``site_root`` (a resolved path).

    Load limits: the kernel queues up to ``request_queue_size`` connections not yet accepted
    (the standard library's 5 dropped 2 % of 200 concurrent clients); at most ``max_workers``
    connections are handled at once (a new one waits in that queue, never unanswered); when
    more than half the workers are busy, a connection is closed after its response instead of
    idling in keep-alive; a client gets ``SiteRequestHandler.timeout`` seconds per read and
    ``request_deadline`` seconds for a whole request head, so slow clients cannot hold workers.
    """

    daemon_threads = True
    request_queue_size = 1024  # listen backlog (the kernel caps it at net.core.somaxconn)
    max_workers = 64

    def __init__(self, address: tuple[str, int], site_root: Path, *, log_requests: bool = True, prefix: str = "/", handler=None):
        self.site_root = site_root
        self.log_requests = log_requests
        self._workers = threading.BoundedSemaphore(self.max_workers)
        self._busy = 0
        self._busy_lock = threading.Lock()
        self.prefix = prefix  # URL path the site is served under (serve/prefix.py)
        super().__init__(address, handler or SiteRequestHandler)

    def process_request(self, request, client_address) -> None:
        """Wait for a free worker (the connection waits in the listen queue meanwhile)."""
        self._workers.acquire()
        with self._busy_lock:
            self._busy += 1
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._busy_lock:
            self._busy -= 1
        self._workers.release()

    @property
    def crowded(self) -> bool:
        """More than half the workers busy: keep-alive connections are closed after a response."""
        return self._busy > self.max_workers // 2

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}{self.prefix}"


class SiteRequestHandler(BaseHTTPRequestHandler):
    """GET/HEAD/OPTIONS over ``server.site_root``; see the module docstring for the rules."""

    server: SiteServer
    protocol_version = "HTTP/1.1"
    server_version = "pipeline-serve"
    timeout = 10  # seconds per socket read or write: an idle or stalled client is dropped
    request_deadline = 20.0  # seconds to send a whole request line and headers (slowloris)
    disable_nagle_algorithm = True  # headers and body are separate writes; avoid delayed-ACK stalls

    def setup(self) -> None:
        super().setup()
        self.rfile = _DeadlineReader(self.rfile, self.connection, self.timeout, self.request_deadline)

    def handle_one_request(self) -> None:
        self.rfile.restart()
        try:
            super().handle_one_request()
        except (TimeoutError, ConnectionError):
            self.close_connection = True
        if self.server.crowded:
            self.close_connection = True

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
        if self.server.crowded:
            self.send_header("Connection", "close")
            self.close_connection = True
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


class _DeadlineReader:
    """The request stream with a deadline for each request head: every read may wait at most the
    time left (and at most ``timeout``), so a client trickling a byte at a time is cut off."""

    def __init__(self, raw: BinaryIO, connection, timeout: float, deadline: float):
        self._raw, self._connection, self._timeout, self._limit = raw, connection, timeout, deadline
        self._deadline = time.monotonic() + deadline
        self._reading_head = True

    def restart(self) -> None:
        """A new request begins: its head has ``deadline`` seconds."""
        self._deadline = time.monotonic() + self._limit
        self._reading_head = True

    def readline(self, limit: int = -1) -> bytes:
        if not self._reading_head:
            return self._raw.readline(limit)
        line = bytearray()
        while limit < 0 or len(line) < limit:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("request head took too long")
            self._connection.settimeout(min(self._timeout, left))
            buffered = self._raw.peek(1)  # at most one recv, bounded by the time left
            if not buffered:
                break
            end = buffered.find(b"\n")
            take = len(buffered) if end < 0 else end + 1
            if limit >= 0:
                take = min(take, limit - len(line))
            line += self._raw.read(take)  # already buffered: no recv
            if line.endswith(b"\n"):
                break
        if bytes(line) in (b"\r\n", b"\n", b""):  # the blank line that ends the head
            self._reading_head = False
            self._connection.settimeout(self._timeout)
        return bytes(line)

    def __getattr__(self, name):
        return getattr(self._raw, name)


# --- entry points ------------------------------------------------------------------------


def make_server(
    site_dir: Path, *, host: str = "127.0.0.1", port: int = 8000, log_requests: bool = True, prefix: str | None = None, handler=None
) -> SiteServer:
    """A bound, not yet running server for ``site_dir`` (port 0 picks a free port).

    Raises PipelineError if ``site_dir`` is not a directory or the address cannot be bound.
    Call ``serve_forever()`` (possibly in a thread), then ``shutdown()`` and ``server_close()``.
    ``prefix`` (``/docs/``) serves the site under that path; ``handler`` replaces the request
    handler class (``serve/watch.py``).
    """
    root = require_dir(Path(site_dir), "site")
    try:
        return SiteServer((host, port), root.resolve(), log_requests=log_requests, prefix=normalize_prefix(prefix), handler=handler)
    except OSError as exc:
        reason = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        raise PipelineError(f"cannot listen on {host}:{port}: {reason}") from None


def serve(site_dir: Path, *, host: str = "127.0.0.1", port: int = 8000, prefix: str | None = None, log_requests: bool = True) -> None:
    """Serve ``site_dir`` until interrupted (Ctrl-C), logging one line per request to stderr."""
    server = make_server(site_dir, host=host, port=port, prefix=prefix, log_requests=log_requests)
    sys.stderr.write(f"Serving {site_dir} at {server.url} (Ctrl-C to stop)\n")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.stderr.write("stopped\n")
    finally:
        server.server_close()
