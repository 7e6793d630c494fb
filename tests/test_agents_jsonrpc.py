"""No client waits forever: over stdio, every malformed message gets a JSON-RPC error reply
(parse error, invalid request, invalid params) with its id where it has a valid one, an unknown
tool a -32602 error, and bad tool arguments (k=-3, a string for k, a missing query) a tool error
that names the argument. Checked on ``problem`` alone and on a real ``pipeline mcp`` process."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest

from pipeline.agents.jsonrpc import problem
from test_client_support import fixture_site  # noqa: F401
from test_mcp import ENV
from conftest import ROOT

OK = None
PARSE, INVALID, PARAMS, METHOD = -32700, -32600, -32602, -32601

# (line, the reply's code or OK when the line is a message the SDK takes, the reply's id)
LINES = [
    ("{not json", PARSE, None),
    ('{"jsonrpc":"2.0","id":1,"method":"tools/list"', PARSE, None),
    ("[1,2]", INVALID, None),
    ('[{"jsonrpc":"2.0","id":2,"method":"ping"}]', INVALID, None),
    ("null", INVALID, None),
    ('"hello"', INVALID, None),
    ("42", INVALID, None),
    ('{"jsonrpc":"2.0","id":11}', INVALID, 11),
    ('{"id":12,"method":"tools/list"}', INVALID, 12),
    ('{"jsonrpc":"1.0","id":13,"method":"tools/list"}', INVALID, 13),
    ('{"jsonrpc":2.0,"id":"s14","method":"tools/list"}', INVALID, "s14"),
    ('{"jsonrpc":"2.0","id":15,"method":5}', INVALID, 15),
    ('{"jsonrpc":"2.0","id":{},"method":"tools/list"}', INVALID, None),
    ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}', INVALID, None),
    ('{"jsonrpc":"2.0","id":true,"method":"tools/list"}', INVALID, None),
    ('{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', INVALID, None),
    ('{"jsonrpc":"2.0","id":17,"method":"tools/call","params":5}', PARAMS, 17),
    ('{"jsonrpc":"2.0","id":18,"method":"tools/call","params":["search"]}', PARAMS, 18),
    ('{"jsonrpc":"2.0","method":"notifications/x","params":"no"}', PARAMS, None),
    ('{"jsonrpc":"2.0","id":19,"result":5}', INVALID, 19),
    ('{"jsonrpc":"2.0","id":20,"method":"tools/list"}', OK, None),
    ('{"jsonrpc":"2.0","method":"notifications/initialized"}', OK, None),
    ('{"jsonrpc":"2.0","id":"a","result":{}}', OK, None),
    ("   ", OK, None),
]


@pytest.mark.parametrize("line, code, reply_id", LINES)
def test_each_malformed_line_has_its_error(line, code, reply_id):
    reply = problem(line)
    if code is OK:
        assert reply is None
    else:
        assert reply["jsonrpc"] == "2.0" and reply["id"] == reply_id and reply["error"]["code"] == code
        assert 10 < len(reply["error"]["message"]) < 200 and "pydantic" not in reply["error"]["message"]
        parts = reply["error"]["message"].split(": ", 1)[-1].split("; ")
        assert len(parts) == len(set(parts)), reply  # each problem said once


INIT = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}


def call(request_id, name, arguments) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})


def test_a_real_server_answers_every_malformed_message(fixture_site):
    malformed = [(line, code, rid) for line, code, rid in LINES if code is not OK]
    tool_level = [  # (line, id, the error: a JSON-RPC code, or the words of a tool error)
        ('{"jsonrpc":"2.0","id":30,"method":"nope"}', 30, METHOD),
        (call(31, "nope", {}), 31, PARAMS),
        ('{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{}}', 32, PARAMS),
        ('{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"search","arguments":"x"}}', 33, PARAMS),
        (call(34, "search", {"query": "stripe", "k": -3}), 34, "k must be an integer from 1 to 50, not -3"),
        (call(35, "search", {"query": "stripe", "k": 0}), 35, "k must be an integer from 1 to 50, not 0"),
        (call(36, "search", {"query": "stripe", "k": "abc"}), 36, "search: bad arguments: k: Input should be a valid integer"),
        (call(37, "search", {"query": ["a"]}), 37, "search: bad arguments: query: Input should be a valid string"),
        (call(38, "search", {}), 38, "search: bad arguments: query: Field required"),
        (call(39, "sample", {"topic": "handbook", "n": 0}), 39, "n must be an integer from 1 to 50"),
        (call(40, "read_document", {"document": "handbook/alpha.md", "cursor": "garbage"}), 40, "cursor is not one this server gave"),
        (call(41, "read_chunk", {"chunk_id": "handbook/alpha_chunk_99"}), 41, "chunks 0 to 10"),
        ('{"jsonrpc":"2.0","id":42,"method":"prompts/get","params":{"name":"nope"}}', 42, PARAMS),  # the SDK said code 0
    ]
    process = subprocess.Popen([sys.executable, "-m", "pipeline", "mcp", str(fixture_site)], cwd=str(ROOT),
                               env={**os.environ, **ENV}, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        lines = [json.dumps(INIT), '{"jsonrpc":"2.0","method":"notifications/initialized"}',
                 *(line for line, _, _ in malformed), *(line for line, _, _ in tool_level),
                 '{"jsonrpc":"2.0","id":"end","method":"ping"}']
        process.stdin.write(("\n".join(lines) + "\n").encode())
        process.stdin.flush()
        replies, buffer = [], b""
        deadline = time.monotonic() + 120  # a guard against the hang this test is about, not a timing assertion
        # the SDK answers requests concurrently: wait for every id, not just the final ping
        awaited = {rid for _, rid, _ in tool_level} | {"end"}
        while not awaited <= {r.get("id") for r in replies}:
            assert time.monotonic() < deadline, f"not every request was answered; replies so far: {replies}"
            ready, _, _ = select.select([process.stdout], [], [], 1)
            if ready:
                data = os.read(process.stdout.fileno(), 65536)
                assert data, "the server closed stdout"
                buffer += data
                *complete, buffer = buffer.split(b"\n")
                replies += [json.loads(r) for r in complete if r.strip()]
    finally:
        process.stdin.close()
        process.wait(timeout=30)
    assert process.returncode == 0  # a malformed message never brings the server down
    errors = [r for r in replies if "error" in r]
    # one reply per malformed message: those without a valid id as id null, in the order sent
    later = {rid for _, rid, _ in tool_level}
    assert [(r["id"], r["error"]["code"]) for r in errors if r["id"] not in later] == [(rid, code) for _, code, rid in malformed]
    by_id = {r["id"]: r for r in replies if r.get("id") is not None}
    for _, rid, expected in tool_level:
        reply = by_id[rid]
        if isinstance(expected, int):
            assert reply["error"]["code"] == expected, reply
        else:
            assert reply["result"]["isError"] and expected in reply["result"]["content"][0]["text"], reply
    assert "Unknown tool: 'nope'; tools: list_topics, search" in by_id[31]["error"]["message"]
    assert by_id["end"]["result"] == {} and by_id["init"]["result"]["serverInfo"]["name"] == "pipeline-site"


def test_over_http_every_malformed_message_has_its_error_too(fixture_site):
    """The streamable HTTP transport answered most malformed messages with -32602 ("Validation
    error: ...", a pydantic dump) and took a request whose id is not a string or integer for a
    notification (202, no body): its client waited for a reply that never came. The same check
    as stdio answers each, HTTP status 400."""
    from starlette.testclient import TestClient

    from pipeline.agents.mcp_server import create_server
    from pipeline.client.site import open_site

    app = create_server(open_site(str(fixture_site))).streamable_http_app()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:  # the Host the server allows
        init = client.post("/mcp", content=json.dumps(INIT), headers=headers)
        assert init.status_code == 200
        headers = {**headers, "mcp-session-id": init.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        answers = []
        for line, code, rid in LINES:
            if code is not OK:
                reply = client.post("/mcp", content=line, headers=headers)
                answers.append((reply.status_code, reply.json()["id"], reply.json()["error"]["code"]))
        assert answers == [(400, rid, code) for _, code, rid in LINES if code is not OK]
        tools = client.post("/mcp", content='{"jsonrpc":"2.0","id":9,"method":"tools/list"}', headers=headers)
        assert tools.status_code == 200 and '"read_chunk"' in tools.text  # well-formed messages pass through


def test_a_client_that_closes_stdin_after_its_requests_still_gets_every_reply(fixture_site):
    """``printf '...' | pipeline mcp SITE``: the end of stdin ended the SDK's session, which
    cancelled the requests it was still running, so the tool calls got no reply."""
    requests = [call(f"s{i}", "search", {"query": query}) for i, query in enumerate(("stripe", "alpha beta", "order"))]
    lines = [json.dumps(INIT), '{"jsonrpc":"2.0","method":"notifications/initialized"}', *requests,
             '{"jsonrpc":"2.0","id":"end","method":"ping"}']
    done = subprocess.run([sys.executable, "-m", "pipeline", "mcp", str(fixture_site)], cwd=str(ROOT),
                          env={**os.environ, **ENV}, input=("\n".join(lines) + "\n").encode(), capture_output=True, timeout=120)
    replies = {r["id"]: r for r in map(json.loads, done.stdout.decode().splitlines()) if r.get("id") is not None}
    assert done.returncode == 0 and set(replies) == {"init", "s0", "s1", "s2", "end"}, done.stdout.decode()[-2000:]
    assert all(not replies[f"s{i}"]["result"]["isError"] for i in range(3))
