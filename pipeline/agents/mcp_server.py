"""``pipeline mcp SITE``: a Model Context Protocol server over a built site (official ``mcp`` SDK).

Tools: ``list_topics``, ``search``, ``sample``, ``read_chunk``, ``read_document``, ``follow``
(``pipeline/agents/tools.py`` does the work); resources: every chunk as
``site://chunk/{chunk_id}`` and every document as ``site://document/{path}`` (templates), plus
``site://topics`` (the topics). Transports: stdio (default; what desktop agents spawn) and
streamable HTTP (``--transport http``). One server holds one ``Site``: index files are fetched
once, and the query embedding model is loaded on first use and kept (content/guide/clients/mcp-server.md).

Budgets (``budget.py``): every answer is compact JSON text within ``max_tokens`` (~4k tokens by
default), paged with ``next_cursor``; tool descriptions are short and ``tools/list`` carries
lean schemas (``lean_schema``). Errors: malformed JSON-RPC gets an error reply
(``jsonrpc.py``), an unknown tool a ``-32602`` error (``SiteServer.call_tool``), bad arguments
a tool error that says which argument and why, so an agent can correct its call (MCP's
"input validation errors are tool execution errors", SEP-1303).
"""

from __future__ import annotations

from typing import Literal, Optional, get_args

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ToolAnnotations
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError

from pipeline import __version__
from pipeline.agents import budget
from pipeline.agents.jsonrpc import CheckedPosts, serve_stdio
from pipeline.agents.tools import SiteTools
from pipeline.client import Site, SiteError, open_site
from pipeline.errors import PipelineError

INSTRUCTIONS = """\
Reads a documentation site built by `pipeline`: markdown documents split into chunks (sections
with their heading context), grouped in topics (folders). Answers are JSON within ~4k tokens
(max_tokens where offered); when one has next_cursor, call again with the same arguments and
cursor=next_cursor for the rest. Every chunk carries its citation: document path,
start_line-end_line (lines of the source), header_path, url (the chunk) and section_url (the
source at those lines). Workflow: search for a question; list_topics for the topics, then
list_topics(topic) for a topic's documents; sample to skim a topic or document (its first chunks
cover the whole text); read_chunk or follow(next|prev|related) around a hit; read_document for
a source file, page by page. Chunk ids look like 'guide/setup_chunk_3'."""

SearchMethod = Literal["auto", "simhash", "embedding", "keyword", "lexical", "hybrid"]
SEARCH_METHODS = get_args(SearchMethod)
"""The search tool's methods: the client's ``METHODS`` (tests/test_js_parity.py holds them equal)."""

# destructive and idempotent hints mean something only for tools that write (MCP's tool annotations)
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
TOOL = {"annotations": READ_ONLY, "structured_output": False}
"""The answer is the JSON text alone: no output schema (it would say only "an object") and no
second copy of the answer as structured content."""


def _call(fn, *args, **kwargs) -> str:
    """Run a tool; its answer as compact JSON; expected failures become tool errors whose
    message the agent can act on."""
    try:
        return budget.dumps(fn(*args, **kwargs))
    except (LookupError, ValueError, PipelineError) as exc:
        raise ToolError(str(exc)) from None


def lean_schema(schema):
    """``schema`` without what pydantic adds for people (``title``), with ``anyOf [X, null]``
    (an optional argument) as ``X`` and no ``"default": null``: the same arguments accepted, in
    fewer characters of every ``tools/list``."""
    if isinstance(schema, list):
        return [lean_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: lean_schema(v) for k, v in schema.items() if k != "title" or not isinstance(v, str)}
    options = out.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (kept,) = [o for o in options if o != {"type": "null"}]
        del out["anyOf"]
        out = {**kept, **out}
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


class SiteServer(MCPServer):
    """``MCPServer`` with lean tool schemas, ``-32602`` for an unknown tool or prompt, and argument
    errors in a line an agent can act on."""

    async def get_prompt(self, name, arguments=None, context=None):
        names = [p.name for p in await self.list_prompts()]
        if name not in names:  # the SDK's own error for it has code 0, which JSON-RPC does not define
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name!r}; prompts: {', '.join(names) or 'none'}")
        return await super().get_prompt(name, arguments, context)

    async def list_tools(self):
        return [t.model_copy(update={"input_schema": lean_schema(t.input_schema)}) for t in await super().list_tools()]

    async def call_tool(self, name, arguments, context=None):
        names = [t.name for t in await super().list_tools()]
        if name not in names:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name!r}; tools: {', '.join(names)}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                wrong = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                                  + ("" if e["type"] == "missing" else f" (got {budget.dumps(e.get('input'))[:60]})")
                                  for e in cause.errors()[:4])
                raise ToolError(f"{name}: bad arguments: {wrong}") from None
            raise

    def streamable_http_app(self, **kwargs):
        """The SDK's app, each malformed message answered with a JSON-RPC error (``jsonrpc.py``)."""
        app = super().streamable_http_app(**kwargs)
        app.add_middleware(CheckedPosts)
        return app

    async def run_stdio_async(self) -> None:
        """Serve over stdio, every malformed message answered with a JSON-RPC error (``jsonrpc.py``)."""
        lowlevel = self._lowlevel_server

        async def session(read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

        await serve_stdio(session)


def create_server(site: Site, *, embedder: str | None = None, name: str = "pipeline-site") -> SiteServer:
    """An MCP server over ``site`` (not yet running: ``server.run(...)``)."""
    tools = SiteTools(site, embedder=embedder)
    server = SiteServer(name, title=site.title or None, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    @server.tool(description="List topic ids (title, parent, documents); with `topic`, that topic's documents (path, "
                             "title, chunks).", **TOOL)
    def list_topics(topic: Optional[str] = None, cursor: Optional[str] = None) -> str:
        return _call(tools.list_topics, topic, cursor)

    @server.tool(description="Find the k (1-50) chunks that best answer `query`: text, chunk_id, citation, score. Filters: "
                             "topic (with sub-topics), keyword, is_code, promotion_level. method: auto (known questions, "
                             "then words and meaning) or one of simhash, embedding, keyword, lexical, hybrid.", **TOOL)
    def search(
        query: str,
        k: int = 5,
        topic: Optional[str] = None,
        keyword: Optional[str] = None,
        is_code: Optional[bool] = None,
        promotion_level: Optional[Literal["standard", "important", "critical"]] = None,
        method: SearchMethod = "auto",
        max_tokens: Optional[int] = None,
    ) -> str:
        return _call(tools.search, query, k, topic=topic, keyword=keyword, is_code=is_code,
                     promotion_level=promotion_level, method=method, max_tokens=max_tokens)

    @server.tool(description="Skim a topic, or one `document` of it, in stripe order: its first chunks spread over the "
                             "whole text. Up to n (1-50) chunks with text; order conceptual (from the introduction) or "
                             "technical (from the quick reference).", **TOOL)
    def sample(
        topic: str,
        n: int = 5,
        order: Optional[Literal["conceptual", "technical"]] = None,
        document: Optional[str] = None,
        cursor: Optional[str] = None,
        max_tokens: Optional[int] = None,
    ) -> str:
        return _call(tools.sample, topic, n, order=order, document=document, cursor=cursor, max_tokens=max_tokens)

    @server.tool(description="Read a chunk by id (e.g. 'guide/setup_chunk_3'): text, citation, prev/next/related ids.", **TOOL)
    def read_chunk(chunk_id: str, cursor: Optional[str] = None) -> str:
        return _call(tools.read_chunk, chunk_id, cursor)

    @server.tool(description="Read a source document by path (e.g. 'guide/setup.md') exactly as written, a page of "
                             "lines at a time, with the chunks on them.", **TOOL)
    def read_document(document: str, cursor: Optional[str] = None, max_tokens: Optional[int] = None) -> str:
        return _call(tools.read_document, document, cursor, max_tokens)

    @server.tool(description="From a chunk to the next or prev chunk of its document, or to its related chunks (the "
                             "most similar in its topic), with text.", **TOOL)
    def follow(chunk_id: str, rel: Literal["next", "prev", "related"] = "next") -> str:
        return _call(tools.follow, chunk_id, rel)

    @server.resource("site://topics", name="topics", mime_type="application/json",
                     description="The site's topics (id, title, parent, documents).")
    def topics_resource() -> str:
        return budget.dumps(tools.topics_overview())

    @server.resource("site://chunk/{+chunk_id}", name="chunk", mime_type="text/markdown",
                     description="One chunk's text (heading context + its span of the source), by chunk id.")
    def chunk_resource(chunk_id: str) -> str:
        try:
            _, ref = tools.chunk(chunk_id)
            return site.read(ref).text
        except (LookupError, ValueError, SiteError) as exc:
            raise ResourceNotFoundError(str(exc)) from None

    @server.resource("site://document/{+path}", name="document", mime_type="text/markdown",
                     description="A whole source document, by path (e.g. guide/setup.md).")
    def document_resource(path: str) -> str:
        try:
            _, doc = tools.document(path)
            return site.transport.get(doc.source).decode("utf-8", errors="replace")
        except (LookupError, ValueError, SiteError) as exc:
            raise ResourceNotFoundError(str(exc)) from None

    return server


def run(location: str, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765,
        embedder: str | None = None, timeout: float = 10.0) -> None:
    """Open the site (PipelineError when it is not one, or was built by another version), then serve."""
    from pipeline.export.source import check_site

    site = open_site(location, timeout=timeout)
    check_site(site)
    server = create_server(site, embedder=embedder)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        raise PipelineError(f"transport must be stdio or http, got {transport!r}")
