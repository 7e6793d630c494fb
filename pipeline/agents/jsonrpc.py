"""Every malformed message a client sends over stdio gets a JSON-RPC error reply (issue 35).

The ``mcp`` SDK's stdio transport turns a line it cannot validate into an exception that its
dispatcher only logs, and reads a request whose ``id`` is not a string or integer as a
notification: no reply, so a client waiting on that id waits forever. ``problem`` checks each
line as JSON-RPC 2.0 and MCP define a message, before the SDK sees it, and says what is wrong:

- ``-32700`` parse error: not JSON (the id cannot be known: ``"id": null``);
- ``-32600`` invalid request: a batch (MCP has none since 2025-06-18), not an object, no
  ``"jsonrpc": "2.0"``, an id that is not a string or integer (MCP forbids null), a ``method``
  that is not a string, neither a method nor a result or error, or what the SDK's own message
  model rejects;
- ``-32602`` invalid params: ``params`` present but not an object.

The reply carries the message's id when it has a valid one, else null. A blank line is skipped
(there is nothing to answer). Unknown methods (``-32601``), tools (``-32602``) and a tool's
arguments are the server's to answer (``mcp_server.py``). ``serve_stdio`` runs a server with
``problem`` between stdin and the SDK; ``CheckedPosts`` puts it before the streamable HTTP app
(whose own check answered most of these -32602 with a pydantic dump, and took a request with an
id of the wrong type for a notification: 202, no reply).

The end of stdin ends the SDK's session, cancelling what it still runs: a client that writes its
requests and closes its end (``printf ... | pipeline mcp SITE``) got no answer. ``serve_stdio``
holds the end of stdin back until every request read has its reply (``_Pending``; at most
``DRAIN_SECONDS``).
"""

from __future__ import annotations

import sys
from io import TextIOWrapper

import anyio
import orjson
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError


def _error(request_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _kind(value) -> str:
    """The JSON name of ``value``'s type."""
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(value), "number")


def _valid_id(value) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def problem(line: str | bytes) -> dict | None:
    """The error response (a JSON-RPC object) for a malformed message ``line``, or None when the
    line is a message the SDK takes, or blank."""
    if not line.strip():
        return None
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return _error(None, PARSE_ERROR, f"Parse error: not JSON ({exc})")
    if isinstance(message, list):
        return _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported; send one JSON object a line")
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {_kind(message)}")
    request_id = message.get("id")
    if "id" in message and not _valid_id(request_id):
        return _error(None, INVALID_REQUEST, f"Invalid Request: id must be a string or an integer, not {orjson.dumps(request_id).decode()[:40]}")
    reply_id = request_id if _valid_id(request_id) else None
    if message.get("jsonrpc") != "2.0":
        return _error(reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            return _error(reply_id, INVALID_REQUEST, "Invalid Request: method must be a string")
        if "params" in message and not isinstance(message["params"], dict):
            return _error(reply_id, INVALID_PARAMS, f"Invalid params: params of {message['method']} must be an object")
    elif "result" not in message and "error" not in message:
        return _error(reply_id, INVALID_REQUEST, 'Invalid Request: no "method" (and no "result" or "error" of a response)')
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        # a union's members each report their own errors: the same line twice says nothing more
        parts = dict.fromkeys(f"{'.'.join(str(p) for p in e['loc'][1:]) or 'message'}: {e['msg']}" for e in exc.errors())
        where = "; ".join(list(parts)[:3])
        return _error(reply_id, INVALID_REQUEST, f"Invalid Request: {where}")
    return None


class _Replies:
    """The transport's write stream, once it exists: malformed lines are answered on it."""

    def __init__(self) -> None:
        self.ready = anyio.Event()
        self.stream = None

    async def send(self, reply: dict) -> None:
        await self.ready.wait()
        error = JSONRPCError(jsonrpc="2.0", id=reply["id"], error=ErrorData(**reply["error"]))
        try:
            await self.stream.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session ended: no one to answer


DRAIN_SECONDS = 300
"""How long the end of stdin waits for the replies still owed (a tool that never returns)."""


class _Pending:
    """The ids of the requests read and not yet answered."""

    def __init__(self) -> None:
        self.ids: set = set()
        self.answered = anyio.Event()

    def read(self, line: str) -> None:
        message = orjson.loads(line)
        if "method" in message and _valid_id(message.get("id")):
            self.ids.add(message["id"])

    def replied(self, message) -> None:
        message = getattr(message, "root", message)
        if hasattr(message, "result") or hasattr(message, "error"):
            self.ids.discard(getattr(message, "id", None))
            if not self.ids:
                self.answered.set()

    async def drained(self) -> None:
        with anyio.move_on_after(DRAIN_SECONDS):
            while self.ids:
                self.answered = anyio.Event()
                await self.answered.wait()


class _Watched:
    """A session's write stream that tells ``pending`` of each reply it carries."""

    def __init__(self, stream, pending: _Pending) -> None:
        self.stream, self.pending = stream, pending

    async def send(self, item) -> None:
        await self.stream.send(item)
        if isinstance(item, SessionMessage):
            self.pending.replied(item.message)

    async def __aenter__(self):
        await self.stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        return await self.stream.__aexit__(*exc)

    def __getattr__(self, name):
        return getattr(self.stream, name)


async def _checked(lines, replies: _Replies, pending: _Pending | None = None):
    """The lines of ``lines`` that are messages; the others answered through ``replies``. With
    ``pending``, the last line is followed by a wait for the replies still owed."""
    async for line in lines:
        reply = problem(line)
        if reply is not None:
            await replies.send(reply)
        elif line.strip():
            if pending is not None:
                pending.read(line)
            yield line
    if pending is not None:
        await pending.drained()


async def serve_stdio(run, stdin=None) -> None:
    """Serve over stdin/stdout: ``run(read_stream, write_stream)`` (a server's session) gets the
    messages of well-formed lines; the others are answered here. ``stdin``: an async iterable of
    lines (default: the process's stdin, decoded as UTF-8 as the SDK does)."""
    if stdin is None:
        # its own reader of fd 0 that never closes it (the SDK's stdio_server does the same)
        stdin = anyio.wrap_file(TextIOWrapper(open(sys.stdin.fileno(), "rb", closefd=False), encoding="utf-8", errors="replace"))
    replies, pending = _Replies(), _Pending()
    async with stdio_server(stdin=_checked(stdin, replies, pending)) as (read_stream, write_stream):
        replies.stream = write_stream
        replies.ready.set()
        await run(read_stream, _Watched(write_stream, pending))


class CheckedPosts:
    """ASGI middleware: a POST whose body ``problem`` finds malformed is answered with that
    JSON-RPC error (HTTP 400) before the app sees it; any other request passes unchanged. A body
    over ``limit`` bytes passes unread, for the app's own size check."""

    def __init__(self, app, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        read, body, more = [], b"", True
        while more and len(body) <= self.limit:
            message = await receive()
            read.append(message)
            if message["type"] != "http.request":
                break
            body, more = body + message.get("body", b""), message.get("more_body", False)
        reply = problem(body) if not more and body.strip() else None
        if reply is not None:
            data = orjson.dumps(reply)
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
            return await send({"type": "http.response.body", "body": data})

        async def replay():
            return read.pop(0) if read else await receive()

        await self.app(scope, replay, send)
