"""``pipeline topics|sample|search|export|mcp|linkcheck``: the commands that read a built site
(a folder or an http(s) URL) through ``pipeline.client`` and friends. Only parses arguments
and prints; registered on the main command line by ``cli.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pipeline.cli_common import QuietOption, fail as _fail, quiet as _quiet, show_warnings as _show_warnings
from pipeline.errors import PipelineError
from pipeline.terminal import escape_line, for_terminal
from pipeline.wording import counted

site_app = typer.Typer()

SiteArgument = typer.Argument(..., help="A built site: http(s) URL or directory.")
TimeoutOption = typer.Option(10.0, "--timeout", help="Seconds each request may take.")
JsonOption = typer.Option(False, "--json", help="JSON output.")


@site_app.command()
def topics(site: str = SiteArgument, timeout: float = TimeoutOption, as_json: bool = JsonOption) -> None:
    """List a site's sections and topics by following its links."""
    from pipeline.client import open_site
    from pipeline.client.render import as_json as render_json, nodes_text

    try:
        nodes = open_site(site, timeout=timeout).nodes()
    except PipelineError as error:
        _fail(error)
    typer.echo(for_terminal(render_json(nodes) if as_json else nodes_text(nodes), is_json=as_json))


@site_app.command()
def sample(
    site: str = SiteArgument,
    topic: str = typer.Argument(..., help="Topic id, e.g. guide/chunking."),
    n: int = typer.Option(5, "-n", min=0, help="Number of chunks."),
    order: str = typer.Option("conceptual", "--order", help="conceptual or technical."),
    document: Optional[str] = typer.Option(None, "--document", help="One document (its stem) instead of the whole topic."),
    timeout: float = TimeoutOption,
    as_json: bool = JsonOption,
) -> None:
    """Print the first N chunks of a topic's stripe order."""
    from pipeline.client import open_site
    from pipeline.client.render import as_json as render_json, chunks_text

    _show_warnings()  # documents without the technical order asked for fall back, and it says which
    try:
        chunks = open_site(site, timeout=timeout).sample(topic, n, order=order, document=document)
    except (PipelineError, ValueError) as error:
        _fail(error)
    typer.echo(for_terminal(render_json(chunks) if as_json else chunks_text(chunks), is_json=as_json))


def _promotion_level(value: Optional[str]) -> Optional[str]:
    """A level the build accepts (``promotion.check_level``), else a usage error (exit 2)."""
    from pipeline.promotion import check_level

    if value is None:
        return None
    try:
        return check_level(value)
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None


@site_app.command()
def search(
    site: str = SiteArgument,
    query: str = typer.Argument(..., help="A question or keywords."),
    k: int = typer.Option(5, "-k", min=1, help="Number of hits."),
    keyword: Optional[str] = typer.Option(None, "--keyword", help="Only chunks listing this keyword."),
    code: Optional[bool] = typer.Option(None, "--code/--prose", help="Only code chunks, or only prose chunks."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic (and those below it)."),
    promotion_level: Optional[str] = typer.Option(
        None, "--promotion-level", callback=_promotion_level, help="Only chunks of documents at this level (standard, important, critical)."
    ),
    max_distance: Optional[int] = typer.Option(None, "--max-distance", help="SimHash radius (default: the site's)."),
    method: str = typer.Option("auto", "--method", help="auto, hybrid, lexical, simhash, embedding or keyword."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help="Query embedder: static (the site's static encoder, the default where it has one), full (the site's model itself), or a spec."),
    header_path: Optional[str] = typer.Option(None, "--header-path", help="Only chunks whose header path starts so."),
    entry_type: Optional[str] = typer.Option(None, "--type", help="Only documents whose front matter type is this."),
    tags: list[str] = typer.Option([], "--tag", help="Only documents with this front-matter tag (repeatable)."),
    fusion: str = typer.Option("score", "--fusion", help="How hybrid fuses lexical and vector ranks: score (default) or rrf."),
    sentences: bool = typer.Option(False, "--sentences", help="Re-rank the first 10 by their best sentence (embeds ~60 sentences a query)."),
    request_budget: Optional[int] = typer.Option(None, "--request-budget", min=0, help="Cap a cold hybrid query's requests (vector shards past it are skipped; default: 6; 0: no cap; content/guide/search/how-search-ranks.md)."),
    timeout: float = TimeoutOption,
    as_json: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Search a site: SimHash prompt matches, then lexical and vector rankings fused (see content/guide/search/how-search-ranks.md)."""
    _quiet(quiet)
    from pipeline.client import open_site
    from pipeline.client.render import as_json as render_json, hits_text
    from pipeline.client.searchindex import REQUEST_BUDGET

    _show_warnings()
    try:
        hits = open_site(site, timeout=timeout).search(
            query, k, keyword=keyword, is_code=code, topic=topic, promotion_level=promotion_level,
            max_distance=max_distance, method=method, embedder=embedder,
            header_path=header_path, entry_type=entry_type, tags=tags, fusion=fusion, sentences=sentences,
            # unset: the clients' default cap; 0: none
            request_budget=REQUEST_BUDGET if request_budget is None else (request_budget or None),
        )
    except (PipelineError, ValueError) as error:
        _fail(error)
    typer.echo(for_terminal(render_json(hits) if as_json else hits_text(hits), is_json=as_json))


@site_app.command("export")
def export_command(
    site: str = SiteArgument,
    fmt: str = typer.Option("sqlite", "--format", "-f", help="sqlite (tables, FTS5, float32 vectors) or jsonl (one chunk per line)."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Output file (default: <site name>.sqlite|.jsonl here; - for JSONL on stdout)."),
    record: str = typer.Option("full", "--record", help="JSONL record shape: full, seed002 (camelCase ChunkedDocument) or langchain ({page_content, metadata})."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    timeout: float = TimeoutOption,
) -> None:
    """Export every chunk of a built site to SQLite or JSON Lines (content/reference/index-format/exports.md)."""
    from pipeline.export import export_site

    try:
        report = export_site(site, fmt, out, record=record, force=force, timeout=timeout)
    except PipelineError as error:
        _fail(error)
    typer.echo(f"exported {counted(report.documents, 'document')}, {counted(report.chunks, 'chunk')} ({report.with_embeddings} with embeddings) to {report.out}", err=True)


@site_app.command("mcp")
def mcp_command(
    site: str = SiteArgument,
    transport: str = typer.Option("stdio", "--transport", help="stdio (agents spawn the server) or http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address for --transport http."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http (endpoint /mcp)."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help="Query embedder: static (the site's static encoder, the default where it has one), full (the site's model itself), or a spec."),
    timeout: float = TimeoutOption,
) -> None:
    """Serve a built site to agents over the Model Context Protocol (content/guide/clients/mcp-server.md)."""
    from pipeline.agents.mcp_server import run

    _show_warnings()
    try:
        run(site, transport=transport, host=host, port=port, embedder=embedder, timeout=timeout)
    except PipelineError as error:
        _fail(error)


@site_app.command("linkcheck")
def linkcheck_command(
    site: Path = typer.Argument(Path("site"), help="The built site."),
    base_url: Optional[str] = typer.Option(
        None, "--base-url", help="The base URL the site was built with (default: the one its index.json says)."
    ),
) -> None:
    """Check every href of every index.json and every relative link in every chunk (exit 1 if one is broken)."""
    from pipeline.fsutil import require_dir
    from pipeline.site.linkcheck import check_site

    try:
        report = check_site(require_dir(site, "site"), base_url)
    except PipelineError as error:
        _fail(error)
    for where, link in report.broken:  # names and links come from the content: shown escaped
        typer.echo(f"broken: {escape_line(where)}: {escape_line(link)}", err=True)
    typer.echo(
        f"{report.checked} links, {len(report.broken)} broken, "
        f"{len(report.missing_in_source)} missing in the content too (not counted)",
        err=True,
    )
    if report.broken:
        raise typer.Exit(1)
