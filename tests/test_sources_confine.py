"""Confinement (issue 15.1, 15.2): links in CONTENT are never followed, links in OUT never make a
build write or delete outside it, and overlapping CONTENT / OUT / cache folders are refused before
anything is written or removed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from pipeline.sources.confine import check_separate
from sitecheck import assert_consistent
from test_build import FILES

SECRET = "SECRET-TOKEN-4711"


def _build(content: Path, site: Path, cache: Path) -> None:
    build(content, site, SiteConfig(cache_dir=cache), embedder=HashingEmbedder(), progress=False)


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def test_symlinks_in_content_are_never_followed_and_each_is_named_in_a_warning(tmp_path):
    outside = write_tree(tmp_path / "outside", {"passwd": f"root:x:0:0:{SECRET}\n", "folder/.env": f"KEY={SECRET}\n",
                                                "folder/notes.md": f"# Notes\n\n{SECRET}\n", "words.md": f"| keyword | score |\n|---|---|\n| {SECRET} | 9 |\n"})
    content = write_tree(tmp_path / "content", FILES)
    os.symlink(outside / "passwd", content / "guide/basics/passwd.md")
    os.symlink(outside / "folder", content / "guide/linked")
    os.symlink(outside / "folder/.env", content / "reference/env.md")
    os.symlink(content / "reference/notes.md", content / "reference/alias.md")  # inside CONTENT: skipped too
    os.symlink(outside / "words.md", content / "reference/qa-pairs.md")
    os.symlink(tmp_path / "nowhere", content / "reference/dangling.md")
    (content / "guide/tools/_keywords").symlink_to(outside, target_is_directory=True)
    write_tree(outside, {"chunking.toml": 'strategy = "no-such-strategy"\n'})
    os.symlink(outside / "chunking.toml", content / "guide/_chunking.toml")  # followed, it would fail the build
    site = tmp_path / "site"
    with pytest.warns(UserWarning) as caught:
        _build(content, site, tmp_path / "cache")
    messages = "\n".join(str(w.message) for w in caught)
    for link in ["guide/_chunking.toml", "guide/basics/passwd.md", "guide/linked", "reference/env.md", "reference/alias.md", "reference/dangling.md"]:
        assert f"{content / link}: skipped a symbolic link" in messages
    assert "outside the content directory" in messages and "inside the content directory" in messages
    for path in site.rglob("*"):
        assert not path.is_symlink()
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert not (site / "guide/linked").exists() and not (site / "reference/alias.md").exists()
    assert_consistent(site)


def test_a_symlink_inside_out_never_makes_a_rebuild_write_or_delete_outside(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path / "cache")
    victim = write_tree(tmp_path / "victim", {"handbook-0.md": "mine", "keep.txt": "mine too", "handbook.json": "{}"})
    before = _tree_bytes(victim)
    chunks = site / "guide/basics/_chunks"
    for path in chunks.iterdir():
        path.unlink()
    chunks.rmdir()
    chunks.symlink_to(victim, target_is_directory=True)
    (site / "reference/notes.md").unlink()
    (site / "reference/notes.md").symlink_to(victim / "keep.txt")
    _build(content, site, tmp_path / "cache")
    assert _tree_bytes(victim) == before
    assert not chunks.is_symlink() and (chunks / "handbook-0.md").is_file()
    assert not (site / "reference/notes.md").is_symlink()
    assert_consistent(site)


def _overlaps(tmp_path: Path) -> dict[str, tuple[Path, Path, Path]]:
    """name -> (content, out, cache) that overlap; ``site`` is an existing pipeline site."""
    t = tmp_path
    (t / "link-to-site").symlink_to(t / "site", target_is_directory=True)
    (t / "link-to-content").symlink_to(t / "content", target_is_directory=True)
    return {
        "content inside out": (t / "site/notes", t / "site", t / "cache"),
        "out inside content": (t / "content", t / "content/site", t / "cache"),
        "same folder": (t / "content", t / "content", t / "cache"),
        "cache inside out": (t / "content", t / "site", t / "site/cache"),
        "out inside cache": (t / "content", t / "cache/site", t / "cache"),
        "cache is content": (t / "content", t / "site", t / "content"),
        "cache inside content": (t / "content", t / "site", t / "content/.embedding-cache"),
        "content inside out through a link": (t / "link-to-site/notes", t / "site", t / "cache"),
        "out is content through a link": (t / "content", t / "link-to-content", t / "cache"),
        "cache inside out through a link": (t / "content", t / "site", t / "link-to-site/.cache"),
    }


@pytest.mark.parametrize("case", [
    "content inside out", "out inside content", "same folder", "cache inside out", "out inside cache",
    "cache is content", "cache inside content", "content inside out through a link",
    "out is content through a link", "cache inside out through a link",
])
def test_every_overlap_of_content_out_and_cache_is_refused_before_anything_is_written(tmp_path, case):
    write_tree(tmp_path / "content", FILES)
    _build(tmp_path / "content", tmp_path / "site", tmp_path / "cache")
    write_tree(tmp_path / "site/notes", {"mine.md": "# Mine\n\nThe user's notes.\n"})
    content, out, cache = _overlaps(tmp_path)[case]
    snapshot = {name: _tree_bytes(tmp_path / name) for name in ("content", "site", "cache")}
    listing = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(PipelineError, match="overlap"):
        build(content, out, SiteConfig(cache_dir=cache), embedder=HashingEmbedder(), progress=False)
    assert {name: _tree_bytes(tmp_path / name) for name in ("content", "site", "cache")} == snapshot
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no lock, no staging folder


def test_cli_refuses_content_inside_out_with_exit_1_and_keeps_it(tmp_path):
    write_tree(tmp_path / "site/notes", {"x.md": "# X\n\nMy notes.\n"})
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "build", "site/notes", "--out", "site", "--embedder", "hashing"],
        cwd=tmp_path, capture_output=True, text=True,
    )
    assert result.returncode == 1 and "overlap" in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "site/notes/x.md").read_text() == "# X\n\nMy notes.\n"


def test_check_separate_accepts_siblings_and_a_bind_like_alias(tmp_path):
    for name in ("a", "b", "ab"):
        (tmp_path / name).mkdir()
    check_separate({"content": tmp_path / "a", "output": tmp_path / "ab", "cache": tmp_path / "b"})
    check_separate({"content": tmp_path / "a", "output": tmp_path / "new/site", "cache": tmp_path / "b/c"})
    with pytest.raises(PipelineError, match="the output directory .* and the cache directory"):
        check_separate({"content": tmp_path / "a", "output": tmp_path / "new", "cache": tmp_path / "new/sub/cache"})
