"""Publishing as one switch (issue 15.3): the lock, recycling generations, the marker of a killed
build, the fallback swap, and ``mirror_tree``'s invariant."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.reuse import stamps
from pipeline.site import staging
from pipeline.site.build import build
from pipeline.site.staging import mirror_tree, sibling
from sitecheck import assert_consistent, built_files
from test_build import FILES


def _build(content: Path, site: Path, tmp_path: Path, embedder=None) -> None:
    config = SiteConfig(cache_dir=tmp_path / "cache", search_encoder=False)  # the static encoder's ~3,600 shards cost seconds a build and are written like any _search file
    build(content, site, config, embedder=embedder or HashingEmbedder(), progress=False)


def _files(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_a_site_whose_marker_write_was_killed_is_still_recognised(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    for name in ("..pipeline-site.4242.tmp", "..pipeline-site.4242.0.tmp"):  # earlier and current temp names
        site = tmp_path / f"site-{name}"
        site.mkdir()
        (site / name).write_bytes(b"built by")
        _build(content, site, tmp_path)
        assert (site / ".pipeline-site").is_file() and not (site / name).exists()
        assert_consistent(site)


def test_a_killed_builds_temp_files_in_the_site_are_gone_after_the_next_build(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    for name in ("..pipeline-state.json.999.tmp", "guide/basics/_chunks/.handbook-0.md.999.3.tmp", "guide/.index.json.77.tmp"):
        (site / name).write_bytes(b"half")
    _build(content, site, tmp_path)
    assert not [p for p in site.rglob("*.tmp")]
    assert_consistent(site)


def test_a_second_build_into_a_locked_output_fails_clearly_and_changes_nothing(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    before = _files(site)
    write_tree(content, {"reference/new.md": "# New\n\nNew text.\n"})
    with open(sibling(site, "lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(PipelineError, match="another build is writing this output"):
            _build(content, site, tmp_path)
    assert _files(site) == before
    _build(content, site, tmp_path)  # the lock is free again
    assert "reference/_chunks/new-0.md" in _files(site)


def test_two_builds_at_once_never_interleave(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    write_tree(content, {"reference/new.md": "# New\n\nNew text.\n"})
    reference = tmp_path / "reference"
    _build(content, reference, tmp_path)
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 3
            try:
                _build(content, site, tmp_path)
                code = 0
            except PipelineError as error:
                code = 1 if "another build" in str(error) else 2
            finally:
                os._exit(code)
        children.append(pid)
    codes = sorted(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children)
    assert codes in ([0, 0], [0, 1])  # one after the other, or the second refused
    assert built_files(site) == built_files(reference)  # less what the rebuild retired
    assert_consistent(site)


def test_the_previous_generation_is_recycled_without_relinking_unchanged_files(tmp_path, monkeypatch):
    # every stamp recorded at once: else a later build adds them to the state as files age
    monkeypatch.setattr(stamps, "RACY_NS", -(10**18))
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    _build(content, site, tmp_path)  # now a previous generation exists; this build verified and stamped every file
    _build(content, site, tmp_path)  # a no-op: the previous generation is the site
    previous = sibling(site, "previous")
    assert previous.is_dir() and _files(previous) == _files(site)
    linked = []
    real = staging.mirror_tree
    monkeypatch.setattr(staging, "mirror_tree", lambda src, dst: linked.append(real(src, dst)) or linked[-1])
    _build(content, site, tmp_path)
    assert linked == [0]  # a no-op rebuild links no file
    assert sorted(p.name for p in tmp_path.iterdir()) == [".site.pipeline-lock", ".site.pipeline-memo", ".site.pipeline-previous", ".site.pipeline-stamps", "cache", "content", "site"]


def test_without_renameat2_the_fallback_swap_publishes_and_a_kill_inside_it_is_repaired(tmp_path, monkeypatch):
    def unsupported(a, b):
        raise OSError(errno.ENOSYS, "no renameat2")

    monkeypatch.setattr(staging, "exchange", unsupported)
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    old = _files(site)
    write_tree(content, {"reference/new.md": "# New\n\nNew text.\n"})
    _build(content, site, tmp_path)
    new = built_files(site)  # the repair below is another build: what it retires differs
    assert new != old and "reference/_chunks/new-0.md" in new
    # a build killed between the fallback's two renames: OUT missing, the old site at swapping
    assert _files(sibling(site, "previous")) == old
    os.replace(site, sibling(site, "staging"))
    os.replace(sibling(site, "previous"), sibling(site, "swapping"))
    _build(content, site, tmp_path)
    assert built_files(site) == new
    assert_consistent(site)
    assert not sibling(site, "swapping").exists()


def test_a_site_deleted_by_hand_is_built_anew_not_resurrected(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    _build(content, site, tmp_path)
    _build(content, site, tmp_path)
    assert sibling(site, "previous").is_dir()
    shutil.rmtree(site)
    (content / "reference/notes.md").unlink()
    (content / "reference").rmdir()
    _build(content, site, tmp_path)
    assert not (site / "reference").exists()
    assert (site / ".pipeline-state.json").is_file()
    assert_consistent(site)


def test_an_output_given_as_a_link_is_built_at_its_target_and_stays_a_link(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    real = tmp_path / "real-site"
    link = tmp_path / "site"
    link.symlink_to(real, target_is_directory=True)
    real.mkdir()
    _build(content, link, tmp_path)
    _build(content, link, tmp_path)
    assert link.is_symlink() and (real / "index.json").is_file()
    assert_consistent(real)


_names = st.sampled_from(["a", "b", "c.md", ".d.md.12.3.tmp"])
_trees = st.recursive(
    st.sampled_from([b"x", b"yy", "link"]),
    lambda children: st.dictionaries(_names, children, max_size=4),
    max_leaves=12,
)


def _make(root: Path, tree) -> None:
    root.mkdir(exist_ok=True)
    for name, value in tree.items():
        path = root / name
        if isinstance(value, dict):
            _make(path, value)
        elif value == "link":
            path.symlink_to(root.parent)
        else:
            path.write_bytes(value)


@settings(max_examples=60, deadline=None)
@given(src=st.dictionaries(_names, _trees, max_size=4), dst=st.dictionaries(_names, _trees, max_size=4))
def test_mirror_tree_makes_a_hard_linked_copy_without_links_or_temp_files(tmp_path_factory, src, dst):
    base = tmp_path_factory.mktemp("mirror")
    _make(base / "src", src)
    _make(base / "dst", dst)
    outside = _files(base / "src")
    mirror_tree(base / "src", base / "dst")
    assert _files(base / "src") == outside  # the source is never changed
    expected = {}
    for path in sorted((base / "src").rglob("*")):
        rel = path.relative_to(base / "src")
        if any(part.endswith(".tmp") for part in rel.parts) or any(p.is_symlink() for p in [path, *path.parents]):
            continue
        expected[rel.as_posix()] = "dir" if path.is_dir() else path.stat().st_ino
    got = {}
    for path in sorted((base / "dst").rglob("*")):
        assert not path.is_symlink()
        got[path.relative_to(base / "dst").as_posix()] = "dir" if path.is_dir() else path.stat().st_ino
    assert got == expected


def test_cli_build_into_a_locked_output_exits_1_with_a_clear_message(tmp_path):
    import subprocess
    import sys

    write_tree(tmp_path / "content", FILES)
    with open(sibling(tmp_path / "site", "lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = subprocess.run(
            [sys.executable, "-m", "pipeline", "build", "content", "--out", "site", "--embedder", "hashing", "-q"],
            cwd=tmp_path, capture_output=True, text=True,
        )
    assert result.returncode == 1 and "another build is writing this output directory" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "site").exists()
