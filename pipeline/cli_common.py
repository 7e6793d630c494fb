"""What every command module of the command line shares: ``-q``, how errors and warnings are
printed (control characters escaped, exit 1 on a PipelineError), information lines."""

from __future__ import annotations

import warnings

import typer

from pipeline.terminal import escape_controls

QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bars or information lines (errors and warnings still show).")


def quiet(enabled: bool) -> None:
    from pipeline.quiet import set_quiet

    set_quiet(enabled)


def say(message: str) -> None:
    from pipeline.quiet import info

    info(message)


def fail(error: Exception) -> None:
    typer.echo(escape_controls(f"error: {error}"), err=True)
    raise typer.Exit(1)


def show_warnings() -> None:
    warnings.showwarning = lambda message, *args, **kwargs: typer.echo(escape_controls(f"warning: {message}"), err=True)
