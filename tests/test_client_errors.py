"""pipeline.client given bad input: clear errors naming the URL or file, never a hang or a read
outside the site."""

from __future__ import annotations

import shutil
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import orjson
import pytest

from pipeline.client import (
    CorruptIndex,
    FetchFailed,
    NotASite,
    NotFound,
    SiteError,
    VectorFormatError,
    open_site,
)
from conftest import document_resource
from test_client_support import Served, edit_item, fixture_site, index_of, served_site, site_copy  # noqa: F401


# --- bad input: clear errors naming the URL, never a hang -------------------------------------


def test_a_directory_without_index_json_is_not_a_site(tmp_path):
    site = open_site(tmp_path)  # no read yet: the root is checked on first use
    with pytest.raises(NotASite, match="no index.json") as info:
        site.check()
    assert info.value.url == str(tmp_path.resolve() / "index.json")
    # a search finds no _search/ either, falls back to the walk from the root, and says why
    for method in ("auto", "lexical", "hybrid"):
        with pytest.raises(NotASite, match="no index.json"):
            open_site(tmp_path).search("alpha", 3, method=method)
    with pytest.raises(NotASite, match="no such directory"):
        open_site(tmp_path / "missing")


def test_the_root_is_read_once_and_only_when_needed(served_site):
    site = open_site(served_site.url)
    fetched = []
    original = site.transport.get
    site.transport.get = lambda rel: fetched.append(rel) or original(rel)
    assert fetched == [] and site.search("cache headers", 3, method="lexical")  # a search: no root
    assert "index.json" not in fetched
    with ThreadPoolExecutor(max_workers=8) as pool:  # many first uses at once: one fetch
        titles = list(pool.map(lambda _: site.title, range(16)))
    assert len(set(titles)) == 1 and fetched.count("index.json") == 1


@pytest.mark.parametrize("body", [b"[1, 2]", b'{"hello": "world"}', b"<!doctype html><p>home</p>", b"{broken"])
def test_other_json_or_html_is_not_a_site(tmp_path, body):
    (tmp_path / "index.json").write_bytes(body)
    with pytest.raises(NotASite) as info:
        open_site(tmp_path).check()
    assert str(info.value).startswith(str(tmp_path.resolve() / "index.json") + ": ")


def test_a_url_that_is_not_a_site(tmp_path):
    (tmp_path / "index.html").write_text("<h1>a blog</h1>", encoding="utf-8")
    served = Served(tmp_path)
    try:
        site = open_site(served.url)
        assert site.transport.requests == 0  # open_site makes no request
        with pytest.raises(NotASite, match="no index.json") as info:
            site.title
        assert info.value.url == served.url + "index.json"
        with pytest.raises(NotASite, match="no index.json"):
            open_site(served.url).search("a blog", 3)
    finally:
        served.close()


def test_a_corrupt_topic_index_names_its_url(site_copy):
    (site_copy / "handbook" / "index.json").write_bytes(b'{"_embedded": {"chunks": ')
    with pytest.raises(CorruptIndex, match="not valid JSON") as info:
        open_site(site_copy).sample("handbook", 1)
    assert info.value.url.endswith("handbook/index.json")


def test_a_malformed_chunk_list_names_the_file_and_the_field(site_copy):
    edit_item(site_copy, "handbook", "alpha", 2, lambda item: item.pop("href"))
    position = [i["index"] for i in document_resource(site_copy, "handbook", "alpha")["items"]]
    with pytest.raises(CorruptIndex, match=r"items\[\d+\]\.href: missing") as info:
        open_site(site_copy).topic("handbook")
    assert info.value.url.endswith("handbook/_index/alpha.doc.json") and position


def test_a_chunk_href_leaving_the_topic_is_refused(site_copy):
    edit_item(site_copy, "handbook", "alpha", 2, lambda item: item.update(href="../../etc/passwd"))
    with pytest.raises(CorruptIndex, match="leaves the topic directory"):
        open_site(site_copy).topic("handbook")


def test_a_site_of_the_previous_format_is_named_so(site_copy):
    index = index_of(site_copy, "")
    del index["index_version"]
    (site_copy / "index.json").write_bytes(orjson.dumps(index))
    with pytest.raises(CorruptIndex, match="older pipeline.*rebuild the site"):
        open_site(site_copy).topics()


def test_a_missing_chunk_is_not_found_with_its_url(site_copy):
    opened = open_site(site_copy)
    first = opened.plan_sample("handbook", 1)[0]
    (site_copy / first.path).unlink()
    with pytest.raises(NotFound) as info:
        opened.sample("handbook", 1)
    assert info.value.url == first.href


def test_a_missing_chunk_over_http_is_not_found_with_its_url(site_copy):
    served = Served(site_copy)
    try:
        opened = open_site(served.url)
        first = opened.plan_sample("handbook", 1)[0]
        (site_copy / first.path).unlink()
        with pytest.raises(NotFound, match=r"HTTP 404") as info:
            opened.sample("handbook", 1)
        assert info.value.url == served.url + first.path
    finally:
        served.close()


def test_a_truncated_embeddings_file_names_its_url(site_copy):
    path = site_copy / "handbook" / "_embeddings.bin"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(VectorFormatError, match="truncated: expected") as info:
        open_site(site_copy).search("vectors numbers", 3, method="embedding")
    assert str(info.value).startswith(str(path.resolve()))


def test_stale_embeddings_are_reported(site_copy):
    from pipeline.siteformat import vectors

    path = site_copy / "handbook" / "_embeddings.bin"
    table = vectors.decode(path.read_bytes())
    docs, start = [], 0
    for name, count in table.documents:
        docs.append((name, table.vectors[start : start + count - (name == "beta")]))
        start += count
    path.write_bytes(vectors.encode(table.model, docs))
    with pytest.raises(SiteError, match="holds 3 rows for 'beta' but the index lists 4"):
        open_site(site_copy).embeddings("handbook")
    shutil.rmtree(site_copy / "_search")  # a site without the index: its search walks the topics' files
    with pytest.raises(SiteError, match="holds 3 rows for 'beta' but the index lists 4"):
        open_site(site_copy).search("vectors", 3, method="embedding")


class _Silent(BaseHTTPRequestHandler):
    """Answers nothing (headers never come), or drips a body slowly, until the client gives up."""

    def do_GET(self):
        if self.path.startswith("/drip"):
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            try:
                while not self.server.stop.wait(0.05):
                    self.wfile.write(b" ")
                    self.wfile.flush()
            except OSError:
                pass
            return
        self.server.stop.wait(30)

    def log_message(self, *args):
        pass


@pytest.fixture
def stalling_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    server.daemon_threads = True
    server.stop = threading.Event()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.stop.set()
    server.shutdown()
    server.server_close()


def test_a_server_that_never_answers_times_out(stalling_server):
    with pytest.raises(FetchFailed, match="timed out after 0.3 s") as info:
        open_site(stalling_server, timeout=0.3).check()
    assert info.value.url == stalling_server + "index.json"


def test_a_body_that_never_ends_times_out(stalling_server):
    with pytest.raises(FetchFailed, match="timed out") as info:
        open_site(stalling_server + "drip/index.json", timeout=0.3).check()
    assert info.value.url == stalling_server + "drip/index.json"


def test_a_refused_connection_is_reported():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchFailed, match="cannot connect") as info:
        open_site(f"http://127.0.0.1:{port}/", timeout=2).check()
    assert info.value.url == f"http://127.0.0.1:{port}/index.json"


def test_local_reads_stay_inside_the_site(site_copy, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("secret", encoding="utf-8")
    (site_copy / "handbook" / "_chunks" / "alpha-2.md").unlink()
    (site_copy / "handbook" / "_chunks" / "alpha-2.md").symlink_to(secret)
    opened = open_site(site_copy)
    ref = opened.topic("handbook").document("alpha").items[2]
    with pytest.raises(NotFound):
        opened.read(ref)
