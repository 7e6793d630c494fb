"""The command line: parses arguments and calls the library; nothing else lives here."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Optional

import typer

from pipeline.config import SiteConfig, load_config
from pipeline.errors import PipelineError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Build a folder of markdown knowledge into a static HAL+JSON site that agents read progressively.",
)

ConfigOption = typer.Option(None, "--config", "-c", help="TOML site configuration (e.g. build/site.toml).")
BaseUrlOption = typer.Option(None, "--base-url", help="Prefix of absolute links, e.g. /my-repo/ (default /).")
EmbedderOption = typer.Option(None, "--embedder", help="minilm (default), local:PATH, ollama:MODEL, openai:MODEL, hashing.")


def _fail(error: Exception) -> None:
    typer.echo(f"error: {error}", err=True)
    raise typer.Exit(1)


def _show_warnings() -> None:
    warnings.showwarning = lambda message, *args, **kwargs: typer.echo(f"warning: {message}", err=True)


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
    strategy: Optional[str] = typer.Option(None, "--strategy", help="Chunking strategy for the whole site."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token limit per chunk."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Embedding cache (default .embedding-cache)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Chunk, embed and index CONTENT into a static site at OUT."""
    from pipeline.site.build import build as run_build

    _show_warnings()
    try:
        config = _options(_config(config_path, base_url=base_url, embedder=embedder, cache_dir=cache_dir), strategy, max_tokens)
        report = run_build(content, out, config, progress=not quiet)
    except PipelineError as error:
        _fail(error)
    typer.echo(f"built {out}: {report.summary()}", err=True)


@app.command("chunk-dir")
def chunk_dir(
    site: Path = typer.Argument(..., help="A directory tree of markdown; _chunks/ is written beside each document."),
    config_path: Optional[Path] = ConfigOption,
    strategy: Optional[str] = typer.Option(None, "--strategy"),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens"),
    embedder: Optional[str] = EmbedderOption,
) -> None:
    """Stage 1 alone: write _chunks/<stem>-<i>.md and a manifest beside every document."""
    from pipeline.chunking.tool import plan_chunks, write_chunks
    from pipeline.embedding.registry import make_embedder

    _show_warnings()
    try:
        config = _options(_config(config_path, embedder=embedder), strategy, max_tokens)
        counter = make_embedder(config.embedder).counter()
        report = write_chunks(site, plan_chunks(site, config, counter))
    except PipelineError as error:
        _fail(error)
    typer.echo(f"{report.documents} documents, {report.chunks} chunks, {report.written} files written", err=True)


@app.command()
def spec(
    site: Path = typer.Argument(..., help="A tree already chunked by `pipeline chunk-dir`."),
    config_path: Optional[Path] = ConfigOption,
    embedder: Optional[str] = EmbedderOption,
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
) -> None:
    """Stage 2 alone: embed chunks (cached) and write topic-spec.md in every topic."""
    from pipeline.embedding.registry import make_embedder
    from pipeline.spec.topicspec import run_spec

    try:
        config = _config(config_path, embedder=embedder, cache_dir=cache_dir)
        report = run_spec(site, config, make_embedder(config.embedder), progress=not quiet)
    except PipelineError as error:
        _fail(error)
    typer.echo(f"{report.topics} topics, {report.chunks} chunks ({report.embedded} embedded)", err=True)


@app.command()
def index(
    site: Path = typer.Argument(..., help="A tree with topic-spec.md files."),
    config_path: Optional[Path] = ConfigOption,
    base_url: Optional[str] = BaseUrlOption,
) -> None:
    """Stage 3 alone: write index.json (HAL+JSON, stripe orders) in every directory."""
    from pipeline.index.tool import run_index

    try:
        report = run_index(site, _config(config_path, base_url=base_url))
    except PipelineError as error:
        _fail(error)
    typer.echo(f"{report.directories} index.json files ({report.written} changed)", err=True)


@app.command()
def serve(
    site: Path = typer.Argument(Path("site"), help="The built site."),
    port: int = typer.Option(8000, "--port", "-p"),
    host: str = typer.Option("127.0.0.1", "--host"),
) -> None:
    """Serve SITE locally with Range requests, CORS and ETags."""
    from pipeline.serve import serve as run_serve

    if not site.is_dir():
        _fail(PipelineError("site directory not found; run `pipeline build` first", path=site))
    try:
        run_serve(site, host=host, port=port)
    except PipelineError as error:
        _fail(error)


def main() -> None:  # pragma: no cover - console entry for `python -m pipeline`
    app(prog_name="pipeline")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
