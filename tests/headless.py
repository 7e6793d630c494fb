"""Headless Chromium for the page tests and the browser benchmarks: a driver, a static file server, and what a page fetched.

The same Debian ``chromium`` + ``chromedriver`` as the page tests, and the flags they import from here
(``tests/test_browser.py``); benchmarks that need them skip with a clear message when they are
missing (:class:`Unavailable`). What a page fetched is read from the DevTools network events
(``goog:loggingPrefs`` performance log), so requests made by web workers (Pagefind searches in
one) count too: one ``Network.requestWillBeSent`` per request, bytes = ``Network.loadingFinished``
``encodedDataLength``: what crossed the wire for it, response headers included (gzip-compressed
bodies when served so). The HTTP cache is disabled through DevTools, so every load is cold.
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

class Unavailable(RuntimeError):
    """Chromium, chromedriver or selenium is missing: the benchmark step is skipped."""


def chromium(profile: Path, *, log: str):
    """A headless Chromium (selenium) with ``FLAGS``, its profile in ``profile``, keeping every
    entry of the ``log`` log (``performance``: network events; ``browser``: the console)."""
    chromium_path = shutil.which("chromium") or shutil.which("chromium-browser")
    chromedriver = shutil.which("chromedriver")
    if not (chromium_path and chromedriver):
        raise Unavailable("chromium and chromedriver are not installed (`make browser` installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:  # pragma: no cover - selenium is a test dependency
        raise Unavailable(f"selenium is not installed: {error}") from error
    options = webdriver.ChromeOptions()
    options.binary_location = chromium_path
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {log: "ALL"})
    return webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)


def driver(profile: Path):
    """A headless Chromium (selenium) with the HTTP cache off and all resource entries kept."""
    d = chromium(profile, log="performance")
    d.set_script_timeout(600)
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.setCacheDisabled", {"cacheDisabled": True})
    return d


def network(d) -> list[tuple[str, int]]:
    """(URL path, bytes over the wire) of every HTTP request since the previous call (the first
    call: since the driver started); ``about:``/``data:`` URLs are not requests."""
    import json
    from urllib.parse import urlsplit

    urls: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for entry in d.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent" and params["request"]["url"].startswith("http"):
            urls.setdefault(params["requestId"], urlsplit(params["request"]["url"]).path)
        elif method == "Network.loadingFinished":
            sizes[params["requestId"]] = int(params.get("encodedDataLength", 0))
    return [(path, sizes.get(rid, 0)) for rid, path in urls.items()]


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
