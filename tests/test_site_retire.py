"""Readers of a site being rebuilt (issue 15.3): a reader who fetched index.json before a build
was published follows its links after it, and never meets a 404 (``site/retire.py``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build
from pipeline.site.retire import RETIRED_FILE, expire, read_retired, retire, site_files
from sitecheck import built_files, site_problems
from test_build import FILES

EDITS = {  # a section removed, a document and a whole topic folder deleted, one document added
    "guide/basics/handbook.md": "# Handbook\n\nShort now.\n\n## Only\n\nOne section about the stripe order.\n",
    "reference/added.md": "# Added\n\nA new document.\n\n## More\n\nWith two sections.\n",
}
MISSING = ("names no file", "chunk file missing", "missing")


def _build(content: Path, site: Path, **config) -> None:
    cfg = SiteConfig(cache_dir=content.parent / "cache", embedder="hashing", **config)
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)


def _edit(content: Path) -> None:
    (content / "guide/tools/tool.md").unlink()
    shutil.rmtree(content / "guide/tools")
    write_tree(content, EDITS)


def _indexes(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in site.rglob("index.json") if "_" not in p.parts[-2][:1]}


def _dangling_for_a_reader_of(old_indexes: dict[str, bytes], site: Path, scratch: Path) -> list[str]:
    """Links of the indexes a reader fetched before the build that name no file in ``site`` now:
    checked on a copy of ``site`` with the reader's index.json files put back in place."""
    view = scratch / "reader-view"
    shutil.rmtree(view, ignore_errors=True)
    shutil.copytree(site, view)
    for rel, data in old_indexes.items():
        (view / rel).parent.mkdir(parents=True, exist_ok=True)
        (view / rel).write_bytes(data)
    return [p for p in site_problems(view) if p.endswith(MISSING)]


@pytest.mark.parametrize("retire_removed", [True, False])
def test_a_reader_holding_the_previous_index_meets_no_404_after_a_rebuild(tmp_path, retire_removed):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site)
    before = _indexes(site)
    _edit(content)
    _build(content, site, retire_removed_files=retire_removed)
    dangling = _dangling_for_a_reader_of(before, site, tmp_path)
    if retire_removed:
        assert dangling == []
        assert any(rel.startswith("guide/tools/") for rel in read_retired(site))
    else:  # the failure this guards against: links of the index just read answer 404
        assert any("tool" in problem for problem in dangling)
        assert not (site / RETIRED_FILE).exists()


def test_retired_files_go_with_the_next_build_which_then_equals_a_fresh_one(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site)
    _edit(content)
    _build(content, site)
    retired = read_retired(site)
    assert retired and all((site / rel).is_file() for rel in retired)
    assert "guide/tools/index.json" in retired  # a removed topic's index stays readable too
    assert not built_files(site).keys() & retired
    _build(content, site)  # nothing changed: only the retired files go
    assert read_retired(site) == set() and not (site / RETIRED_FILE).exists()
    assert not (site / "guide/tools").exists()  # the folders they leave empty go as well
    fresh = tmp_path / "fresh"
    _build(content, fresh)
    assert built_files(site) == built_files(fresh)
    assert site_files(site) == site_files(fresh)


def test_a_retired_name_built_again_is_the_new_file_and_not_listed(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site)
    original = (content / "guide/tools/tool.md").read_bytes()
    _edit(content)
    _build(content, site)
    assert "guide/tools/tool.md" in read_retired(site)
    write_tree(content, {"guide/tools/tool.md": original})
    _build(content, site)
    assert "guide/tools/tool.md" not in read_retired(site)
    assert (site / "guide/tools/tool.md").read_bytes() == original
    assert site_problems(site) == []


def test_expire_removes_only_listed_files_inside_the_site(tmp_path):
    site = write_tree(tmp_path / "site", {"a/x.md": "x", "a/keep.md": "k", "b/y.md": "y"})
    outside = write_tree(tmp_path / "outside", {"secret": "s"})
    (site / RETIRED_FILE).write_text('["a/x.md", "b/y.md", "../outside/secret", "/etc/passwd", "a/../b/y.md", 7]')
    assert expire(site) == ["a/x.md", "b/y.md"]
    assert sorted(site_files(site)) == ["a/keep.md"] and not (site / "b").exists()
    assert (outside / "secret").read_text() == "s" and not (site / RETIRED_FILE).exists()


@pytest.mark.parametrize("listing", [b"{not json", b'{"a": 1}', b"null"])
def test_an_unreadable_retired_list_retires_nothing_and_removes_nothing(tmp_path, listing):
    site = write_tree(tmp_path / "site", {"a/x.md": "x"})
    (site / RETIRED_FILE).write_bytes(listing)
    assert read_retired(site) == set() and expire(site) == []
    assert (site / "a/x.md").is_file()


def test_retire_links_what_the_new_site_lacks_except_what_already_had_its_extra_build(tmp_path):
    old = write_tree(tmp_path / "old", {"a/x.md": "x", "a/y.md": "y", "b/z.md": "z", "same.md": "1"})
    new = write_tree(tmp_path / "new", {"same.md": "2", "b": "now a file"})  # so b/z.md cannot come back
    assert retire(old, new, expired={"a/y.md"}) == ["a/x.md"]
    assert (new / "a/x.md").stat().st_ino == (old / "a/x.md").stat().st_ino  # a link, not a copy
    assert (new / "same.md").read_text() == "2" and not (new / "a/y.md").exists()
    assert read_retired(new) == {"a/x.md"}


@pytest.mark.parametrize("how", [["--drop-removed"], ["--config", "site.toml"]])
def test_the_cli_flag_and_the_config_key_drop_removed_files_at_once(tmp_path, how):
    from test_build import run_cli

    content = write_tree(tmp_path / "content", FILES)
    (tmp_path / "site.toml").write_text("retire_removed_files = false\n")
    args = ["build", "content", "--out", "site", "--embedder", "hashing", "--cache-dir", "cache", "-q"]
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    _edit(content)
    result = run_cli(*args, *how, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "site/guide/tools").exists() and not (tmp_path / "site" / RETIRED_FILE).exists()


def test_removed_files_skips_only_folders_neither_tree_changed(tmp_path, monkeypatch):
    """``removed_files`` equals the set difference of the two trees' files; with ``since`` it
    lists no file of a folder whose entries neither tree changed after ``since``."""
    import os
    import time

    import pipeline.site.retire as retire_mod
    from pipeline.site.staging import mirror_tree

    monkeypatch.setattr(retire_mod, "CHANGE_MARGIN_NS", 0)  # the test's folders are young
    old = write_tree(tmp_path / "old", {
        "a/one.md": "1", "a/two.md": "2", "a/deep/three.md": "3", "b/c/four.md": "4", "b/five.md": "5", "top.md": "t",
        "d/seven.md": "7", "d/e/eight.md": "8",
    })
    new = tmp_path / "new"
    new.mkdir()
    mirror_tree(old, new)
    time.sleep(0.05)  # later ticks of the filesystem's clock
    since = time.time_ns()
    time.sleep(0.05)
    assert mirror_tree(old, new) == 0  # nothing to do: no folder changes
    (new / "a/two.md").unlink()  # a build removes a file ...
    shutil.rmtree(new / "b/c")  # ... and a folder
    (new / "a/deep/new.md").write_text("n")
    listed = []
    real = retire_mod._listing
    monkeypatch.setattr(retire_mod, "_listing", lambda folder, root: (listed.append(os.path.relpath(folder, tmp_path)), real(folder, root=root))[1])
    expected = site_files(old) - site_files(new)
    listed.clear()
    assert retire_mod.removed_files(old, new, since) == expected == {"a/two.md", "b/c/four.md"}
    assert "old/b" in listed and "old/a" in listed and "old/a/deep" in listed  # changed: listed
    assert "old/d" not in listed and "old/d/e" not in listed  # untouched by both: only entered
    assert retire_mod.removed_files(old, new) == expected
    # a folder of OLD changed after ``since`` (a file added to the live site by hand) is listed too
    (old / "b/c2").mkdir()
    (old / "b/c2/six.md").write_text("6")
    assert retire_mod.removed_files(old, new, since) == expected | {"b/c2/six.md"}


def test_the_summary_says_what_happened_to_removed_files(tmp_path):
    """Issue 34: a build that retired files said "22 removed" while they were still served, then
    "0 removed" when they went. Now: retired (served until the next build), then removed."""
    content, site = write_tree(tmp_path / "content", FILES), tmp_path / "site"
    cfg = SiteConfig(cache_dir=tmp_path / "cache", embedder="hashing")
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    _edit(content)
    report = build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    retired = sorted(read_retired(site))
    assert retired and report.retired == retired and all((site / rel).is_file() for rel in retired)
    assert report.summary().endswith(f", {len(retired)} files retired, served until the next build")
    report = build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    assert report.expired == retired and not any((site / rel).exists() for rel in retired)
    assert report.summary().endswith(f"; 0 files written, {len(retired)} retired files removed")
    assert build(content, site, cfg, embedder=HashingEmbedder(), progress=False).summary().endswith(", 0 removed")


def test_a_build_that_drops_removed_files_says_removed(tmp_path):
    content, site = write_tree(tmp_path / "content", FILES), tmp_path / "site"
    cfg = SiteConfig(cache_dir=tmp_path / "cache", embedder="hashing", retire_removed_files=False)
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    _edit(content)
    report = build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    assert not report.retired and not (site / RETIRED_FILE).exists()
    dropped = int(report.summary().rsplit(", ", 1)[1].removesuffix(" removed"))
    assert dropped > 5 and "retired" not in report.summary()
