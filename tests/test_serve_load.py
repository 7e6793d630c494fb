"""pipeline serve under hostile and heavy use, on loopback only (127.0.0.1), bounded in count
and time: absurd Range headers, 200 concurrent clients, slow clients, control characters in
logged paths."""

from __future__ import annotations

import http.client
import io
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pipeline.serve import make_server
from pipeline.serve.server import SiteRequestHandler, SiteServer

BODY = bytes(range(256)) * 4


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    (root / "index.json").write_text('{"_links": {}}', encoding="utf-8")
    (root / "vectors.bin").write_bytes(BODY)
    return root


def start(site, **attrs):
    srv = make_server(site, host="127.0.0.1", port=0, log_requests=False)
    for name, value in attrs.items():
        setattr(srv, name, value)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return srv, thread


def stop(srv, thread):
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=30)


@pytest.fixture
def server(site):
    srv, thread = start(site)
    yield srv
    stop(srv, thread)


def get(server, path="/vectors.bin", headers=None, timeout=30):
    host, port = server.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("header", "status"),
    [
        ("bytes=" + "9" * 5000 + "-", 416),
        ("bytes=0-" + "9" * 5000, 206),
        ("bytes=-" + "9" * 5000, 206),
        ("bytes=" + "0" * 5000 + "5-6", 206),
        ("bytes=" + "9" * 5000 + "-" + "9" * 5001, 416),
        ("bytes=" + "1" * 8000, 200),  # malformed: the whole file
        ("bytes=\x00-\xff", 200),
    ],
)
def test_absurd_ranges_get_416_or_bytes_never_silence(server, header, status):
    code, headers, body = get(server, headers={"Range": header})
    assert code == status
    if status == 206:
        assert body == BODY[int(headers["Content-Range"].split()[1].split("-")[0]) :][: len(body)] and body
    if status == 200:
        assert body == BODY


def test_an_unexpected_error_is_a_500_not_a_dropped_connection(server, monkeypatch):
    def boom(self, *args):
        raise RuntimeError("bug")

    monkeypatch.setattr(SiteRequestHandler, "_send_file", boom)
    code, _, body = get(server)
    assert code == 500 and body == b"internal error\n"
    monkeypatch.undo()
    assert get(server)[0] == 200  # and the server lives on


def test_the_listen_backlog_is_real():
    assert SiteServer.request_queue_size >= 256


def test_200_concurrent_clients_are_all_answered(site):
    """200 clients at once, 3 requests each: none unanswered (each client waits up to 60 s)."""
    srv, thread = start(site)
    try:
        barrier = threading.Barrier(200, timeout=60)

        def client(_):
            barrier.wait()
            return [get(srv, timeout=60)[0] for _ in range(3)]

        with ThreadPoolExecutor(max_workers=200) as pool:
            results = list(pool.map(client, range(200)))
    finally:
        stop(srv, thread)
    assert [code for codes in results for code in codes] == [200] * 600


def test_slow_clients_cannot_hold_more_than_max_workers(site, monkeypatch):
    """40 clients that send half a request and stall: threads stay bounded, they are cut off
    after the timeout, and a normal client is still answered."""
    monkeypatch.setattr(SiteServer, "max_workers", 8)
    monkeypatch.setattr(SiteRequestHandler, "timeout", 0.5)
    monkeypatch.setattr(SiteRequestHandler, "request_deadline", 1.0)
    before = threading.active_count()
    srv, thread = start(site)
    slow = []
    try:
        host, port = srv.server_address[:2]
        for _ in range(40):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(b"GET /vectors.bin HTTP/1.1\r\nHost: x\r\n")  # never finishes the head
            slow.append(s)
        peak = 0
        for _ in range(20):
            peak = max(peak, threading.active_count() - before)
            time.sleep(0.02)
        assert peak <= 8 + 1  # the workers plus serve_forever's thread
        assert get(srv, timeout=60)[0] == 200
        dropped = 0
        for s in slow:
            s.settimeout(30)
            try:
                data = s.recv(100)
            except OSError:
                data = b""
            dropped += data == b"" or data.startswith(b"HTTP/1.1 408") or data.startswith(b"HTTP/1.1 400")
        assert dropped == 40
    finally:
        for s in slow:
            s.close()
        stop(srv, thread)


def test_a_trickling_client_is_cut_off_at_the_deadline(site, monkeypatch):
    monkeypatch.setattr(SiteRequestHandler, "timeout", 5)
    monkeypatch.setattr(SiteRequestHandler, "request_deadline", 0.5)
    srv, thread = start(site)
    try:
        s = socket.create_connection(srv.server_address[:2], timeout=10)
        s.sendall(b"GET /vectors.bin HTTP/1.1\r\n")
        cut = False
        for _ in range(20):  # one header byte every 0.1 s: no read waits long, the head never ends
            try:
                s.sendall(b"X")
            except OSError:
                cut = True
                break
            time.sleep(0.1)
        if not cut:  # 2 s have passed, far beyond the 0.5 s deadline: the server has hung up
            s.settimeout(3)  # < the 5 s read timeout, so only the deadline can have closed it
            try:
                cut = s.recv(100) == b""
            except ConnectionResetError:
                cut = True
            except TimeoutError:
                cut = False
        s.close()
        assert cut
    finally:
        stop(srv, thread)


def test_logged_paths_are_escaped(site, monkeypatch):
    srv = make_server(site, host="127.0.0.1", port=0, log_requests=True)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    thread.start()
    try:
        s = socket.create_connection(srv.server_address[:2], timeout=10)
        s.sendall(b"GET /\x1b[2J\x1b]0;pwned\x07 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while s.recv(4096):
            pass
        s.close()
    finally:
        stop(srv, thread)
    log = err.getvalue()
    assert log and "\x1b" not in log and "\x07" not in log and "\\x1b[2J" in log
