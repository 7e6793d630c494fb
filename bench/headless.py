"""Headless Chromium for benchmarks: a driver, a static file server, and what a page fetched.

The same Debian ``chromium`` + ``chromedriver`` and flags as the page tests
(``tests/test_browser.py``); benchmarks that need them skip with a clear message when they are
missing (:class:`Unavailable`). What a page fetched is read from the Resource Timing API
(same-origin, so sizes are exposed): one entry per request, ``encodedBodySize`` = body bytes
over the wire (gzip-compressed when served so), the measure ``bench/search_bytes.py`` uses for
the Python client. The HTTP cache is disabled through DevTools, so every load is cold.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
from pathlib import Path
from typing import Any, Iterator

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
]

# Before any page script runs: keep every resource entry (the default buffer holds 250).
_KEEP_ENTRIES = "performance.setResourceTimingBufferSize(1000000);"


class Unavailable(RuntimeError):
    """Chromium, chromedriver or selenium is missing: the benchmark step is skipped."""


def driver(profile: Path):
    """A headless Chromium (selenium) with the HTTP cache off and all resource entries kept."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium and chromedriver):
        raise Unavailable("chromium and chromedriver are not installed (`make browser` installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:  # pragma: no cover - selenium is a test dependency
        raise Unavailable(f"selenium is not installed: {error}") from error
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    d = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    d.set_script_timeout(600)
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _KEEP_ENTRIES})
    return d


def fetched(d, since: float = 0.0) -> dict[str, Any]:
    """Requests the current page made that started at or after ``since`` (ms, performance.now()),
    the page's own HTML included when ``since`` is 0: count, body bytes and the paths."""
    entries = d.execute_script(
        "return performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))"
        ".filter(e => e.startTime >= arguments[0])"
        ".map(e => [new URL(e.name).pathname, e.encodedBodySize, e.transferSize])",
        since,
    )
    return {
        "requests": len(entries),
        "bytes": sum(int(size) for _, size, _ in entries),
        "paths": sorted(path for path, _, _ in entries),
    }


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # the benchmark prints its own summary
        pass


@contextlib.contextmanager
def static_server(root: Path) -> Iterator[str]:
    """Serve ``root`` as plain files (no compression) on a free local port; yields its URL."""
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
