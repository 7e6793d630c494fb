"""pipeline serve's on-the-fly gzip (serve/compress.py): when it compresses, and that it is transparent."""

from __future__ import annotations

import gzip
import http.client

import pytest

from conftest import write_tree
from pipeline.serve import compress
from test_client_support import Served

BIG = '{"items": [' + ", ".join(f'"entry number {i}"' for i in range(200)) + "]}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    site = write_tree(tmp_path_factory.mktemp("gz"), {"data.json": BIG, "small.json": "{}", "blob.bin": "x" * 4000})
    s = Served(site)
    yield s
    s.close()


def get(served, path, headers):
    host = served.url.split("//")[1].rstrip("/")
    conn = http.client.HTTPConnection(host, timeout=5)
    conn.request("GET", path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response, body


def test_json_is_gzipped_when_asked_and_inflates_to_the_file(served):
    response, body = get(served, "/data.json", {"Accept-Encoding": "gzip, br"})
    assert response.status == 200 and response.headers["Content-Encoding"] == "gzip"
    assert response.headers["Vary"] == "Accept-Encoding" and response.headers["ETag"].endswith('-gzip"')
    assert gzip.decompress(body).decode() == BIG and len(body) < len(BIG) / 3
    again, _ = get(served, "/data.json", {"Accept-Encoding": "gzip", "If-None-Match": response.headers["ETag"]})
    assert again.status == 304


@pytest.mark.parametrize("path, headers", [
    ("/data.json", {}),  # not asked
    ("/data.json", {"Accept-Encoding": "gzip;q=0"}),  # refused
    ("/data.json", {"Accept-Encoding": "gzip", "Range": "bytes=0-9"}),  # ranges address stored bytes
    ("/small.json", {"Accept-Encoding": "gzip"}),  # too small to gain
    ("/blob.bin", {"Accept-Encoding": "gzip"}),  # not a text type
])
def test_identity_otherwise(served, path, headers):
    response, body = get(served, path, headers)
    assert "Content-Encoding" not in response.headers
    assert response.status in (200, 206) and int(response.headers["Content-Length"]) == len(body)


def test_accepts_gzip_parsing():
    assert compress.accepts_gzip("deflate, gzip;q=0.5") and compress.accepts_gzip("*")
    assert not compress.accepts_gzip("gzip;q=0") and not compress.accepts_gzip(None) and not compress.accepts_gzip("br")
