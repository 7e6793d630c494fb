"""``pipeline serve --watch CONTENT``: build CONTENT into the site, serve it, rebuild on every
save (``watchfiles``) and make open pages reload, like ``mkdocs serve``.

Reloading: only in this mode, the server adds one ``<script src>`` to each HTML page it sends
(an external script, so the search page's ``script-src 'self'`` policy allows it) and answers
two URLs of its own under the site's prefix, never files of the site:

* ``_pipeline/livereload.js?build=ID``: polls ``_pipeline/build-id`` once a second and reloads
  the page when the id differs from the ``ID`` the page was served with;
* ``_pipeline/build-id``: ``{"build": ID, "error": message or null}``, ``no-store``.

The id changes after each successful rebuild (and per server start). A failed rebuild keeps
serving the previous site (builds are atomic), prints the error and sets ``error``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass, field
from html import escape as html_escape
from http import HTTPStatus
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import orjson

from pipeline.config import SiteConfig
from pipeline.errors import PipelineError, environment_error
from pipeline.fsutil import require_dir
from pipeline.quiet import info
from pipeline.serve.prefix import normalize_prefix, strip_prefix
from pipeline.serve.handler import SiteRequestHandler
from pipeline.serve.server import SiteServer, make_server

ENDPOINT_DIR = "/_pipeline/"
BUILD_ID = "build-id"
SCRIPT = "livereload.js"

LIVERELOAD_JS = """// pipeline serve --watch: reload this page when the site is rebuilt.
(() => {
  const me = new URL(document.currentScript.src);
  const seen = me.searchParams.get("build");
  const url = new URL("build-id", me);
  const tick = async () => {
    try {
      const answer = await (await fetch(url, { cache: "no-store" })).json();
      if (answer.build !== seen) { location.reload(); return; }
    } catch (e) { /* the server is restarting: try again */ }
    setTimeout(tick, 1000);
  };
  setTimeout(tick, 1000);
})();
"""


@dataclass
class BuildStatus:
    """What the reload endpoint reports; updated by the watch loop, read by request threads."""

    start: str = field(default_factory=lambda: format(time.time_ns(), "x"))
    count: int = 0
    error: str | None = None

    @property
    def build_id(self) -> str:
        return f"{self.start}-{self.count}"


class WatchHandler(SiteRequestHandler):
    """The site handler plus the two reload URLs and the script tag in HTML pages. Its server
    carries a ``status`` (``BuildStatus``), set by ``watch_and_serve``."""

    def do_GET(self) -> None:
        if not self._reload_endpoint():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._reload_endpoint():
            super().do_HEAD()

    def _reload_endpoint(self) -> bool:
        target = strip_prefix(self.server.prefix, self.path)
        path = urlsplit(target).path if target is not None else ""
        status = self.server.status
        if path == ENDPOINT_DIR + BUILD_ID:
            body = orjson.dumps({"build": status.build_id, "error": status.error})
            self._send_bytes(body, "application/json; charset=utf-8")
            return True
        if path == ENDPOINT_DIR + SCRIPT:
            self._send_bytes(LIVERELOAD_JS.encode("utf-8"), "text/javascript; charset=utf-8")
            return True
        return False

    def _send_bytes(self, body: bytes, ctype: str) -> None:
        self._send_head(
            HTTPStatus.OK,
            {"Content-Type": ctype, "Content-Length": str(len(body)), "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"},
        )
        if self.command == "GET":
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the tab was closed mid-poll
                self.close_connection = True

    def _send_file(self, handle, st: os.stat_result, ctype: str, caching: str = "no-cache") -> None:
        if not ctype.startswith("text/html"):
            return super()._send_file(handle, st, ctype, caching)
        # A page: sent whole with the script added (no Range, no validators: it changes per build).
        html = handle.read()
        src = html_escape(f"{self.server.prefix}_pipeline/{SCRIPT}?build={self.server.status.build_id}", quote=True)
        tag = f'<script src="{src}"></script>'.encode()
        at = html.rfind(b"</body>")
        self._send_bytes(html[:at] + tag + html[at:] if at >= 0 else html + tag, ctype)


@dataclass
class Watcher:
    """Rebuilds ``content`` into ``site`` with ``config``; counts successes in ``status``."""

    content: Path
    site: Path
    config: SiteConfig
    quiet: bool = False
    status: BuildStatus = field(default_factory=BuildStatus)
    _embedder: object | None = None  # made once: a model loads once per session

    def build(self) -> bool:
        from pipeline.embedding.registry import make_embedder
        from pipeline.site.build import build

        try:
            if self._embedder is None:
                self._embedder = make_embedder(self.config.embedder)
            report = build(self.content, self.site, self.config, embedder=self._embedder, progress=not self.quiet)
        except (PipelineError, OSError) as error:  # an OSError as the command line shows it
            error = error if isinstance(error, PipelineError) else PipelineError(environment_error(error))
            self.status.error = str(error)
            print(f"error: {error} (still serving the previous build)", file=sys.stderr, flush=True)
            return False
        self.status.error = None
        self.status.count += 1
        info(f"built {self.site}: {report.summary()}")
        return True


def watch_and_serve(
    content: Path,
    site: Path,
    config: SiteConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    prefix: str | None = None,
    quiet: bool = False,
    watch_paths: tuple[Path, ...] = (),
    stop: threading.Event | None = None,
    on_ready: Callable[[SiteServer], None] | None = None,
) -> None:
    """Build, serve and rebuild on changes under ``content`` (and ``watch_paths``, e.g. the
    config file) until Ctrl-C or ``stop`` is set. ``on_ready`` gets the running server.
    Raises PipelineError when the first build fails and there is no previous site to serve."""
    import watchfiles

    content, site = require_dir(Path(content), "content"), Path(site)
    if quiet:
        logging.getLogger("watchfiles").setLevel(logging.ERROR)
    watcher = Watcher(content, site, config, quiet=quiet)
    if not watcher.build() and not site.is_dir():
        raise PipelineError(f"the first build failed: {watcher.status.error}", path=content)
    server = make_server(site, host=host, port=port, prefix=normalize_prefix(prefix), log_requests=not quiet, handler=WatchHandler)
    server.status = watcher.status
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    info(f"Serving {site} at {server.url}, rebuilding on changes in {content} (Ctrl-C to stop)")
    if on_ready is not None:
        on_ready(server)
    try:
        for _changes in watchfiles.watch(content, *watch_paths, stop_event=stop, raise_interrupt=False, debounce=300):
            watcher.build()
    except KeyboardInterrupt:  # Ctrl-C during a build; between builds watchfiles returns
        pass
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
        info("stopped")
