"""Crash safety of a build (issue 15.3, issue 13.2): SIGKILL at renames across a build (``_kill_points``) and at random
moments, and failures at a stage; the published site is always the old one or the new one, whole
(``sitecheck``), and the next build repairs everything.

Builds run in forked children (the parent has imported everything already, so a trial costs a
build, not an interpreter start); ``PIPELINE_KILL_AT_RENAME`` (``pipeline/fsutil.py``) makes the
child SIGKILL itself just before its N-th rename.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import write_tree
from pipeline import fsutil
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from sitecheck import assert_consistent, built_files as _files
from test_build import FILES

V2_EDITS = {  # a section removed, a document deleted, one added: chunk files change meaning
    "guide/basics/handbook.md": "# Handbook\n\nShort now.\n\n## Only\n\nOne section about the stripe order.\n",
    "reference/added.md": "# Added\n\nA new document.\n\n## More\n\nWith two sections.\n",
}


def _config(world: Path) -> SiteConfig:
    # the static encoder's ~3,600 row shards are written like every other _search file; with
    # them each kill and repair cost seconds, so every rename could not be a kill point
    return SiteConfig(cache_dir=world / "cache", embedder="hashing", search_encoder=False)


def _build(world: Path, embedder=None) -> None:
    build(world / "content", world / "site", _config(world), embedder=embedder or HashingEmbedder(), progress=False)


def _to_v2(content: Path) -> None:
    (content / "guide/tools/tool.md").unlink()
    write_tree(content, V2_EDITS)


def _forked(world: Path, *, kill_at: int | None = None, kill_after: float | None = None) -> tuple[int, float]:
    """Run a build of ``world`` in a child; return its wait status and how long it ran (from the
    moment it started building, which it reports through a pipe, to its end or kill)."""
    ready, report = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(ready)
            if kill_at is not None:
                os.environ[fsutil.KILL_AT_RENAME] = str(kill_at)
                fsutil.reset_rename_count()
            os.write(report, b"go")
            _build(world)
            code = 0
        finally:
            os._exit(code)
    os.close(report)
    os.read(ready, 2)
    started = time.perf_counter()
    os.close(ready)
    if kill_after is not None:
        time.sleep(kill_after)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    status = os.waitpid(pid, 0)[1]
    return status, time.perf_counter() - started


@pytest.fixture(scope="module")
def worlds(tmp_path_factory):
    """(pristine world: site of v1 with content already at v2, v1 site files, v2 site files)."""
    base = tmp_path_factory.mktemp("kill")
    pristine = base / "pristine"
    write_tree(pristine / "content", FILES)
    _build(pristine)
    old = _files(pristine / "site")
    _to_v2(pristine / "content")
    reference = base / "reference"
    shutil.copytree(pristine, reference, symlinks=True)
    _build(reference)
    new = _files(reference / "site")
    assert old != new
    return base, pristine, old, new


def _fresh_world(base: Path, pristine: Path) -> Path:
    world = base / "world"
    if world.exists():
        shutil.rmtree(world)
    shutil.copytree(pristine, world, symlinks=True)
    return world


def _renames_of_a_rebuild(base: Path, pristine: Path) -> int:
    world = _fresh_world(base, pristine)
    fsutil.reset_rename_count()
    os.environ[fsutil.KILL_AT_RENAME] = "0"  # counts, never fires
    try:
        _build(world)
        return next(fsutil._renames) - 1
    finally:
        del os.environ[fsutil.KILL_AT_RENAME]


def _kill_points(total: int) -> list[int]:
    """Renames to kill at: the first and last 12 of a build (its stages' first writes, and the
    switch of the published site) and 24 spread evenly between. A real site's build writes
    thousands of files, one kill and repair each would take an hour; the same kinds of write
    repeat, so the sample meets each kind."""
    step = max(1, total // 24)
    return sorted({*range(1, min(total, 12) + 1), *range(1, total + 1, step), *range(max(1, total - 11), total + 1)})


def _check_killed_then_repaired(world: Path, status: int, old: dict, new: dict) -> str:
    site = world / "site"
    assert_consistent(site)
    published = _files(site)
    assert published in (old, new), "the site is neither the old one nor the new one"
    _build(world)  # the next build repairs everything
    assert_consistent(site)
    assert _files(site) == new
    assert not (world / ".site.pipeline-staging").exists()
    return "old" if published == old else "new"


def test_sigkill_at_renames_across_a_rebuild_leaves_old_or_new_site_and_next_build_repairs(worlds):
    base, pristine, old, new = worlds
    total = _renames_of_a_rebuild(base, pristine)
    assert total > 10
    seen = []
    for n in _kill_points(total):
        world = _fresh_world(base, pristine)
        status, _ = _forked(world, kill_at=n)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (n, status)
        seen.append(_check_killed_then_repaired(world, status, old, new))
    # every kill before the switch left the old site; the ones after it the new one
    assert seen[0] == "old" and seen[-1] == "new" and seen == sorted(seen, key=["old", "new"].index)
    world = _fresh_world(base, pristine)
    assert _forked(world, kill_at=total + 1)[0] == 0  # one past the last rename: the build completes
    assert _files(world / "site") == new


def test_sigkill_at_random_moments(worlds):
    """Dozens of SIGKILLs at random moments of a rebuild (each a real kill of a running build;
    a trial whose build finished first does not count)."""
    base, pristine, old, new = worlds
    durations = []
    for _ in range(3):
        status, duration = _forked(_fresh_world(base, pristine))
        assert status == 0
        durations.append(duration)
    rng = random.Random(15)
    outcomes = []
    for _trial in range(200):
        world = _fresh_world(base, pristine)
        status, _ = _forked(world, kill_after=rng.uniform(0, 0.8 * min(durations)))
        outcome = _check_killed_then_repaired(world, status, old, new)
        if os.WIFSIGNALED(status):
            outcomes.append(outcome)
        if len(outcomes) == 30:
            break
    assert len(outcomes) == 30 and "old" in outcomes


class FailingEmbedder(HashingEmbedder):
    """An embedder whose server cannot be reached: the build fails at the spec stage, after the
    chunk stage has already rewritten ``_chunks/`` (of the staging folder)."""

    def embed(self, texts, *, progress=False):
        raise PipelineError("cannot connect to the embedding server at http://127.0.0.1:9")


def test_a_build_failing_at_a_stage_leaves_the_previous_site_whole(worlds):
    base, pristine, old, new = worlds
    world = _fresh_world(base, pristine)
    with pytest.raises(PipelineError, match="cannot connect"):
        _build(world, embedder=FailingEmbedder())
    assert _files(world / "site") == old
    assert_consistent(world / "site")
    assert not (world / ".site.pipeline-staging").exists()  # kept as the previous generation
    _build(world)
    assert _files(world / "site") == new


def test_sigkill_at_renames_across_a_first_build_leaves_no_site_or_a_whole_one(tmp_path):
    base = tmp_path
    pristine = base / "pristine"
    write_tree(pristine / "content", FILES)
    total = _renames_of_a_rebuild(base, pristine)  # here: a first build
    reference = _files(base / "world" / "site")
    for n in _kill_points(total):
        world = _fresh_world(base, pristine)
        status, _ = _forked(world, kill_at=n)
        assert os.WIFSIGNALED(status), (n, status)
        if (world / "site").exists():
            assert _files(world / "site") == reference
        _build(world)
        assert _files(world / "site") == reference
        assert_consistent(world / "site")


def test_the_kill_points_cover_both_ends_and_the_middle():
    assert _kill_points(12) == list(range(1, 13))
    points = _kill_points(3751)
    assert points[:12] == list(range(1, 13)) and points[-12:] == list(range(3740, 3752))
    assert len(points) < 60 and max(b - a for a, b in zip(points, points[1:])) <= 3751 // 24
