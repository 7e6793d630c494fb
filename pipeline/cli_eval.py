"""``pipeline eval SITE``: how findable a built site is, with its own search (``pipeline.evaluate``).

Only parses arguments, writes the report and prints; registered on the main command line by
``cli.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pipeline.cli_common import QuietOption, fail as _fail, quiet as _quiet, show_warnings as _show_warnings
from pipeline.errors import PipelineError
from pipeline.terminal import for_terminal

eval_app = typer.Typer()


@eval_app.command("eval")
def eval_command(
    site: str = typer.Argument(..., help="A built site: http(s) URL or directory."),
    questions: Optional[Path] = typer.Option(None, "--questions", help='JSON Lines: {"question": ..., "expect": "path/doc.md" or "path/doc.md#Heading"} a line.'),
    probes: bool = typer.Option(False, "--probes", help="Ask the site's heading probes even when it has qa-pairs.md questions."),
    k: int = typer.Option(5, "-k", min=1, help="Hits looked at per question."),
    embedder: Optional[str] = typer.Option(None, "--embedder", help="Query embedder for hybrid: static (the site's static encoder, the default where it has one, as the search page), full (the site's model itself), or a spec."),
    html: Path = typer.Option(Path("eval-report.html"), "--html", help="Where the HTML report goes."),
    no_html: bool = typer.Option(False, "--no-html", help="Write no HTML report."),
    fail_under: Optional[float] = typer.Option(None, "--fail-under", min=0, max=100, help="Exit 1 when the search page's method finds fewer than R % of the questions."),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds each request may take."),
    as_json: bool = typer.Option(False, "--json", help="The whole evaluation as JSON on stdout (the summary goes away)."),
    quiet: bool = QuietOption,
) -> None:
    """Ask a built site questions through its own search and report what readers can find (recall@k, MRR,
    failing questions, unreached and competing sections). Questions: --questions FILE, else the site's
    qa-pairs.md, else one probe per section (its heading)."""
    _quiet(quiet)
    _show_warnings()
    import orjson

    from pipeline.evaluate import evaluate
    from pipeline.evaluate.run import progress_bar

    if questions is not None and probes:
        _fail(PipelineError("--questions and --probes exclude each other"))
    try:
        result = evaluate(site, questions_file=questions, use_probes=probes, k=k, embedder=embedder, timeout=timeout,
                          progress=None if quiet else progress_bar("asking"))
        written = None
        if not no_html:
            from pipeline.evaluate.html import render
            from pipeline.fsutil import write_text_atomic

            write_text_atomic(html, render(result))
            written = str(html)
    except (PipelineError, ValueError) as error:  # an OSError (an unwritable --html) is the command line's: cli_common
        _fail(error)
    if as_json:
        typer.echo(for_terminal(orjson.dumps(result.to_dict(), option=orjson.OPT_INDENT_2).decode(), is_json=True))
        if written:
            typer.echo(f"report: {written}", err=True)
    else:
        from pipeline.evaluate.report import summary_text

        typer.echo(for_terminal(summary_text(result, html_path=written), is_json=False))
    if fail_under is not None:
        found = 100 * result.summary(result.page).recall
        if found < fail_under:
            typer.echo(f"error: recall@{k} of {result.page} is {found:.1f} %, under --fail-under {fail_under:g} %", err=True)
            raise typer.Exit(1)
