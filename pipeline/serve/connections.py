"""The connections of ``pipeline serve``: one thread reads every request head, workers answer.

A thread per connection let ~150 clients that trickle their headers hold every worker while the
others waited (27 s in an audit), and idle keep-alive connections held workers too. Here one
thread (``HeadReader``, a ``selectors`` loop) holds every connection that is not being answered:
new ones, idle keep-alive ones and slow ones cost a socket, no thread. A connection goes to a
worker only once a whole request head is in (a worker never waits on a slow client's head), and
comes back after the response; a worker never reads the socket (``RequestInput``), so neither
a slow head nor a slow body can hold one. Guarantees:

* a head must arrive within ``head_deadline`` seconds of its first byte (or of the connection's
  opening): else ``408`` and the connection closes; an idle keep-alive connection closes after
  ``idle_timeout``; a head over ``MAX_HEAD`` bytes gets ``431`` (``414`` when its request line
  alone is), and bytes that cannot start an HTTP request (a TLS hello) or a malformed field
  line (no colon, space before it, a folded line) get ``400``;
* at most ``max_connections`` connections are open: at the limit the one waiting longest for
  its next head is closed to make room (a slow or idle client, never one being answered);
* a connection closed by the server after a response said ``Connection: close`` in it, and is
  closed gracefully (``shutdown`` then draining what the client still sends, for up to
  ``LINGER`` seconds), so the response is never lost to a reset.
"""

from __future__ import annotations

import itertools
import re
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field
from http import HTTPStatus

from pipeline.serve.rules import CORS_HEADERS

MAX_HEAD = 64 * 1024  # bytes of a request line and its headers (nginx allows 4 x 8 KiB)
MAX_REQUEST_LINE = 8 * 1024
LINGER = 2.0  # seconds a closing connection is drained before it is closed
_TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# A field line (RFC 9112 §5): a token, then the colon at once; no folded (obs-fold) lines.
_FIELD_LINE = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")


@dataclass(eq=False)
class Connection:
    """A client socket and the bytes read from it that no request consumed yet."""

    sock: socket.socket
    address: tuple
    buffer: bytearray = field(default_factory=bytearray)
    deadline: float = 0.0
    since: tuple = (0.0, 0)  # when it began waiting for its current head, and its turn (eviction order)
    idle: bool = False  # kept alive after a response, no byte of the next head yet
    closing: bool = False  # draining before close: its bytes are discarded


def response(status: HTTPStatus, *, extra: dict[str, str] | None = None) -> bytes:
    """A whole short plain-text response that closes the connection (errors met before a head is
    parsed, answered without a handler), worded as the handler words its own errors."""
    reason = status.phrase
    body = f"{reason}\n".encode()
    headers = {**CORS_HEADERS, **(extra or {}), "Content-Type": "text/plain; charset=utf-8",
               "Content-Length": str(len(body)), "Connection": "close"}
    head = f"HTTP/1.1 {status.value} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    return head.encode("latin-1") + body


def head_end(buffer: bytearray) -> int:
    """The offset just past the blank line that ends the head at the start of ``buffer``; -1
    when it is not in yet."""
    ends = [at + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (at := buffer.find(mark)) >= 0]
    return min(ends, default=-1)  # the first: a later one may be in a body


def head_problem(buffer: bytearray) -> HTTPStatus | None:
    """Why the head begun in ``buffer`` can never be served, or None."""
    if buffer and buffer[0] not in _TOKEN:  # a method is a token: a TLS hello or garbage is not
        return HTTPStatus.BAD_REQUEST
    line_end = buffer.find(b"\n")
    if (line_end < 0 and len(buffer) > MAX_REQUEST_LINE) or line_end > MAX_REQUEST_LINE:
        return HTTPStatus.REQUEST_URI_TOO_LONG
    end = head_end(buffer)
    if len(buffer) > MAX_HEAD and end < 0:
        return HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
    if end >= 0 and not all(_FIELD_LINE.match(line) for line in bytes(buffer[line_end + 1:end]).splitlines()[:-1]):
        # The standard parser takes the lines after a malformed one for a body, so a
        # Content-Length among them is lost and the body answered as the next request.
        return HTTPStatus.BAD_REQUEST
    return None


class HeadReader:
    """The thread that holds every connection between requests (see the module docstring).
    ``dispatch(connection)`` is called (on this thread) with each connection whose buffer starts
    with a whole head; the worker returns it with ``add`` or ends it with ``close``."""

    def __init__(self, dispatch, *, head_deadline: float, idle_timeout: float, max_connections: int):
        self._dispatch = dispatch
        self.head_deadline, self.idle_timeout, self.max_connections = head_deadline, idle_timeout, max_connections
        self._selector = selectors.DefaultSelector()
        self._incoming: list[tuple[Connection, str]] = []  # (connection, "new" | "again" | "closing")
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._waiting: set[Connection] = set()  # registered, waiting for a head
        self._turns = itertools.count()
        self.open = 0  # connections open: waiting here or being answered
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="pipeline-serve-heads", daemon=True)
        self._thread.start()

    # -- called from other threads ---------------------------------------------------------------
    def add(self, conn: Connection, *, new: bool = False) -> None:
        """Take ``conn`` (a new connection, or one whose response was sent) to wait for a head."""
        with self._lock:
            if new:
                self.open += 1
            if self._stopped:  # the server is closing: nothing waits any more
                self.open -= 1
                conn.sock.close()
                return
            conn.since = (time.monotonic(), next(self._turns))
            self._incoming.append((conn, "new" if new else "again"))
        self._wake()

    def close(self, conn: Connection) -> None:
        """End ``conn`` gracefully: no more writes, drain what the client sends, then close."""
        try:
            conn.sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._forget(conn)
            return
        with self._lock:
            if not self._stopped:
                self._incoming.append((conn, "closing"))
                conn = None
        if conn is not None:  # the server is closing: no drain
            self._forget(conn)
            return
        self._wake()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            incoming, self._incoming = self._incoming, []
        self._wake()
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            if key.data is not None:
                key.data.sock.close()
        for conn, _ in incoming:
            conn.sock.close()
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:  # the pipe is full (it wakes anyway) or closed (stopping)
            pass

    # -- the loop ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stopped:
            now = time.monotonic()
            waits = [c.deadline for c in self._waiting] or [now + 1.0]
            for key, _ in self._selector.select(timeout=max(0.0, min(min(waits) - now, 1.0))):
                if key.data is None:
                    self._drain_wake()
                else:
                    self._readable(key.data)
            self._take_incoming()
            self._expire(time.monotonic())

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _take_incoming(self) -> None:
        with self._lock:
            incoming, self._incoming = self._incoming, []
        now = time.monotonic()
        for conn, how in incoming:
            conn.closing = how == "closing"
            conn.idle = how == "again" and not conn.buffer
            if conn.closing:
                conn.buffer.clear()
                conn.deadline = now + LINGER
            else:  # a new connection's head, or a pipelined one begun already; else idle
                conn.deadline = now + (self.idle_timeout if conn.idle else self.head_deadline)
            try:
                conn.sock.setblocking(False)
                self._selector.register(conn.sock, selectors.EVENT_READ, conn)
            except (OSError, ValueError):
                self._forget(conn)
                continue
            self._waiting.add(conn)
            if not conn.closing and conn.buffer:
                self._check(conn)  # a whole head may be buffered already
        self._make_room()

    def _make_room(self) -> None:
        """At the limit, close the connections waiting longest for a head (idle or slow)."""
        while self.open > self.max_connections:
            candidates = [c for c in self._waiting if not c.closing]
            if not candidates:
                break
            self._drop(min(candidates, key=lambda c: c.since))

    def _readable(self, conn: Connection) -> None:
        try:
            data = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        if conn.closing:
            return  # drained and discarded
        if conn.idle:  # the next head begins: it has head_deadline from now
            conn.idle = False
            conn.deadline = time.monotonic() + self.head_deadline
        conn.buffer += data
        self._check(conn)

    def _check(self, conn: Connection) -> None:
        """Hand ``conn`` to a worker when its head is in; refuse a head that cannot be served."""
        while conn.buffer[:1] in (b"\r", b"\n"):  # blank lines before a request line are ignored (RFC 9112 §2.2)
            del conn.buffer[:1]
        problem = head_problem(conn.buffer)
        if problem is not None:
            self._refuse(conn, problem)
        elif head_end(conn.buffer) >= 0:
            self._unregister(conn)
            self._dispatch(conn)

    def _expire(self, now: float) -> None:
        for conn in [c for c in self._waiting if c.deadline <= now]:
            if conn.closing or not conn.buffer:
                self._drop(conn)  # drained, or idle: nothing was asked
            else:
                self._refuse(conn, HTTPStatus.REQUEST_TIMEOUT)

    def _refuse(self, conn: Connection, status: HTTPStatus) -> None:
        """Answer ``status`` and close: a short response fits a socket's send buffer at once;
        a client that let it fill up is dropped instead (this thread never waits on one)."""
        data = response(status)
        try:
            sent = conn.sock.send(data)
        except OSError:
            sent = 0
        if sent != len(data):
            self._drop(conn)
            return
        self._unregister(conn)
        self.close(conn)

    def _unregister(self, conn: Connection) -> None:
        self._waiting.discard(conn)
        try:
            self._selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass

    def _drop(self, conn: Connection) -> None:
        self._unregister(conn)
        self._forget(conn)

    def _forget(self, conn: Connection) -> None:
        try:
            conn.sock.close()
        finally:
            with self._lock:
                self.open -= 1


class ResponseOutput:
    """The response stream: each write sent whole (``sendall``, the handler's timeout), unbuffered."""

    def __init__(self, sock: socket.socket):
        self._sock = sock

    def write(self, data: bytes) -> int:
        self._sock.sendall(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class RequestInput:
    """A request's input: the bytes the head reader buffered (the whole head, and what followed
    it). It never reads the socket, so a worker never waits for a client's bytes: a body not
    in with its head (a slow one) cannot hold a worker; what is not taken stays for the next
    request."""

    def __init__(self, conn: Connection):
        self._conn = conn

    def readline(self, limit: int = -1) -> bytes:
        buffer = self._conn.buffer
        end = buffer.find(b"\n")
        if end >= 0 and (limit < 0 or end < limit):
            return self._take(end + 1)
        return self._take(len(buffer) if limit < 0 else min(limit, len(buffer)))

    def drop(self, size: int) -> bool:
        """Discard the next ``size`` bytes (a request body) when they are all in; else False."""
        if not 0 <= size <= len(self._conn.buffer):
            return False
        del self._conn.buffer[:size]
        return True

    def _take(self, n: int) -> bytes:
        out = bytes(self._conn.buffer[:n])
        del self._conn.buffer[:n]
        return out

    def close(self) -> None:
        """Nothing to release: the connection outlives its requests."""
