"""The command line itself: --version, help on every option, -q silence."""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer.main

from conftest import ROOT, write_tree
from pipeline import __version__
from pipeline.cli import app


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})


def all_commands(command, path: tuple[str, ...] = ()):
    """Every command below ``command`` (typer vendors its own click: duck-typed groups)."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from all_commands(sub, (*path, name))


def test_version():
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"pipeline {__version__}"


def test_every_option_and_argument_of_every_command_has_help():
    root = typer.main.get_command(app)
    seen = 0
    for path, command in all_commands(root):
        assert command.help, f"{' '.join(path) or 'pipeline'} has no help"
        for param in command.params:
            if param.name == "help":
                continue
            seen += 1
            assert getattr(param, "help", None), f"pipeline {' '.join(path)}: {param.opts} has no help text"
    assert seen > 40 and {"cache prune", "serve", "build"} <= {" ".join(p) for p, _ in all_commands(root)}


def test_chunk_max_tokens_is_shown_as_an_integer():
    result = run_cli("chunk", "--help")
    line = next(line for line in result.stdout.splitlines() if "--max-tokens" in line)
    assert "<int>" in line and "<str>" not in line


def test_quiet_build_prints_nothing(tmp_path):
    write_tree(tmp_path / "content", {"kb/a.md": "# A\n\nText.\n\n## B\n\nMore text.\n"})
    def build(out, *extra):
        return run_cli("build", "content", "--out", out, "--embedder", "hashing", "--cache-dir", f"cache-{out}", *extra, cwd=tmp_path)

    loud = build("site")
    assert loud.returncode == 0 and "embedding 2 chunks" in loud.stderr and "built site" in loud.stderr
    quiet = build("site2", "-q")
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == ""
    assert (tmp_path / "site2/kb/index.json").is_file()


def test_counts_of_one_are_said_in_the_singular(tmp_path):
    write_tree(tmp_path / "content", {"kb/a.md": "# A\n\nText.\n"})
    built = run_cli("build", "content", "--out", "site", "--embedder", "hashing", "--cache-dir", "cache", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "embedding 1 chunk with" in built.stderr
    assert "1 document, 1 chunk (1 embedded, 0 from cache), 1 topic, " in built.stderr


def test_quiet_stages_alone_print_nothing(tmp_path):
    write_tree(tmp_path / "site", {"kb/a.md": "# A\n\nText.\n\n## B\n\nMore text.\n"})
    for stage in (["chunk-dir", "site", "--embedder", "hashing"], ["spec", "site", "--embedder", "hashing", "--cache-dir", "c"],
                  ["index", "site"], ["publish", "site", "--cache-dir", "c"], ["cache", "prune", "c"]):
        result = run_cli(*stage, "-q", cwd=tmp_path)
        assert result.returncode == 0 and result.stderr == "" and result.stdout == "", (stage, result.stderr)
    assert (tmp_path / "site/kb/_embeddings.bin").is_file()


def test_serve_watch_needs_a_content_folder(tmp_path):
    result = run_cli("serve", "site", "--watch", "missing", "-p", "0", cwd=tmp_path)
    assert result.returncode == 1 and "missing" in result.stderr and not (tmp_path / "site").exists()


def test_quiet_still_shows_errors(tmp_path):
    result = run_cli("build", "missing", "--out", "site", "--embedder", "hashing", "-q", cwd=tmp_path)
    assert result.returncode == 1 and "error:" in result.stderr


@pytest.mark.model
def test_quiet_hides_the_models_loading_bars(tmp_path):
    write_tree(tmp_path / "content", {"kb/a.md": "# A\n\nCats are small.\n\n## B\n\nFish.\n"})
    result = run_cli("build", "content", "--out", "site", "--cache-dir", "cache", "-q", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr  # no "Loading weights" bar, no lines
    found = run_cli("search", "site", "what do cats eat", "--method", "embedding", "-q", cwd=tmp_path)
    assert found.returncode == 0 and "kb/a.md" in found.stdout and found.stderr == "", found.stderr
