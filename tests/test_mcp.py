"""pipeline mcp: the SDK's own client drives a real stdio session with `python -m pipeline mcp SITE`
(list tools, search, sample, read, follow, resources); the model loads once per server; bad
sites are refused before serving. Budgets and paging: tests/test_agents_budget.py; malformed
JSON-RPC: tests/test_agents_jsonrpc.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anyio
import orjson
import pytest
from mcp import Client, StdioServerParameters

from conftest import ROOT
from pipeline.agents.mcp_server import create_server
from pipeline.agents.tools import SiteTools
from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder
from test_export import manifest_path
from test_client_support import EVIL, PROMPTS, fixture_site, served_site, site_copy  # noqa: F401

TOOLS = {"list_topics", "search", "sample", "read_chunk", "read_document", "follow"}
ENV = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def server_params(site) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "pipeline", "mcp", str(site)], env=ENV, cwd=str(ROOT))


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    # the answer is its compact JSON text, once (no structured copy of it)
    assert len(result.content) == 1 and result.structured_content is None and "\n  " not in result.content[0].text
    return json.loads(result.content[0].text)


def test_a_real_stdio_session(fixture_site):
    question = PROMPTS[("handbook", "alpha", 6)][1]
    source = (fixture_site / "handbook" / "beta.md").read_text(encoding="utf-8")
    alpha = open_site(fixture_site).topic("handbook").document("alpha")

    async def session() -> dict:
        out = {}
        async with Client(server_params(fixture_site), read_timeout_seconds=60) as client:
            tools = (await client.list_tools()).tools
            out["tools"] = {t.name: t for t in tools}
            out["topics"] = await call(client, "list_topics")
            out["notes"] = await call(client, "list_topics", topic="notes")
            out["search"] = await call(client, "search", query=question, k=3)
            out["filtered"] = await call(client, "search", query="markup script text", k=5, method="keyword", promotion_level="critical")
            out["sample"] = await call(client, "sample", topic="handbook", n=4, document="handbook/alpha.md")
            out["chunk"] = await call(client, "read_chunk", chunk_id="handbook/alpha_chunk_4")
            out["next"] = await call(client, "follow", chunk_id="handbook/alpha_chunk_4", rel="next")
            out["related"] = await call(client, "follow", chunk_id="handbook/alpha_chunk_4", rel="related")
            out["document"] = await call(client, "read_document", document="handbook/beta.md")
            bad = await client.call_tool("read_chunk", {"chunk_id": "handbook/alpha_chunk_99"})
            out["bad"] = (bad.is_error, bad.content[0].text)
            templates = (await client.list_resource_templates()).resource_templates
            out["templates"] = {t.uri_template for t in templates}
            resource = await client.read_resource("site://chunk/notes/unsafe_chunk_1")
            out["resource"] = resource.contents[0].text
        return out

    got = anyio.run(session)
    assert set(got["tools"]) == TOOLS
    assert all(60 < len(t.description) < 300 for t in got["tools"].values())  # written for an agent, short
    assert {"topic", "keyword", "is_code", "promotion_level", "method", "max_tokens"} <= set(got["tools"]["search"].input_schema["properties"])
    assert {"cursor", "max_tokens"} <= set(got["tools"]["sample"].input_schema["properties"])
    assert "title" not in json.dumps([t.input_schema for t in got["tools"].values()])  # lean schemas
    assert [t["id"] for t in got["topics"]["topics"]] == ["handbook", "notes"] and got["topics"]["topics"][1]["documents"] == 1
    assert got["notes"]["documents"] == [{"path": "notes/unsafe.md", "title": "Unsafe Markup", "chunks": 2, "promotion_level": "critical"}]
    hit = got["search"]["hits"][0]
    assert (hit["chunk_id"], hit["document"], hit["header_path"], hit["method"]) == (
        "handbook/alpha_chunk_6", "handbook/alpha.md", "## Caching Vectors", "simhash")
    assert hit["score"] == 1.0 and "cached by content hash" in hit["text"]
    # its citation: the source lines that hold it, the chunk's URL and its section's
    lines = (fixture_site / "handbook" / "alpha.md").read_text(encoding="utf-8").split("\n")[hit["start_line"] - 1:hit["end_line"]]
    assert hit["text"].endswith("\n".join(lines).strip())
    assert (hit["url"], hit["section_url"]) == ("/handbook/_chunks/alpha-6.md", "/#topic=handbook&doc=alpha&chunk=6")
    assert {h["document"] for h in got["filtered"]["hits"]} == {"notes/unsafe.md"}
    assert [c["chunk_id"] for c in got["sample"]["chunks"]] == [f"handbook/alpha_chunk_{i}" for i in alpha.reading_order()[:4]]
    assert got["chunk"]["links"]["prev"] == "handbook/alpha_chunk_3" and got["chunk"]["links"]["next"] == "handbook/alpha_chunk_5"
    assert got["chunk"]["text"].endswith("A stripe order spreads the first chunks across the whole document.")
    assert [c["chunk_id"] for c in got["next"]["chunks"]] == ["handbook/alpha_chunk_5"]
    assert [c["chunk_id"] for c in got["related"]["chunks"]] == got["chunk"]["links"]["related"] != []
    assert got["document"]["text"] == source and "next_cursor" not in got["document"]
    beta = open_site(fixture_site).topic("handbook").document("beta")
    assert got["document"]["chunks"] == [{"chunk_id": f"handbook/beta_chunk_{c.index}", "start_line": c.start_line,
                                          "end_line": c.end_line} for c in beta.items]
    assert got["document"]["start_line"] == 1 and got["document"]["end_line"] == got["document"]["total_lines"] == source.count("\n")
    assert got["bad"][0] and "chunks 0 to 10" in got["bad"][1]
    assert got["templates"] == {"site://chunk/{+chunk_id}", "site://document/{+path}"}
    assert EVIL in got["resource"]


def test_the_query_model_is_loaded_once_per_server(fixture_site, monkeypatch):
    import pipeline.client.sitesearch as client_site  # embedder_for is read there

    built = []

    def counting(model):
        built.append(model)
        return HashingEmbedder(int(model.split("-")[1]))

    monkeypatch.setattr(client_site, "embedder_for", counting)
    assert SiteTools(open_site(fixture_site)).search("deployment pages", method="embedding")["hits"]
    assert built == []  # by default the site's static encoder embeds the query: no model
    server = create_server(open_site(fixture_site), embedder="full")

    async def session():
        async with Client(server) as client:
            for query in ("deployment pages", "vectors cached", "stripe order"):
                result = await client.call_tool("search", {"query": query, "method": "embedding"})
                assert not result.is_error and json.loads(result.content[0].text)["hits"][0]["method"] == "embedding"

    anyio.run(session)
    assert built == ["hashing-384"]


def test_an_explicit_embedder_is_built_once(fixture_site, monkeypatch):
    import pipeline.embedding.registry as registry

    built = []
    real = registry.make_embedder
    monkeypatch.setattr(registry, "make_embedder", lambda spec: built.append(spec) or real(spec))
    tools = SiteTools(open_site(fixture_site), embedder="hashing")
    for query in ("deployment pages", "vectors cached"):
        assert tools.search(query, method="embedding")["hits"]
    assert built == ["hashing"]


def test_tool_errors_say_what_exists(fixture_site):
    tools = SiteTools(open_site(fixture_site))
    with pytest.raises(LookupError, match="topics: 'handbook', 'notes'"):
        tools.sample("handbok")  # the closest first
    with pytest.raises(ValueError, match="not a chunk id"):
        tools.read_chunk("alpha")
    with pytest.raises(LookupError, match="its documents: 'handbook/alpha.md', 'handbook/beta.md'"):
        tools.read_document("handbook/gamma.md")
    with pytest.raises(ValueError, match="standard, important, critical"):
        tools.search("x", promotion_level="urgent")
    for k in (-3, 0, 51, True, "5"):  # issue 34: k=-3 gave [] where it is a mistake
        with pytest.raises(ValueError, match=f"k must be an integer from 1 to 50, not {k!r}"):
            tools.search("stripe order", k)
    with pytest.raises(ValueError, match="n must be an integer from 1 to 50"):
        tools.sample("handbook", 0)
    with pytest.raises(ValueError, match="max_tokens must be an integer from 500 to 20000"):
        tools.read_document("handbook/beta.md", max_tokens=100)
    assert tools.follow("handbook/alpha_chunk_0", "prev")["chunks"] == []
    by_name = [c["chunk_id"] for c in tools.sample("handbook", 2, document="beta")["chunks"]]
    assert by_name == [c["chunk_id"] for c in tools.sample("handbook", 2, document="handbook/beta.md")["chunks"]]


def run_cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", "mcp", *args], capture_output=True, text=True,
                          env={**os.environ, **ENV}, timeout=60, stdin=subprocess.DEVNULL)


def test_not_a_site_is_refused_before_serving(tmp_path, served_site):
    for location in (str(tmp_path), served_site.url + "handbook/_chunks/"):
        result = run_cli(location)
        assert result.returncode == 1 and "not a pipeline site" in result.stderr and result.stdout == ""


def test_a_site_built_by_an_older_version_is_refused(site_copy):
    manifest = manifest_path(site_copy, "handbook", "alpha")
    data = orjson.loads(manifest.read_bytes())
    data["manifest_version"] = 1
    manifest.write_bytes(orjson.dumps(data))
    result = run_cli(str(site_copy))
    assert result.returncode == 1 and "older version" in result.stderr and manifest.name in result.stderr


def test_streamable_http_transport(fixture_site):
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "mcp", str(fixture_site), "--transport", "http", "--port", str(port)],
        env={**os.environ, **ENV}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # wait until the server listens (not a timing assertion: a bounded wait)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.2)

        async def session():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                return await call(client, "read_chunk", chunk_id="notes/unsafe_chunk_0")

        assert anyio.run(session)["document"] == "notes/unsafe.md"
    finally:
        process.terminate()
        process.wait(timeout=30)
