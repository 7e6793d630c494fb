"""``pipeline serve --watch CONTENT``: rebuild on save, pages reload, a failed rebuild keeps the
previous site. Runs the real watcher (watchfiles) and server in a thread."""

from __future__ import annotations

import http.client
import threading
import time

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.serve import make_server
from pipeline.serve.watch import watch_and_serve

WAIT = 60  # seconds a rebuild may take on a loaded machine before the test gives up (not a speed check)


def get(server, path: str):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def build_id(server) -> dict:
    status, headers, body = get(server, "/kb/_pipeline/build-id")
    assert status == 200 and headers["Cache-Control"] == "no-store"
    return orjson.loads(body)


def wait_for(condition, what: str):
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"gave up waiting for {what}")


@pytest.fixture
def watched(tmp_path):
    content = write_tree(tmp_path / "content", {"guide/setup.md": "# Setup\n\nInstall it.\n\n## Configure\n\nEdit the file.\n"})
    config = SiteConfig(base_url="/kb/", embedder="hashing", cache_dir=tmp_path / "cache")
    ready: list = []
    stop = threading.Event()
    thread = threading.Thread(
        target=watch_and_serve,
        args=(content, tmp_path / "site", config),
        kwargs={"port": 0, "prefix": "/kb/", "quiet": True, "stop": stop, "on_ready": ready.append},
        daemon=True,
    )
    thread.start()
    server = wait_for(lambda: ready and ready[0], "the server")
    yield content, tmp_path / "site", server
    stop.set()
    thread.join(WAIT)
    assert not thread.is_alive()


def test_saving_a_document_rebuilds_and_changes_the_build_id(watched):
    content, site, server = watched
    first = build_id(server)
    assert first["error"] is None
    (content / "guide/setup.md").write_text("# Setup\n\nInstall it with pip.\n\n## Configure\n\nEdit the file.\n", encoding="utf-8")
    second = wait_for(lambda: (b := build_id(server))["build"] != first["build"] and b, "a rebuild")
    assert second["error"] is None
    status, _, text = get(server, "/kb/guide/_chunks/setup-0.md")
    assert status == 200 and b"Install it with pip." in text


def test_pages_get_the_reload_script_and_it_is_served(watched):
    _, site, server = watched
    status, headers, page = get(server, "/kb/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    tag = f'<script src="/kb/_pipeline/livereload.js?build={build_id(server)["build"]}"></script></body>'.encode()
    assert tag in page and page.replace(tag, b"</body>") == (site / "index.html").read_bytes()
    status, headers, script = get(server, "/kb/_pipeline/livereload.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript") and b"location.reload()" in script
    assert get(server, "/kb/index.json")[0] == 200  # everything else is the plain site


def test_a_failed_rebuild_keeps_serving_the_previous_site(watched):
    content, site, server = watched
    before = get(server, "/kb/guide/index.json")[2]
    first = build_id(server)
    (content / "guide/setup.md").write_text("# Setup\n\n```python\nnever closed\n", encoding="utf-8")
    failed = wait_for(lambda: (b := build_id(server))["error"] and b, "the failed rebuild")
    assert failed["build"] == first["build"] and "setup.md" in failed["error"]
    assert get(server, "/kb/guide/index.json")[2] == before
    (content / "guide/setup.md").write_text("# Setup\n\nFixed.\n", encoding="utf-8")
    fixed = wait_for(lambda: (b := build_id(server))["build"] != first["build"] and b, "the repaired rebuild")
    assert fixed["error"] is None and b"Fixed." in get(server, "/kb/guide/_chunks/setup-0.md")[2]


def test_plain_serve_adds_no_reload_script(watched):
    _, site, _ = watched
    server = make_server(site, port=0, log_requests=False, prefix="/kb/")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        assert get(server, "/kb/")[2] == (site / "index.html").read_bytes()
        assert get(server, "/kb/_pipeline/build-id")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
