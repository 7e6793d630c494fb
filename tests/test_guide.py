"""The user guide (``content/``) against the code, both ways: every CLI command and option, every
``site.toml`` key and chunking option, and every shipped JSON Schema is named in the guide, and
everything of those kinds the guide names exists. A failure lists what is missing or stale."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest
import typer.main

from conftest import ROOT
from pipeline.chunking.registry import _STRATEGIES, strategy_names
from pipeline.cli import app
from pipeline.config import SiteConfig, load_config
from pipeline.siteformat.schemas import schema_texts
from test_cli import all_commands

GUIDE = ROOT / "content"
CLI_PAGES = sorted((GUIDE / "reference" / "command-line").glob("*.md"))
CONFIG_PAGE = GUIDE / "reference" / "configuration" / "site-toml.md"

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
COMMAND_HEADING = re.compile(r"^`?pipeline ([a-z][a-z-]*(?: [a-z][a-z-]*)?)`?$")
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
# A program other than ours: the options after it on a line are its own (pip's --index-url).
OTHER_PROGRAMS = {"pip", "npm", "npx", "curl", "jq", "git", "make", "mkdocs", "claude", "test", "python", "python3", "python3.11", "set", "cp", "rsync"}
SEPARATORS = {"|", "||", "&&", ";"}


# --- reading the guide -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Line:
    page: Path
    number: int
    text: str  # code: a code-block line or one inline code span
    command: str | None  # the `pipeline <command>` section the line is in, if any


def pages() -> list[Path]:
    return sorted(GUIDE.rglob("*.md"))


def code_lines(page: Path) -> list[Line]:
    """Every code-block line and every inline code span of ``page``, with its section's command."""
    lines, fence, stack = [], None, []  # stack: (level, command) of the open headings
    for number, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        stripped = raw.strip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if fence is not None:
            if stripped.startswith(fence):
                fence = None
            else:
                lines.append(Line(page, number, raw, section_command(stack)))
            continue
        heading = HEADING.match(raw)
        if heading:
            level = len(heading.group(1))
            stack = [entry for entry in stack if entry[0] < level]
            match = COMMAND_HEADING.match(heading.group(2))
            stack.append((level, match.group(1) if match else None))
        lines.extend(Line(page, number, span, section_command(stack)) for span in re.findall(r"`([^`\n]+)`", raw))
    return lines


def section_command(stack: list[tuple[int, str | None]]) -> str | None:
    return next((command for _, command in reversed(stack) if command), None)


def command_sections(paths: list[Path]) -> dict[str, str]:
    """``{command: its section's text}`` for every ``pipeline <command>`` heading of ``paths``."""
    sections: dict[str, str] = {}
    for page in paths:
        open_sections: list[tuple[int, str]] = []
        fence = None
        for raw in page.read_text(encoding="utf-8").splitlines():
            if raw.strip().startswith(("```", "~~~")):
                fence = None if fence else raw.strip()[:3]
            heading = None if fence else HEADING.match(raw)
            if heading:
                level = len(heading.group(1))
                open_sections = [entry for entry in open_sections if entry[0] < level]
                match = COMMAND_HEADING.match(heading.group(2))
                if match:
                    open_sections.append((level, match.group(1)))
                    sections.setdefault(match.group(1), "")
                    continue
            for _, command in open_sections:
                sections[command] += raw + "\n"
    return sections


def invocations(line: Line) -> list[tuple[str | None, str]]:
    """``(command, option)`` for every option on ``line``: the command is the ``pipeline <command>``
    before it on the line, else the line's section command; options after another program are
    left out, and ``None`` means "some command of ours"."""
    found, context = [], line.command
    words = line.text.split(" # ")[0].split()  # a shell comment is prose
    for i, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if name == "pipeline":
            context = " ".join(words[i + 1 : i + 3]) if words[i + 1 : i + 2] == ["cache"] else (words[i + 1] if i + 1 < len(words) else None)
            if context is not None and context.startswith("-"):
                context = ""  # `pipeline --version`: the root command
        elif name in OTHER_PROGRAMS or word in SEPARATORS:
            context = "other"
        elif OPTION.fullmatch(option := word.split("=")[0].rstrip(",.)]")):
            # a short option is read only where its command is known (`set -e` is not ours)
            if context != "other" and (option.startswith("--") or context is not None):
                found.append((context, option))
    return found


# --- the code ----------------------------------------------------------------------------


def cli_commands() -> dict[str, set[str]]:
    """``{"build": {"--out", "-o", ...}, "cache prune": {...}, "": {"--version"}}``: each command's
    option names (a long name where there is one, and every short one)."""
    root = typer.main.get_command(app)
    commands = {}
    for path, command in all_commands(root):
        if getattr(command, "commands", None) and path:
            continue  # a group (`cache`) is reached through its commands
        names = set()
        for param in command.params:
            if param.param_type_name == "option":
                names.update(name for name in (*param.opts, *param.secondary_opts) if name != "--help")
        commands[" ".join(path)] = names
    return commands


def documented_options(names: set[str]) -> set[str]:
    """The names the guide must mention: long ones, and the short ones of options without one."""
    return {name for name in names if name.startswith("--")} | {
        name for name in names if not name.startswith("--") and not any(n.startswith("--") for n in names if n != name)
    }


def config_keys() -> set[tuple[str, str]]:
    """``(table, key)`` of every ``site.toml`` setting; table ``""`` is the top level."""
    internal = {"strategy", "strategy_options", "pages"}  # pages: set by the MkDocs plugin, not by TOML
    keys = set()
    for field in dataclasses.fields(SiteConfig):
        if field.name.startswith("search_"):  # [search] model, [search] encoder
            keys.add(("search", field.name.removeprefix("search_")))
        elif field.name not in internal:
            keys.add(("", field.name))
    return keys | {("chunking", "strategy")}


def strategy_options() -> dict[str, set[str]]:
    """``{strategy: its [chunking] options}`` from the strategies' dataclass fields."""
    strategy_names()  # loads the built-in strategies
    return {
        name: {field.name for field in dataclasses.fields(cls) if field.name != "counter" and not field.name.startswith("_")}
        for name, cls in _STRATEGIES.items()
    }


def table_rows(page: Path, heading: str) -> list[list[str]]:
    """The body rows of the first table under ``## heading`` of ``page``, cells stripped."""
    text = page.read_text(encoding="utf-8")
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def report(**problems: object) -> str:
    return "the guide (content/) and the code disagree:\n" + "\n".join(f"  {what}: {value}" for what, value in problems.items() if value)


# --- CLI ---------------------------------------------------------------------------------


def test_every_command_and_option_is_in_the_cli_reference():
    commands = cli_commands()
    sections = command_sections(CLI_PAGES)
    cli_text = "\n".join(page.read_text(encoding="utf-8") for page in CLI_PAGES)
    missing_commands = sorted(f"pipeline {c}" for c in commands if c and c not in sections)
    missing_options = sorted(
        f"pipeline {command} {option}".replace("  ", " ")
        for command, names in commands.items()
        for option in documented_options(names)
        if option not in OPTION.findall(sections.get(command, "") if command else cli_text)
    )
    assert not (missing_commands or missing_options), report(
        **{"commands without a `## pipeline <command>` heading in content/reference/command-line/": missing_commands,
           "options not named in their command's section": missing_options}
    )


def test_every_command_and_option_the_guide_names_exists():
    commands = cli_commands()
    every_option = set().union(*commands.values())
    groups = {" ".join(path) for path, command in all_commands(typer.main.get_command(app)) if getattr(command, "commands", None)}
    stale_headings = sorted(f"pipeline {c}" for c in command_sections(pages()) if c not in commands and c not in groups)
    stale_commands, stale_options = set(), set()
    for page in pages():
        for line in code_lines(page):
            where = f"{line.page.relative_to(ROOT)}:{line.number}"
            for match in re.finditer(r"(?:^|[\s/\"'(])pipeline\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?", line.text):
                name = f"cache {match.group(2)}" if match.group(1) == "cache" and match.group(2) else match.group(1)
                if name not in commands and name != "cache":
                    stale_commands.add(f"{where}: pipeline {name}")
            for command, option in invocations(line):
                known = commands.get(command) if command is not None else every_option
                if known is None:
                    continue  # an unknown command: reported above
                if option not in known:
                    stale_options.add(f"{where}: {'pipeline ' + command + ' ' if command else ''}{option}")
    assert not (stale_headings or stale_commands or stale_options), report(
        **{"headings of commands that do not exist": stale_headings,
           "commands that do not exist": sorted(stale_commands),
           "options their command does not have": sorted(stale_options)}
    )


# --- site.toml ---------------------------------------------------------------------------


def documented_settings() -> set[tuple[str, str]]:
    """``(table, key)`` from the "Settings" table of the configuration page."""
    settings = set()
    for cells in table_rows(CONFIG_PAGE, "Settings"):
        key, table = cells[0].strip("`"), cells[1].strip("`[]")
        settings.add(("" if table == "top level" else table, key))
    return settings


def test_every_site_toml_setting_is_in_the_guide_and_every_one_it_names_exists():
    code, guide = config_keys(), documented_settings()
    show = lambda keys: sorted(f"[{table}] {key}" if table else key for table, key in keys)  # noqa: E731
    assert code == guide, report(**{"settings missing from site-toml.md's Settings table": show(code - guide),
                                    "settings in that table the loader does not know": show(guide - code)})


def test_every_chunking_option_is_in_the_guide_and_every_one_it_names_exists():
    code = strategy_options()
    guide: dict[str, set[str]] = {}
    for cells in table_rows(CONFIG_PAGE, "Chunking Options"):
        option = cells[0].strip("`")
        for strategy in re.findall(r"`([a-z]+)`", cells[1]):
            guide.setdefault(strategy, set()).add(option)
    flat = lambda table: {f"{s}.{o}" for s, options in table.items() for o in options}  # noqa: E731
    assert flat(code) == flat(guide), report(
        **{"strategy options missing from the Chunking Options table": sorted(flat(code) - flat(guide)),
           "options in that table the strategy does not have": sorted(flat(guide) - flat(code))}
    )


def toml_blocks() -> list[tuple[str, str]]:
    blocks = []
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for match in re.finditer(r"^```toml\n(.*?)^```", text, re.S | re.M):
            blocks.append((f"{page.relative_to(ROOT)}:{text[: match.start()].count(chr(10)) + 1}", match.group(1)))
    return blocks


def test_every_toml_example_in_the_guide_loads(tmp_path):
    options = strategy_options()
    failures = []
    for where, block in toml_blocks():
        data = tomllib.loads(block)
        if block.startswith("# _chunking.toml"):  # a folder's chunking layer: a strategy and its options
            chunking = data
        else:
            path = tmp_path / "site.toml"
            path.write_text(block, encoding="utf-8")
            try:
                load_config(path)
            except Exception as error:  # noqa: BLE001 - the message is the report
                failures.append(f"{where}: {error}")
            chunking = data.get("chunking", {})
        strategy = chunking.get("strategy", "markdown")
        unknown = set(chunking) - {"strategy"} - options.get(strategy, set())
        if strategy not in options or unknown:
            failures.append(f"{where}: strategy {strategy!r} has no option(s) {sorted(unknown)}" if unknown else f"{where}: no strategy {strategy!r}")
    assert toml_blocks(), "the guide has no site.toml example"
    assert not failures, report(**{"TOML examples the loader refuses": failures})


# --- schemas -----------------------------------------------------------------------------


def test_every_shipped_schema_is_in_the_guide_and_every_one_it_names_exists():
    shipped = set(schema_texts())
    named = {name for page in pages() for name in re.findall(r"(?<![\w*-])([a-z][\w-]*\.schema\.json)", page.read_text(encoding="utf-8"))}
    assert shipped == named, report(**{"shipped schemas the guide does not name": sorted(shipped - named),
                                       "schemas the guide names that are not shipped": sorted(named - shipped)})


# --- the checks themselves ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command", "expected"),
    [
        ("pipeline build content --out site --drop-removed", None, [("build", "--out"), ("build", "--drop-removed")]),
        (".venv/bin/pipeline cache prune --max-size 2G", None, [("cache prune", "--max-size")]),
        ("pip install x --index-url u", "build", []),
        ("pipeline search site q --json | jq --raw-output", None, [("search", "--json")]),
        ("--port 8000", "serve", [("serve", "--port")]),
        ("--port", None, [(None, "--port")]),
        ("set -euo pipefail", None, []),
        ("python -m pipeline sample site t -n 3", None, [("sample", "-n")]),
        ("pipeline --version", None, [("", "--version")]),
    ],
)
def test_options_are_read_with_the_command_they_belong_to(text, command, expected):
    assert invocations(Line(Path("x.md"), 1, text, command)) == expected


def test_a_command_section_ends_at_the_next_heading_of_its_level(tmp_path):
    page = tmp_path / "cli.md"
    page.write_text("# CLI\n## `pipeline build`\n`--out`\n### Notes\n`--config`\n## Other\n`--port`\n", encoding="utf-8")
    assert command_sections([page]) == {"build": "`--out`\n### Notes\n`--config`\n"}
    assert [(line.text, line.command) for line in code_lines(page)] == [
        ("pipeline build", "build"), ("--out", "build"), ("--config", "build"), ("--port", None)
    ]
