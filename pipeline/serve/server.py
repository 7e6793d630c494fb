"""The server of ``pipeline serve``: a threading HTTP server whose connections wait in one head
reader (``serve/connections.py``) and whose workers answer with ``serve/handler.py``."""

from __future__ import annotations

import errno
import sys
from concurrent.futures import ThreadPoolExecutor
from http.server import HTTPServer
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fsutil import require_dir
from pipeline.terminal import escape_controls
from pipeline.serve.prefix import normalize_prefix
from pipeline.serve.connections import Connection, HeadReader
from pipeline.serve.handler import SiteRequestHandler


def _default_max_connections() -> int:
    """Half the descriptors this process may open, at most 1024 (each connection is one)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return 256
    return max(64, min(1024, (soft if soft > 0 else 1024) // 2))

class SiteServer(HTTPServer):
    """An HTTP server for the files under ``site_root`` (a resolved path).

    Connections (``serve/connections.py``): one thread holds every connection between requests
    and reads the request heads, ``max_workers`` threads answer whole heads, so slow or idle
    clients hold no worker. A head has ``head_deadline`` seconds from its first byte (or from the
    connection's opening), an idle keep-alive connection lasts ``idle_timeout`` seconds, at most
    ``max_connections`` are open (the one waiting longest for a head makes room for a new one);
    the kernel queues up to ``request_queue_size`` connections not yet accepted. A worker gets
    ``SiteRequestHandler.timeout`` seconds per socket read or write.
    """

    request_queue_size = 1024  # listen backlog (the kernel caps it at net.core.somaxconn)
    max_workers = 32
    max_connections = _default_max_connections()
    head_deadline = 10.0
    idle_timeout = 15.0

    def __init__(self, address: tuple[str, int], site_root: Path, *, log_requests: bool = True, prefix: str = "/", handler=None):
        self.site_root = site_root
        self.log_requests = log_requests
        self.prefix = prefix  # URL path the site is served under (serve/prefix.py)
        super().__init__(address, handler or SiteRequestHandler)
        self._workers = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix="pipeline-serve")
        self._closing = False
        self._heads = HeadReader(self._dispatch, head_deadline=self.head_deadline, idle_timeout=self.idle_timeout,
                                 max_connections=self.max_connections)

    def process_request(self, request, client_address) -> None:
        """A new connection waits for its first head in the head reader, not in a thread."""
        self._heads.add(Connection(request, client_address), new=True)

    def _dispatch(self, conn: Connection) -> None:
        try:
            self._workers.submit(self._answer, conn)
        except RuntimeError:  # shutting down
            self._heads.close(conn)

    def _answer(self, conn: Connection) -> None:
        """Answer the request whose head ``conn`` holds; the connection then waits for its next
        head, or closes when the response said so."""
        keep = False
        try:
            conn.sock.setblocking(True)
            conn.sock.settimeout(self.RequestHandlerClass.timeout)
            handler = self.RequestHandlerClass(conn, conn.address, self)
            keep = not handler.close_connection and not self._closing
        except Exception as exc:  # noqa: BLE001 - one connection's failure must not end a worker
            if self.log_requests:
                sys.stderr.write(escape_controls(f"error on a connection: {type(exc).__name__}: {exc}") + "\n")
        if keep:
            self._heads.add(conn)
        else:
            self._heads.close(conn)

    @property
    def open_connections(self) -> int:
        return self._heads.open

    def server_close(self) -> None:
        self._closing = True
        super().server_close()
        if hasattr(self, "_heads"):  # else binding failed in __init__, which calls this
            self._heads.stop()
            self._workers.shutdown(wait=False, cancel_futures=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{port}{self.prefix}"


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
