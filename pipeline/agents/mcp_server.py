"""``pipeline mcp SITE``: a Model Context Protocol server over a built site (official ``mcp`` SDK).

Tools: ``list_topics``, ``search``, ``sample``, ``read_chunk``, ``read_document``, ``follow``
(``pipeline/agents/tools.py`` does the work); resources: every chunk as
``site://chunk/{chunk_id}`` and every document as ``site://document/{path}`` (templates), plus
``site://topics`` (the topic list). Transports: stdio (default; what desktop agents spawn) and
streamable HTTP (``--transport http``). One server holds one ``Site``: index files are fetched
once, and the query embedding model is loaded on first use and kept (docs/AGENTS.md).
"""

from __future__ import annotations

import json
from typing import Any, Literal, Optional

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.types import ToolAnnotations

from pipeline import __version__
from pipeline.agents.tools import SiteTools
from pipeline.client import Site, SiteError, open_site
from pipeline.errors import PipelineError

INSTRUCTIONS = """\
This server reads a documentation site built by `pipeline`: markdown documents split into
chunks (sections with their heading context), grouped into topics (folders).
Good workflow: call list_topics once to see what exists; use search for a question
(hits carry the chunk text, its document and header path); use sample to skim a topic or
document in stripe order (the first chunks cover the whole document: an overview in a few
calls); read_chunk / follow(next|prev|related) to read around a hit; read_document only when
you need a whole source file. Chunk ids look like 'guide/setup_chunk_3'; documents are named
by path, e.g. 'guide/setup.md'."""

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _call(fn, *args, **kwargs) -> dict:
    """Run a tool; expected failures become tool errors whose message the agent can act on."""
    try:
        return fn(*args, **kwargs)
    except (LookupError, ValueError, PipelineError) as exc:
        raise ToolError(str(exc)) from None


def create_server(site: Site, *, embedder: str | None = None, name: str = "pipeline-site") -> MCPServer:
    """An MCP server over ``site`` (not yet running: ``server.run(...)``)."""
    tools = SiteTools(site, embedder=embedder)
    server = MCPServer(name, title=site.title or None, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    def list_topics() -> dict[str, Any]:
        """List the site's topics (folders of documents) with each document's path, title, number
        of chunks and promotion_level. Call this first to learn topic ids and document paths."""
        return _call(tools.list_topics)

    @server.tool(annotations=READ_ONLY)
    def search(
        query: str,
        k: int = 5,
        topic: Optional[str] = None,
        keyword: Optional[str] = None,
        is_code: Optional[bool] = None,
        promotion_level: Optional[Literal["standard", "important", "critical"]] = None,
        method: Literal["auto", "simhash", "embedding", "keyword"] = "auto",
        max_distance: Optional[int] = None,
    ) -> dict[str, Any]:
        """Find the k chunks that best answer `query` (a question or keywords). Each hit has the
        chunk's text, chunk_id, its document's path and title, header_path (where in the document
        it sits), score and the method that found it. Filters: `topic` (a topic id from
        list_topics; includes sub-topics), `keyword` (only chunks tagged with that keyword),
        `is_code` (true: code chunks only; false: prose only), `promotion_level` (only chunks of
        documents at that level). `method` "auto" tries matching known questions, then embeddings,
        then keywords; force one with "simhash", "embedding" or "keyword". Scores compare only
        within one method. Follow up with read_chunk or follow for context."""
        return _call(
            tools.search, query, k, topic=topic, keyword=keyword, is_code=is_code,
            promotion_level=promotion_level, method=method, max_distance=max_distance,
        )

    @server.tool(annotations=READ_ONLY)
    def sample(
        topic: str,
        n: int = 5,
        order: Literal["conceptual", "technical"] = "conceptual",
        document: Optional[str] = None,
    ) -> dict[str, Any]:
        """Skim a topic (or one `document` of it, by path) in stripe order: the first n chunks
        spread over the whole text, so a few of them give an overview. "conceptual" starts from
        the introduction; "technical" from the document's quick reference (code, commands) where
        it has one. Ask for more (larger n) to fill in between."""
        return _call(tools.sample, topic, n, order=order, document=document)

    @server.tool(annotations=READ_ONLY)
    def read_chunk(chunk_id: str) -> dict[str, Any]:
        """Read one chunk by id (e.g. 'guide/setup_chunk_3') with its text, header path, position
        in its document and the ids of its prev, next and related chunks."""
        return _call(tools.read_chunk, chunk_id)

    @server.tool(annotations=READ_ONLY)
    def read_document(document: str) -> dict[str, Any]:
        """Read a whole source document by path (e.g. 'guide/setup.md'), exactly as written, with
        the ids of its chunks. Prefer search/sample/read_chunk for long documents."""
        return _call(tools.read_document, document)

    @server.tool(annotations=READ_ONLY)
    def follow(chunk_id: str, rel: Literal["next", "prev", "related"] = "next") -> dict[str, Any]:
        """Move from a chunk to its neighbours: "next" or "prev" in document order (empty at either
        end), or "related" (the most similar chunks of the same topic, with their similarity)."""
        return _call(tools.follow, chunk_id, rel)

    @server.resource("site://topics", name="topics", mime_type="application/json",
                     description="The site's topics and documents (as list_topics returns them).")
    def topics_resource() -> str:
        return json.dumps(tools.list_topics(), ensure_ascii=False)

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
            return tools.read_document(path)["text"]
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
