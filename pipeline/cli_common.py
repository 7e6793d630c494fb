"""What every command module of the command line shares: ``-q``, how errors and warnings are
printed (control characters escaped, exit 1 on a PipelineError), information lines."""

from __future__ import annotations

import errno
import warnings

import typer
from typer.core import TyperGroup

from pipeline.errors import environment_error
from pipeline.terminal import escape_controls

class PipelineErrorLine(Exception):
    """A message printed as it is by ``fail``."""


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


class CommandGroup(TyperGroup):
    """The command line's group: an OSError escaping any command (an unreadable folder, a
    read-only cache or site, ``--cache-dir`` naming a file) is printed as one line,
    ``error: <path>: <reason>``, exit 1, instead of a traceback. The one place that does it:
    the environment fails the same way whichever step meets it."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except OSError as error:
            if error.errno == errno.EPIPE:  # stdout closed by the reader (``| head``): click's own exit
                raise
            fail(PipelineErrorLine(environment_error(error)))


def show_warnings() -> None:
    warnings.showwarning = lambda message, *args, **kwargs: typer.echo(escape_controls(f"warning: {message}"), err=True)
