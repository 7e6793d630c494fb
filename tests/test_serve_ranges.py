"""pipeline.serve's byte ranges (RFC 9110 §14) over loopback, and its range parser."""

from __future__ import annotations

import pytest

from pipeline.serve import ByteRange, Unsatisfiable, parse_range
from test_serve import BODY, request, server, site  # noqa: F401  (the served site and its fixtures)


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-0", 0, 0),
        ("bytes=10-19", 10, 19),
        ("bytes=1000-5000", 1000, 1023),  # end clamped to the file
        ("bytes=1000-", 1000, 1023),
        ("bytes=0-", 0, 1023),
        ("bytes=-24", 1000, 1023),
        ("bytes=-5000", 0, 1023),  # suffix longer than the file: all of it
        ("BYTES = 3 - 5", 3, 5),
    ],
)
def test_single_range_returns_exact_bytes(server, header, first, last):
    status, headers, body = request(server, "GET", "/vectors.bin", {"Range": header})
    assert status == 206
    assert body == BODY[first : last + 1]
    assert headers["Content-Range"] == f"bytes {first}-{last}/{len(BODY)}"
    assert headers["Content-Length"] == str(last - first + 1)
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Accept-Ranges"] == "bytes"


@pytest.mark.parametrize("header", ["bytes=1024-", "bytes=5000-6000", "bytes=-0"])
def test_unsatisfiable_range_is_416(server, header):
    status, headers, _ = request(server, "GET", "/vectors.bin", {"Range": header})
    assert status == 416
    assert headers["Content-Range"] == f"bytes */{len(BODY)}"


def test_range_on_empty_file(server):
    assert request(server, "GET", "/empty.bin", {"Range": "bytes=0-"})[0] == 416
    status, headers, body = request(server, "GET", "/empty.bin", {"Range": "bytes=-10"})
    assert (status, body, headers["Content-Length"]) == (200, b"", "0")


@pytest.mark.parametrize(
    "header",
    ["bytes=abc", "bytes=5-2", "bytes=-", "items=0-5", "bytes 0-5", "bytes=0-5,10-20", "bytes=0x10-", ""],
)
def test_malformed_or_multiple_ranges_get_the_whole_file(server, header):
    status, headers, body = request(server, "GET", "/vectors.bin", {"Range": header})
    assert status == 200
    assert body == BODY
    assert "Content-Range" not in headers


def test_range_is_ignored_on_head(server):
    status, headers, body = request(server, "HEAD", "/vectors.bin", {"Range": "bytes=0-9"})
    assert (status, body) == (200, b"")
    assert headers["Content-Length"] == str(len(BODY))


def test_if_range_with_stale_etag_sends_whole_file(server):
    etag = request(server, "HEAD", "/vectors.bin")[1]["ETag"]
    status, _, body = request(server, "GET", "/vectors.bin", {"Range": "bytes=0-9", "If-Range": etag})
    assert (status, body) == (206, BODY[:10])
    status, _, body = request(server, "GET", "/vectors.bin", {"Range": "bytes=0-9", "If-Range": '"stale"'})
    assert (status, body) == (200, BODY)


def test_parse_range_directly():
    assert parse_range(None, 10) is None
    assert parse_range("bytes=2-4", 10) == ByteRange(2, 4, 10)
    assert parse_range("bytes=-3", 10) == ByteRange(7, 9, 10)
    with pytest.raises(Unsatisfiable):
        parse_range("bytes=10-", 10)
    assert parse_range("bytes=\u0663-\u0665", 10) is None  # Arabic-Indic digits are not digits here
