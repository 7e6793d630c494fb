"""The command line: parses arguments and calls the library; nothing else lives here."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Optional

import typer

from pipeline.cli_cache import cache_app
from pipeline.config import SiteConfig, load_config
from pipeline.errors import PipelineError
from pipeline.terminal import escape_controls, for_terminal

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Build a folder of markdown knowledge into a static HAL+JSON site that agents read progressively.",
)

ConfigOption = typer.Option(None, "--config", "-c", help="TOML site configuration (e.g. build/site.toml).")
BaseUrlOption = typer.Option(None, "--base-url", help="Prefix of absolute links, e.g. /my-repo/ (default /).")
EmbedderOption = typer.Option(None, "--embedder", help="minilm (default), local:PATH, ollama:MODEL, openai:MODEL, hashing.")
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bars or information lines (errors and warnings still show).")
StrategyOption = typer.Option(None, "--strategy", help="Chunking strategy for the whole site (docs/CHUNKING.md).")
MaxTokensOption = typer.Option(None, "--max-tokens", help="Token limit per chunk.")
CacheDirOption = typer.Option(None, "--cache-dir", help="Embedding cache (default .embedding-cache).")


def _version(value: bool) -> None:
    if value:
        from pipeline import __version__

        typer.echo(f"pipeline {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Build a folder of markdown knowledge into a static HAL+JSON site that agents read progressively."""


def _quiet(quiet: bool) -> None:
    from pipeline.quiet import set_quiet

    set_quiet(quiet)


def _say(message: str) -> None:
    from pipeline.quiet import info

    info(message)


def _fail(error: Exception) -> None:
    typer.echo(escape_controls(f"error: {error}"), err=True)
    raise typer.Exit(1)


def _show_warnings() -> None:
    warnings.showwarning = lambda message, *args, **kwargs: typer.echo(escape_controls(f"warning: {message}"), err=True)


def _config(path: Optional[Path], **overrides) -> SiteConfig:
    return load_config(path).with_overrides(**overrides)


def _options(config: SiteConfig, strategy: Optional[str], max_tokens: Optional[int]) -> SiteConfig:
    if strategy is not None and strategy != config.strategy:
        config = config.with_overrides(strategy=strategy, strategy_options={})
    if max_tokens is not None:
        config = config.with_overrides(strategy_options={**config.strategy_options, "max_tokens": max_tokens})
    return config


@app.command()
def build(
    content: Path = typer.Argument(Path("content"), help="The markdown tree to build."),
    out: Path = typer.Option(Path("site"), "--out", "-o", help="Output site directory."),
    config_path: Optional[Path] = ConfigOption,
    base_url: Optional[str] = BaseUrlOption,
    embedder: Optional[str] = EmbedderOption,
    strategy: Optional[str] = StrategyOption,
    max_tokens: Optional[int] = MaxTokensOption,
    cache_dir: Optional[Path] = CacheDirOption,
    executor: Optional[str] = typer.Option(
        None, "--executor", help="Where cache misses are embedded: local (default) or ray (Ray Data, one model per worker)."
    ),
    workers: Optional[int] = typer.Option(None, "--workers", help="With --executor ray: embedding workers (default 2)."),
    ray_address: Optional[str] = typer.Option(
        None, "--ray-address", help="With --executor ray: a cluster to join (ray.init address, e.g. auto); default a local Ray."
    ),
    retire_removed: Optional[bool] = typer.Option(
        None, "--retire-removed/--drop-removed",
        help="Keep files this build removes served until the next build, so readers of the previous "
        "index.json never meet a 404 (default), or drop them now (to withdraw a document at once).",
    ),
    quiet: bool = QuietOption,
) -> None:
    """Chunk, embed and index CONTENT into a static site at OUT."""
    _quiet(quiet)
    from pipeline.site.build import build as run_build

    _show_warnings()
    try:
        overrides = dict(executor=executor, workers=workers, ray_address=ray_address, retire_removed_files=retire_removed)
        config = _options(_config(config_path, base_url=base_url, embedder=embedder, cache_dir=cache_dir, **overrides), strategy, max_tokens)
        report = run_build(content, out, config, progress=not quiet)
    except PipelineError as error:
        _fail(error)
    _say(f"built {out}: {report.summary()}")


@app.command()
def chunk(
    file: str = typer.Argument(..., help="A markdown file, or - for stdin."),
    strategy: Optional[str] = typer.Option(
        None, "--strategy", "-s", help="Chunking strategy (docs/CHUNKING.md); default: as a build chooses (markdown, entry, front matter)."
    ),
    # A string, checked by the strategy: a bad value is exit 1 with the strategy's message, like any bad option.
    max_tokens: Optional[str] = typer.Option(None, "--max-tokens", metavar="<int>", help="Token limit per chunk."),
    option: list[str] = typer.Option([], "--option", "-o", help="Any strategy option as NAME=VALUE (repeatable)."),
) -> None:
    """Print FILE's chunk records as a JSON array on stdout."""
    from pipeline.chunking.cli_chunk import parse_options, run_chunk

    try:
        options = parse_options([*option, *([f"max_tokens={max_tokens}"] if max_tokens is not None else [])])
    except PipelineError as error:
        _fail(error)
    result = run_chunk(file, strategy, options)
    for message in result.messages:
        typer.echo(escape_controls(message), err=True)
    sys.stdout.write(for_terminal(result.stdout, is_json=True))
    raise typer.Exit(result.exit_code)


@app.command("chunk-dir")
def chunk_dir(
    site: Path = typer.Argument(..., help="A directory tree of markdown; _chunks/ is written beside each document."),
    config_path: Optional[Path] = ConfigOption,
    strategy: Optional[str] = StrategyOption,
    max_tokens: Optional[int] = MaxTokensOption,
    embedder: Optional[str] = EmbedderOption,
    quiet: bool = QuietOption,
) -> None:
    """Stage 1 alone: write _chunks/<stem>-<i>.md and a manifest beside every document."""
    _quiet(quiet)
    from pipeline.chunking.tool import plan_chunks, write_chunks
    from pipeline.embedding.registry import make_embedder

    _show_warnings()
    try:
        config = _options(_config(config_path, embedder=embedder), strategy, max_tokens)
        counter = make_embedder(config.embedder).counter()
        report = write_chunks(site, plan_chunks(site, config, counter))
    except PipelineError as error:
        _fail(error)
    _say(f"{report.documents} documents, {report.chunks} chunks, {report.written} files written")


@app.command()
def spec(
    site: Path = typer.Argument(..., help="A tree already chunked by `pipeline chunk-dir`."),
    config_path: Optional[Path] = ConfigOption,
    embedder: Optional[str] = EmbedderOption,
    cache_dir: Optional[Path] = CacheDirOption,
    quiet: bool = QuietOption,
) -> None:
    """Stage 2 alone: embed chunks (cached) and write topic-spec.md in every topic."""
    _quiet(quiet)
    from pipeline.embedding.registry import make_embedder
    from pipeline.spec.topicspec import run_spec

    _show_warnings()
    try:
        config = _config(config_path, embedder=embedder, cache_dir=cache_dir)
        report = run_spec(site, config, make_embedder(config.embedder), progress=not quiet)
    except PipelineError as error:
        _fail(error)
    _say(f"{report.topics} topics, {report.chunks} chunks ({report.embedded} embedded)")


@app.command()
def index(
    site: Path = typer.Argument(..., help="A tree with topic-spec.md files."),
    config_path: Optional[Path] = ConfigOption,
    base_url: Optional[str] = BaseUrlOption,
    quiet: bool = QuietOption,
) -> None:
    """Stage 3 alone: write index.json (HAL+JSON, stripe orders) in every directory."""
    _quiet(quiet)
    from pipeline.index.tool import run_index

    try:
        report = run_index(site, _config(config_path, base_url=base_url))
    except PipelineError as error:
        _fail(error)
    _say(f"{report.directories} index.json files ({report.written} changed)")


@app.command()
def serve(
    site: Path = typer.Argument(Path("site"), help="The built site (with --watch: where CONTENT is built)."),
    port: int = typer.Option(8000, "--port", "-p", help="TCP port (0 picks a free one)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    prefix: Optional[str] = typer.Option(None, "--prefix", help="Serve the site under this URL path, e.g. /docs/ for a site built with --base-url /docs/."),
    watch: Optional[Path] = typer.Option(None, "--watch", help="Build this content folder into SITE, rebuild on every change and reload open pages."),
    config_path: Optional[Path] = ConfigOption,
    embedder: Optional[str] = EmbedderOption,
    cache_dir: Optional[Path] = CacheDirOption,
    quiet: bool = QuietOption,
) -> None:
    """Serve SITE locally with Range requests, CORS and ETags; --watch rebuilds on save."""
    _quiet(quiet)
    from pipeline.serve import serve as run_serve

    _show_warnings()
    try:
        if watch is not None:
            from pipeline.serve.watch import watch_and_serve

            # Links must match where the site is served: the prefix is the default base_url.
            config = _config(config_path, embedder=embedder, cache_dir=cache_dir)
            if prefix is not None and config.normalized_base_url == "/":
                config = config.with_overrides(base_url=prefix)
            extra = (config_path,) if config_path is not None else ()
            watch_and_serve(watch, site, config, host=host, port=port, prefix=prefix, quiet=quiet, watch_paths=extra)
            return
        if not site.is_dir():
            raise PipelineError("site directory not found; run `pipeline build` first", path=site)
        run_serve(site, host=host, port=port, prefix=prefix, log_requests=not quiet)
    except PipelineError as error:
        _fail(error)


@app.command()
def publish(
    site: Path = typer.Argument(..., help="A tree with index.json and topic-spec.md files."),
    config_path: Optional[Path] = ConfigOption,
    cache_dir: Optional[Path] = CacheDirOption,
    quiet: bool = QuietOption,
) -> None:
    """Stage 4 alone: write _assets/, index.html and every topic's _embeddings.bin."""
    _quiet(quiet)
    from pipeline.site.publish import publish_site

    try:
        report = publish_site(site, _config(config_path, cache_dir=cache_dir))
    except PipelineError as error:
        _fail(error)
    _say(f"{report.topics_with_embeddings} embeddings files ({report.embedding_bytes} bytes), {report.written} files written")


SiteArgument = typer.Argument(..., help="A built site: http(s) URL or directory.")
TimeoutOption = typer.Option(10.0, "--timeout", help="Seconds each request may take.")
JsonOption = typer.Option(False, "--json", help="JSON output.")


@app.command()
def topics(site: str = SiteArgument, timeout: float = TimeoutOption, as_json: bool = JsonOption) -> None:
    """List a site's sections and topics by following its links."""
    from pipeline.client import open_site
    from pipeline.client.render import as_json as render_json, nodes_text

    try:
        nodes = open_site(site, timeout=timeout).nodes()
    except PipelineError as error:
        _fail(error)
    typer.echo(for_terminal(render_json(nodes) if as_json else nodes_text(nodes), is_json=as_json))


@app.command()
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

    try:
        chunks = open_site(site, timeout=timeout).sample(topic, n, order=order, document=document)
    except (PipelineError, ValueError) as error:
        _fail(error)
    typer.echo(for_terminal(render_json(chunks) if as_json else chunks_text(chunks), is_json=as_json))


@app.command()
def search(
    site: str = SiteArgument,
    query: str = typer.Argument(..., help="A question or keywords."),
    k: int = typer.Option(5, "-k", min=1, help="Number of hits."),
    keyword: Optional[str] = typer.Option(None, "--keyword", help="Only chunks listing this keyword."),
    code: Optional[bool] = typer.Option(None, "--code/--prose", help="Only code chunks, or only prose chunks."),
    topic: Optional[str] = typer.Option(None, "--topic", help="Only this topic (and those below it)."),
    promotion_level: Optional[str] = typer.Option(None, "--promotion-level", help="Only chunks of documents at this level (standard, important, critical)."),
    max_distance: Optional[int] = typer.Option(None, "--max-distance", help="SimHash radius (default: the site's)."),
    method: str = typer.Option("auto", "--method", help="auto, hybrid, lexical, simhash, embedding or keyword."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help="Query embedder (default: from the site's model)."),
    header_path: Optional[str] = typer.Option(None, "--header-path", help="Only chunks whose header path starts so."),
    entry_type: Optional[str] = typer.Option(None, "--type", help="Only documents whose front matter type is this."),
    tags: list[str] = typer.Option([], "--tag", help="Only documents with this front-matter tag (repeatable)."),
    fusion: str = typer.Option("score", "--fusion", help="How hybrid fuses lexical and vector ranks: score (default) or rrf."),
    sentences: bool = typer.Option(False, "--sentences", help="Re-rank the first 10 by their best sentence (embeds ~60 sentences a query)."),
    request_budget: Optional[int] = typer.Option(None, "--request-budget", min=0, help="Cap a cold hybrid query's requests (vector shards past it are skipped; default: 6; 0: no cap; docs/CLIENTS.md)."),
    timeout: float = TimeoutOption,
    as_json: bool = JsonOption,
    quiet: bool = QuietOption,
) -> None:
    """Search a site: SimHash prompt matches, then lexical and vector rankings fused (see docs/CLIENTS.md)."""
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


@app.command("export")
def export_command(
    site: str = SiteArgument,
    fmt: str = typer.Option("sqlite", "--format", "-f", help="sqlite (tables, FTS5, float32 vectors) or jsonl (one chunk per line)."),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="Output file (default: <site name>.sqlite|.jsonl here; - for JSONL on stdout)."),
    record: str = typer.Option("full", "--record", help="JSONL record shape: full, seed002 (camelCase ChunkedDocument) or langchain ({page_content, metadata})."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    timeout: float = TimeoutOption,
) -> None:
    """Export every chunk of a built site to SQLite or JSON Lines (docs/EXPORT.md)."""
    from pipeline.export import export_site

    try:
        report = export_site(site, fmt, out, record=record, force=force, timeout=timeout)
    except PipelineError as error:
        _fail(error)
    typer.echo(f"exported {report.documents} documents, {report.chunks} chunks ({report.with_embeddings} with embeddings) to {report.out}", err=True)


@app.command("mcp")
def mcp_command(
    site: str = SiteArgument,
    transport: str = typer.Option("stdio", "--transport", help="stdio (agents spawn the server) or http (streamable HTTP)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address for --transport http."),
    port: int = typer.Option(8765, "--port", help="Port for --transport http (endpoint /mcp)."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help="Query embedder (default: from the site's model)."),
    timeout: float = TimeoutOption,
) -> None:
    """Serve a built site to agents over the Model Context Protocol (docs/AGENTS.md)."""
    from pipeline.agents.mcp_server import run

    _show_warnings()
    try:
        run(site, transport=transport, host=host, port=port, embedder=embedder, timeout=timeout)
    except PipelineError as error:
        _fail(error)


@app.command("linkcheck")
def linkcheck_command(
    site: Path = typer.Argument(Path("site"), help="The built site."),
    base_url: str = typer.Option("/", "--base-url", help="The base URL the site was built with."),
) -> None:
    """Check every href of every index.json and every relative link in every chunk (exit 1 if one is broken)."""
    from pipeline.fsutil import require_dir
    from pipeline.site.linkcheck import check_site

    try:
        report = check_site(require_dir(site, "site"), base_url)
    except PipelineError as error:
        _fail(error)
    for where, link in report.broken:
        typer.echo(f"broken: {where}: {link}", err=True)
    typer.echo(
        f"{report.checked} links, {len(report.broken)} broken, "
        f"{len(report.missing_in_source)} missing in the content too (not counted)",
        err=True,
    )
    if report.broken:
        raise typer.Exit(1)


app.add_typer(cache_app, name="cache")  # `pipeline cache stats|prune` (cli_cache.py)


def main() -> None:  # pragma: no cover - console entry for `python -m pipeline`
    app(prog_name="pipeline")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
