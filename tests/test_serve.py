"""pipeline.serve over loopback: types, validators, CORS, directories, confinement (ranges:
test_serve_ranges.py)."""

from __future__ import annotations

import http.client
import os
import threading
from email.utils import formatdate
from pathlib import Path

import pytest

from pipeline.errors import PipelineError
from pipeline.serve import make_server

BODY = bytes(range(256)) * 4  # 1024 bytes, every offset distinguishable
EXPOSE = "Content-Range, Content-Length, ETag, Accept-Ranges"


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "_chunks").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "both").mkdir()
    (root / "empty-dir").mkdir()
    (root / "index.json").write_text('{"_links": {"self": {"href": "/"}}}', encoding="utf-8")
    (root / "docs" / "index.json").write_text('{"_links": {}}', encoding="utf-8")
    (root / "both" / "index.json").write_text("{}", encoding="utf-8")
    (root / "both" / "index.html").write_text("<p>hi</p>", encoding="utf-8")
    (root / "_chunks" / "guide-0.md").write_text("# Guide\n\nÉtude.\n", encoding="utf-8")
    (root / "vectors.bin").write_bytes(BODY)
    (root / "empty.bin").write_bytes(b"")
    (root / "other.json").write_text("[]", encoding="utf-8")
    (root / "docs" / "_index").mkdir()
    (root / "docs" / "_index" / "guide.doc.json").write_text('{"_links": {}}', encoding="utf-8")
    (root / "simhash.js").write_text("export {};\n", encoding="utf-8")
    (root / "style.css").write_text("p{}", encoding="utf-8")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n")
    (root / ".index.json.abc.tmp").write_text("half written", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET", encoding="utf-8")
    (root / "leak.txt").symlink_to(secret)
    (root / "leakdir").symlink_to(tmp_path)
    (root / "alias.md").symlink_to(root / "_chunks" / "guide-0.md")
    return root


@pytest.fixture
def server(site: Path):
    srv = make_server(site, host="127.0.0.1", port=0, log_requests=False)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join()


def request(server, method: str, path: str, headers: dict[str, str] | None = None):
    """(status, headers as a case-insensitive message, body) for one request on a new connection."""
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.putrequest(method, path, skip_host=False, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        body = response.read()
        return response.status, response.headers, body
    finally:
        conn.close()


# --- content and types ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "ctype"),
    [
        ("/index.json", "application/hal+json; charset=utf-8"),
        ("/docs/index.json", "application/hal+json; charset=utf-8"),
        ("/other.json", "application/json; charset=utf-8"),
        ("/docs/_index/guide.doc.json", "application/hal+json; charset=utf-8"),  # a document's resource
        ("/_chunks/guide-0.md", "text/markdown; charset=utf-8"),
        ("/simhash.js", "text/javascript; charset=utf-8"),
        ("/vectors.bin", "application/octet-stream"),
        ("/style.css", "text/css; charset=utf-8"),
        ("/logo.png", "image/png"),
        ("/alias.md", "text/markdown; charset=utf-8"),
    ],
)
def test_files_are_served_with_their_types(server, site, path, ctype):
    status, headers, body = request(server, "GET", path)
    assert status == 200
    assert headers["Content-Type"] == ctype
    target = site / path.lstrip("/")
    assert body == target.read_bytes()
    assert headers["Content-Length"] == str(len(body))
    assert headers["Accept-Ranges"] == "bytes"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_query_strings_are_ignored(server, site):
    status, _, body = request(server, "GET", "/_chunks/guide-0.md?v=3")
    assert status == 200 and body == (site / "_chunks" / "guide-0.md").read_bytes()


def test_percent_encoded_names_are_decoded(server, site):
    (site / "a file é.md").write_text("x", encoding="utf-8")
    status, _, body = request(server, "GET", "/a%20file%20%C3%A9.md")
    assert (status, body) == (200, b"x")


def test_head_has_headers_but_no_body(server):
    status, headers, body = request(server, "HEAD", "/vectors.bin")
    assert status == 200
    assert body == b""
    assert headers["Content-Length"] == str(len(BODY))
    assert headers["ETag"]


def test_head_of_a_missing_file_has_no_body(server):
    status, _, body = request(server, "HEAD", "/nope.md")
    assert (status, body) == (404, b"")


def test_other_methods_are_not_allowed(server):
    status, headers, _ = request(server, "POST", "/index.json", {"Content-Length": "0"})
    assert status == 405
    assert headers["Allow"] == "GET, HEAD, OPTIONS"


# --- directories -----------------------------------------------------------------------------


def test_directory_serves_index_json(server, site):
    status, headers, body = request(server, "GET", "/docs/")
    assert status == 200
    assert headers["Content-Type"] == "application/hal+json; charset=utf-8"
    assert body == (site / "docs" / "index.json").read_bytes()


def test_root_serves_index_json(server, site):
    status, _, body = request(server, "GET", "/")
    assert (status, body) == (200, (site / "index.json").read_bytes())


def test_directory_prefers_index_html(server):
    status, headers, body = request(server, "GET", "/both/")
    assert (status, body) == (200, b"<p>hi</p>")
    assert headers["Content-Type"] == "text/html; charset=utf-8"


def test_directory_without_index_is_not_listed(server):
    status, _, body = request(server, "GET", "/empty-dir/")
    assert status == 404
    assert b"index" not in body


def test_directory_without_slash_redirects(server):
    status, headers, _ = request(server, "GET", "/docs?x=1")
    assert status == 301
    assert headers["Location"] == "/docs/?x=1"


def test_file_with_trailing_slash_is_not_found(server):
    assert request(server, "GET", "/other.json/")[0] == 404


# --- validators ------------------------------------------------------------------------------


def test_etag_and_if_none_match(server, site):
    status, headers, _ = request(server, "GET", "/_chunks/guide-0.md")
    etag = headers["ETag"]
    assert status == 200 and etag.startswith('"') and etag.endswith('"')
    assert headers["Last-Modified"]

    status, headers, body = request(server, "GET", "/_chunks/guide-0.md", {"If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert headers["ETag"] == etag
    assert headers["Access-Control-Allow-Origin"] == "*"

    for header in [f'"other", {etag}', f"W/{etag}", "*"]:
        assert request(server, "GET", "/_chunks/guide-0.md", {"If-None-Match": header})[0] == 304
    assert request(server, "GET", "/_chunks/guide-0.md", {"If-None-Match": '"other"'})[0] == 200


def test_etag_changes_when_the_file_changes(server, site):
    path = site / "_chunks" / "guide-0.md"
    etag = request(server, "HEAD", "/_chunks/guide-0.md")[1]["ETag"]
    path.write_text("# Guide, rewritten and longer\n", encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    status, headers, body = request(server, "GET", "/_chunks/guide-0.md", {"If-None-Match": etag})
    assert status == 200
    assert headers["ETag"] != etag
    assert body == path.read_bytes()


def test_if_modified_since(server, site):
    mtime = (site / "other.json").stat().st_mtime
    later = formatdate(mtime + 60, usegmt=True)
    earlier = formatdate(mtime - 60, usegmt=True)
    assert request(server, "GET", "/other.json", {"If-Modified-Since": later})[0] == 304
    assert request(server, "GET", "/other.json", {"If-Modified-Since": earlier})[0] == 200
    assert request(server, "GET", "/other.json", {"If-Modified-Since": "garbage"})[0] == 200


# --- CORS ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/index.json", {}),
        ("GET", "/vectors.bin", {"Range": "bytes=0-1"}),
        ("GET", "/vectors.bin", {"Range": "bytes=9999-"}),
        ("GET", "/missing", {}),
        ("HEAD", "/index.json", {}),
    ],
)
def test_cors_headers_on_every_response(server, method, path, headers):
    _, got, _ = request(server, method, path, headers)
    assert got["Access-Control-Allow-Origin"] == "*"
    assert got["Access-Control-Expose-Headers"] == EXPOSE


def test_content_named_search_files_are_immutable_and_the_rest_revalidated(server, site):
    (site / "_search" / "terms").mkdir(parents=True)
    (site / "_search" / "terms" / "0123456789ab.json").write_text("{}", encoding="utf-8")
    (site / "_search" / "meta.json").write_text("{}", encoding="utf-8")
    immutable = "public, max-age=31536000, immutable"
    assert request(server, "GET", "/_search/terms/0123456789ab.json")[1]["Cache-Control"] == immutable
    assert request(server, "GET", "/_search/terms/0123456789ab.json", {"Accept-Encoding": "gzip"})[1]["Cache-Control"] == immutable
    for path in ("/_search/meta.json", "/index.json", "/_chunks/guide-0.md", "/docs/"):
        assert request(server, "GET", path)[1]["Cache-Control"] == "no-cache", path


def test_the_host_configs_cache_what_pipeline_serve_caches():
    # build/nginx.conf and build/_headers say what rules.cache_control says
    import re

    from pipeline.serve.rules import IMMUTABLE, cache_control

    root = Path(__file__).resolve().parent.parent / "build"
    nginx = (root / "nginx.conf").read_text(encoding="utf-8")
    block = re.search(r"map \$uri \$cache_control \{(.*?)\n\}", nginx, re.S)
    lines = re.findall(r'^\s*(\S+)\s+"([^"]+)";', block[1], re.M)
    assert lines[-1] == ("default", "no-cache") and "add_header Cache-Control $cache_control always;" in nginx
    assert len(lines) >= 3 and all(value == IMMUTABLE for _, value in lines[:-1])
    regexes = [re.compile(key.removeprefix("~")) for key, _ in lines[:-1]]
    headers = (root / "_headers").read_text(encoding="utf-8")
    rules = re.findall(r"^(/_(?:search|assets)/\S+)\n\s+Cache-Control: (.+)$", headers, re.M)
    assert len(rules) >= 2 and all(value == IMMUTABLE for _, value in rules)
    netlify = [re.compile("^" + re.escape(key).replace(":folder", "[^/]+").replace("\\*", ".*") + "$") for key, _ in rules]
    for path in ("_search/terms/0123456789ab.json", "_search/vectors/a.bin", "_search/meta.json", "_search/records.json",
                 "guide/index.json", "_chunks/a-0.md", "llms.txt", "_search", "guide/_search/terms/x.json",
                 "_assets/app-0123456789ab.js", "_assets/app.js", "_assets/client.js", "guide/_assets/app-0123456789ab.js"):
        want = cache_control(path) == IMMUTABLE
        assert any(r.search("/" + path) for r in regexes) == want, path
        assert any(r.match("/" + path) for r in netlify) == want, path
    assert cache_control("_assets/app-0123456789ab.js") == IMMUTABLE and cache_control("_assets/app.js") != IMMUTABLE


def test_options_preflight(server):
    status, headers, body = request(
        server,
        "OPTIONS",
        "/_chunks/guide-0.md",
        {"Origin": "https://example.org", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "range"},
    )
    assert (status, body) == (204, b"")
    assert headers["Access-Control-Allow-Origin"] == "*"
    assert headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"
    assert headers["Access-Control-Allow-Headers"] == "Range, If-None-Match"
    assert "Content-Length" not in headers


# --- confinement -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/_chunks/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/_chunks/%2e%2e/%2e%2e/secret.txt",
        "/..%5csecret.txt",
        "/%00",
        "/leak.txt",
        "/leakdir/secret.txt",
        "/leakdir/",
        "/.index.json.abc.tmp",
        "/%2eindex.json.abc.tmp",
        "//etc/passwd",
        "/etc/passwd",
        "http://example.org/../secret.txt",
        "/%ff%fe",
        "secret.txt",
    ],
)
def test_paths_outside_the_site_are_refused(server, path):
    status, _, body = request(server, "GET", path)
    assert status in (400, 403, 404)
    assert b"SECRET" not in body
    assert b"half written" not in body


def test_absolute_target_inside_the_site_is_served(server, site):
    status, _, body = request(server, "GET", "http://127.0.0.1/other.json")
    assert (status, body) == (200, b"[]")


def test_keep_alive_serves_several_requests_on_one_connection(server):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        for path, expected in [("/other.json", b"[]"), ("/vectors.bin", BODY), ("/nope", b"not found\n")]:
            conn.request("GET", path)
            assert conn.getresponse().read() == expected
    finally:
        conn.close()


def test_make_server_rejects_a_missing_directory(tmp_path):
    with pytest.raises(PipelineError, match="site directory not found"):
        make_server(tmp_path / "nope", port=0)


def test_make_server_reports_a_busy_port(site):
    first = make_server(site, port=0, log_requests=False)
    try:
        with pytest.raises(PipelineError, match="cannot listen"):
            make_server(site, port=first.server_address[1], log_requests=False)
    finally:
        first.server_close()
