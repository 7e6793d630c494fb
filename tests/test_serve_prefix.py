"""``pipeline serve --prefix /docs/`` serves a site built with ``--base-url /docs/`` at that path."""

from __future__ import annotations

import http.client
import threading

import orjson
import pytest
from hypothesis import given, strategies as st

from conftest import write_tree
from pipeline.client import open_site
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.serve import make_server
from pipeline.serve.prefix import normalize_prefix, strip_prefix
from pipeline.site.build import build

CONTENT = {
    "guide/setup.md": "# Setup\n\nInstall it.\n\n## Configure\n\nEdit the file.\n",
    "guide/deep/usage.md": "# Usage\n\nRun it.\n",
}


@pytest.fixture(scope="module")
def prefixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("prefix")
    content = write_tree(root / "content", CONTENT)
    site = root / "site"
    build(content, site, SiteConfig(base_url="/docs/", cache_dir=root / "cache"), embedder=HashingEmbedder(), progress=False)
    server = make_server(site, host="127.0.0.1", port=0, log_requests=False, prefix="/docs/")
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield site, server
    server.shutdown()
    server.server_close()
    thread.join()


def get(server, path: str):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


def test_every_link_of_a_prefixed_build_resolves_at_the_prefix(prefixed):
    site, server = prefixed
    assert server.url.endswith("/docs/")
    queue, seen = ["/docs/index.json"], 0
    while queue:
        status, headers, body = get(server, queue.pop())
        assert status == 200 and headers["Content-Type"].startswith("application/hal+json")
        doc = orjson.loads(body)
        seen += 1
        for name, link in doc["_links"].items():
            if name in ("self", "parent", "describedby", "embeddings", "up", "alternate", "manifest", "next"):
                assert get(server, link["href"])[0] == 200, link
        for item in doc.get("items", []):  # a document's resource
            status, _, text = get(server, item["_links"]["self"]["href"])
            assert status == 200 and text == (site / doc["topic"] / item["href"]).read_bytes()
        embedded = doc.get("_embedded", {})
        queue += [t["_links"]["self"]["href"] for t in embedded.get("topics", [])]
        queue += [d["_links"]["self"]["href"] for d in embedded.get("documents", [])]
    assert seen == 3 + 2  # three folders' index.json and two documents' resources


def test_outside_the_prefix_is_not_found_and_the_bare_prefix_redirects(prefixed):
    _, server = prefixed
    assert get(server, "/index.json")[0] == 404
    assert get(server, "/docsx/index.json")[0] == 404
    status, headers, _ = get(server, "/docs")
    assert status == 301 and headers["Location"] == "/docs/"
    assert get(server, "/docs/guide/index.json?x=1")[0] == 200


def test_the_python_client_reads_the_prefixed_site(prefixed):
    _, server = prefixed
    assert [n.id for n in open_site(server.url).nodes()] == ["", "guide", "guide/deep"]


@pytest.mark.parametrize("raw, expected", [(None, "/"), ("/", "/"), ("docs", "/docs/"), ("/docs", "/docs/"), ("/a/b/", "/a/b/"), ("https://h.example/kb/", "/kb/")])
def test_prefixes_are_normalized(raw, expected):
    assert normalize_prefix(raw) == expected


def test_a_prefix_that_climbs_is_refused():
    with pytest.raises(PipelineError, match="plain URL path"):
        normalize_prefix("/docs/../etc/")


@given(st.lists(st.text("abc-_", min_size=1, max_size=4), min_size=1, max_size=3), st.text("abc/._-", max_size=12))
def test_strip_prefix_inverts_adding_it(parts, rest):
    prefix = normalize_prefix("/".join(parts))
    path = "/" + rest.lstrip("/")
    assert strip_prefix(prefix, prefix[:-1] + path) == path
    assert strip_prefix("/", path) == path
    if not path.startswith(prefix) and path != prefix[:-1]:
        assert strip_prefix(prefix, path) is None
