"""A content file swapped for a symbolic link while a build reads it (issue 35.1): the link is
never followed, whatever the moment of the swap, and a file that changes under the build is a
clear refusal (PipelineError naming it), never a traceback or a site whose copy and chunks differ.

The moments are forced one by one below; ``bench.stress.race`` then flips the file as fast as a
thread can during 60 builds (``python -m bench.stress`` runs it longer, docs/BENCHMARKS.md).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site import build as build_module
from pipeline.site.build import build
from sitecheck import assert_consistent, built_files
from stress import race

FILES = {"a.md": "# Apples\n\nAbout apples.\n", "race.md": "# Race\n\nA regular file.\n"}


@pytest.fixture
def outside(tmp_path) -> Path:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nTOP-SECRET-LINE, outside the content folder.\n", encoding="utf-8")
    return secret


def _build(world: Path) -> None:
    build(world / "content", world / "site", SiteConfig(cache_dir=world / "cache", embedder="hashing", search_encoder=False),
          embedder=HashingEmbedder(), progress=False)


def _swap_for_link(path: Path, target: Path) -> None:
    tmp = path.with_name(".swap")
    tmp.symlink_to(target)
    os.replace(tmp, path)


def _site_text(site: Path) -> str:
    return "".join(p.read_text(encoding="utf-8", errors="replace") for p in site.rglob("*") if p.is_file())


def test_a_link_swapped_in_after_the_listing_is_not_read(tmp_path, outside, monkeypatch):
    """The listing saw a regular file; the read meets the link: skipped with the link warning."""
    write_tree(tmp_path / "content", FILES)
    from pipeline.chunking import tool

    listed = tool.all_documents

    def list_then_swap(*args, **kwargs):
        docs = listed(*args, **kwargs)
        _swap_for_link(tmp_path / "content" / "race.md", outside)
        return docs

    monkeypatch.setattr(tool, "all_documents", list_then_swap)
    with pytest.warns(UserWarning, match=r"race\.md: skipped a symbolic link to .*secret\.md"):
        _build(tmp_path)
    site = tmp_path / "site"
    assert "TOP-SECRET-LINE" not in _site_text(site)
    assert not (site / "race.md").exists() and not (site / "_chunks" / "race-0.md").exists()
    assert_consistent(site)


def test_a_document_swapped_for_a_link_between_chunking_and_copy_refuses_the_build(tmp_path, outside, monkeypatch):
    """Its chunks are made; the copy meets the link: the build stops, naming the file, and the
    previous site stays whole; the next build (no race) publishes."""
    write_tree(tmp_path / "content", FILES)
    _build(tmp_path)
    before = built_files(tmp_path / "site")
    checked = build_module.check_topic_inputs  # runs between the chunking and the copy

    def check_then_swap(*args, **kwargs):
        checked(*args, **kwargs)
        _swap_for_link(tmp_path / "content" / "race.md", outside)

    (tmp_path / "content" / "race.md").write_text("# Race\n\nEdited, so it is read again.\n", encoding="utf-8")
    monkeypatch.setattr(build_module, "check_topic_inputs", check_then_swap)
    with pytest.raises(PipelineError, match=r"race\.md: .*symbolic link while the build was reading the content folder; build again"):
        _build(tmp_path)
    assert built_files(tmp_path / "site") == before
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _build(tmp_path)
    assert "TOP-SECRET-LINE" not in _site_text(tmp_path / "site")
    assert "race.md" not in built_files(tmp_path / "site")  # (kept one build for readers: site/retire.py)
    assert_consistent(tmp_path / "site")


def test_a_document_edited_between_chunking_and_copy_refuses_the_build(tmp_path, monkeypatch):
    write_tree(tmp_path / "content", FILES)
    checked = build_module.check_topic_inputs

    def check_then_edit(*args, **kwargs):
        checked(*args, **kwargs)
        (tmp_path / "content" / "race.md").write_text("# Race\n\nAnother text.\n", encoding="utf-8")

    monkeypatch.setattr(build_module, "check_topic_inputs", check_then_edit)
    with pytest.raises(PipelineError, match=r"race\.md: changed while the build"):
        _build(tmp_path)
    assert not (tmp_path / "site").exists()


def test_a_document_removed_after_the_listing_is_skipped_with_a_warning(tmp_path, monkeypatch):
    write_tree(tmp_path / "content", FILES)
    from pipeline.chunking import tool

    listed = tool.all_documents
    monkeypatch.setattr(tool, "all_documents", lambda *a, **k: (listed(*a, **k), (tmp_path / "content" / "race.md").unlink())[0])
    with pytest.warns(UserWarning, match=r"race\.md: was removed during the build; skipped"):
        _build(tmp_path)
    assert not (tmp_path / "site" / "race.md").exists()
    assert_consistent(tmp_path / "site")


def test_a_link_flipping_during_60_builds_never_leaks_and_never_raises_a_traceback(tmp_path, outside):
    counts = race(tmp_path / "world", builds=60, outside=outside)
    assert counts["leaks"] == 0, counts
    assert counts["tracebacks"] == 0, counts
    assert counts["published"] + counts["refused"] == 60
    assert counts["flips"] > 60  # the file did flip while the builds ran
    assert all("build again" in e for e in counts["errors"]), counts["errors"]
