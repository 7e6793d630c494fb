"""``pipeline cache stats|prune``: the embedding cache as a whole (``embedding/cache_admin.py``).
Only parses arguments and prints; builds never prune the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pipeline.errors import PipelineError
from pipeline.quiet import info as _say, set_quiet
from pipeline.wording import counted

QuietOption = typer.Option(False, "--quiet", "-q", help="No information lines (errors still show).")


cache_app = typer.Typer(help="Inspect or prune the embedding cache (builds never prune it).", no_args_is_help=True)
CacheDirArgument = typer.Argument(Path(".embedding-cache"), help="The cache folder (default .embedding-cache).")


@cache_app.command("stats")
def cache_stats(cache_dir: Path = CacheDirArgument) -> None:
    """Entries, chunks, size and last-use days per strategy and model."""
    from pipeline.embedding.cache_admin import cache_stats as stats, human

    if not cache_dir.is_dir():
        typer.echo(f"no cache at {cache_dir}")
        return
    groups = stats(cache_dir)
    for g in groups:
        typer.echo(f"{g.strategy}/{g.model}: {counted(g.entries, 'entry', 'entries')}, {counted(g.chunks, 'chunk')}, {human(g.size)}, last used {g.oldest} .. {g.newest}")
    typer.echo(f"total: {counted(sum(g.entries for g in groups), 'entry', 'entries')}, {human(sum(g.size for g in groups))}")


@cache_app.command("prune")
def cache_prune(
    cache_dir: Path = CacheDirArgument,
    older_than: Optional[int] = typer.Option(None, "--older-than", min=0, help="Remove entries not used for more than DAYS days (default 30 when no --max-size)."),
    max_size: Optional[str] = typer.Option(None, "--max-size", help="Then remove least recently used entries until the cache fits, e.g. 500M (never ones used today)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
    quiet: bool = QuietOption,
) -> None:
    """Remove cache entries by age and size budget."""
    set_quiet(quiet)
    from pipeline.config import parse_size
    from pipeline.embedding.cache_admin import human, prune_cache

    try:
        max_bytes = parse_size(max_size) if max_size is not None else None
        age = older_than if older_than is not None or max_bytes is not None else 30
        report = prune_cache(cache_dir, max_age_days=age, max_bytes=max_bytes, dry_run=dry_run)
    except PipelineError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1)
    verb = "would remove" if dry_run else "removed"
    for e in report.removed if not quiet else []:
        typer.echo(f"{verb} {e.group.parent.name}/{e.group.name}/{e.name} (last used {e.last_used}, {human(e.size)})")
    _say(f"{verb} {counted(len(report.removed), 'entry', 'entries')} ({human(report.freed)}); kept {report.kept} ({human(report.kept_size)})")
    if max_bytes is not None and report.kept_size > max_bytes:
        _say("still over --max-size: entries used today are never removed")
