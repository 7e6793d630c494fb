"""The command line: parses arguments and calls the library; nothing else lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from pipeline.cli_cache import cache_app
# The shared helpers keep their old private names here: the command bodies below are unchanged.
from pipeline.cli_eval import eval_app
from pipeline.cli_common import CommandGroup, QuietOption, fail as _fail, quiet as _quiet, say as _say, show_warnings as _show_warnings
from pipeline.cli_site import site_app
from pipeline.config import SiteConfig, load_config
from pipeline.errors import PipelineError
from pipeline.terminal import escape_controls, for_terminal
from pipeline.wording import counted

app = typer.Typer(
    cls=CommandGroup,  # OSError -> ``error: <path>: <reason>``, exit 1 (cli_common.py)
    add_completion=False,
    no_args_is_help=True,
    help="Build a folder of markdown knowledge into a static HAL+JSON site that agents read progressively.",
)

ConfigOption = typer.Option(None, "--config", "-c", help="TOML site configuration (e.g. build/site.toml).")
BaseUrlOption = typer.Option(None, "--base-url", help="Prefix of absolute links, e.g. /my-repo/ (default /).")
EmbedderOption = typer.Option(None, "--embedder", help="minilm (default), local:PATH, ollama:MODEL, openai:MODEL, hashing.")
StrategyOption = typer.Option(None, "--strategy", help="Chunking strategy for the whole site (content/guide/chunking/chunking-strategies.md).")
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
    ray_min_tokens: Optional[int] = typer.Option(
        None, "--ray-min-tokens",
        help="With --executor ray: fewer model tokens to embed than this (default 50000) are embedded here, "
        "without starting Ray, which could not finish first; 0: always Ray.",
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
        overrides = dict(executor=executor, workers=workers, ray_address=ray_address, ray_min_tokens=ray_min_tokens,
                         retire_removed_files=retire_removed)
        config = _options(_config(config_path, base_url=base_url, embedder=embedder, cache_dir=cache_dir, **overrides), strategy, max_tokens)
        if config.executor == "ray":
            from pipeline.embedding.ray_executor import stop_ray_when_encoded

            stop_ray_when_encoded()  # this process builds once: Ray stops beside the build's last writes
        report = run_build(content, out, config, progress=not quiet)
    except PipelineError as error:
        _fail(error)
    _say(f"built {out}: {report.summary()}")
    if report.chunk.repeats_note():
        _say(report.chunk.repeats_note())
    if config.executor == "ray":
        from pipeline.embedding.ray_executor import stop_ray

        stop_ray()  # waits for the stop the encode started; else now, not in Ray's exit hook (it sleeps 0.5 s)


@app.command()
def chunk(
    file: str = typer.Argument(..., help="A markdown file, or - for stdin."),
    strategy: Optional[str] = typer.Option(
        None, "--strategy", "-s", help="Chunking strategy (content/guide/chunking/chunking-strategies.md); default: as a build chooses (markdown, entry, front matter)."
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
    _say(f"{counted(report.documents, 'document')}, {counted(report.chunks, 'chunk')}, {counted(report.written, 'file')} written")


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
    from pipeline.topicspec.topicspec import run_spec

    _show_warnings()
    try:
        config = _config(config_path, embedder=embedder, cache_dir=cache_dir)
        report = run_spec(site, config, make_embedder(config.embedder), progress=not quiet)
    except PipelineError as error:
        _fail(error)
    _say(f"{counted(report.topics, 'topic')}, {counted(report.chunks, 'chunk')} ({report.embedded} embedded)")


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
    _say(f"{counted(report.directories, 'index.json file')} ({report.written} changed)")


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
    _say(f"{counted(report.topics_with_embeddings, 'embeddings file')} ({counted(report.embedding_bytes, 'byte')}), {counted(report.written, 'file')} written")


app.add_typer(site_app)  # `pipeline topics|sample|search|export|mcp|linkcheck` (cli_site.py)
app.add_typer(eval_app)  # `pipeline eval` (cli_eval.py)
app.add_typer(cache_app, name="cache")  # `pipeline cache stats|prune` (cli_cache.py)


def main() -> None:  # pragma: no cover - console entry for `python -m pipeline`
    app(prog_name="pipeline")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
