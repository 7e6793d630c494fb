"""The cache outlives builds: builds never prune it; `pipeline cache prune|stats` and a config
budget do, by last use and size."""

import subprocess
import sys

import numpy as np
import orjson
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ROOT, write_tree
from pipeline.config import SiteConfig, load_config
from pipeline.embedding.cache import EmbeddingCache, content_hash, read_used, record_use, today
from pipeline.config import parse_size
from pipeline.embedding.cache_admin import cache_stats, prune_by_budget, prune_cache, scan
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build

DOCS_A = {
    "index.md": "# Alpha\n\nAlpha home page about stripes.\n\n## Setup\n\nInstall alpha.\n",
    "guide/usage.md": "# Usage\n\nUse alpha daily.\n\n## Flags\n\nThe alpha flags.\n",
    "guide/qa-pairs.md": "# Questions\n\n## Q: How do I use alpha?\n\nUse it daily.\n",
}
DOCS_B = {  # the same relative paths as A, other texts: the cache must keep both versions
    "index.md": "# Beta\n\nBeta home page about queues.\n",
    "guide/usage.md": "# Usage\n\nUse beta weekly.\n",
}


def vec(*values):
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_building_a_then_b_then_a_reembeds_nothing(tmp_path):
    a = write_tree(tmp_path / "a", DOCS_A)
    b = write_tree(tmp_path / "b", DOCS_B)
    cfg = SiteConfig(cache_dir=tmp_path / "cache")
    embedder = HashingEmbedder()
    first = build(a, tmp_path / "site", cfg, embedder=embedder, progress=False)
    assert first.spec.embedded > 0 and first.spec.questions_embedded == 1
    build(b, tmp_path / "site", cfg, embedder=embedder, progress=False)  # same output folder
    calls = embedder.calls
    again = build(a, tmp_path / "site", cfg, embedder=embedder, progress=False)
    assert again.spec.embedded == 0 and again.spec.questions_embedded == 0 and embedder.calls == calls
    fresh = build(a, tmp_path / "other-site", cfg, embedder=embedder, progress=False)  # another site, same cache
    assert fresh.spec.embedded == 0 and embedder.calls == calls


def _store(root, name, text, day):
    cache = EmbeddingCache(root, "s", "m")
    cache.store(f"{name}.md", name, [content_hash(text)], [vec(1, len(text))])
    cache.save()
    record_use(cache.dir, {name}, day=day)


def test_prune_by_age_removes_only_old_entries_and_their_bookkeeping(tmp_path):
    _store(tmp_path, "old", "o", "2026-01-01")
    _store(tmp_path, "new", "n", "2026-03-01")
    report = prune_cache(tmp_path, max_age_days=30, now="2026-03-10")
    assert [e.name for e in report.removed] == ["old"] and report.kept == 1
    group = tmp_path / "s" / "m"
    assert not (group / "old").exists() and (group / "new" / "metadata.json").is_file()
    assert orjson.loads((group / "index.json").read_bytes()) == {"new.md": "new"}
    assert read_used(group) == {"new": "2026-03-01"}


def test_prune_by_size_removes_least_recently_used_never_todays(tmp_path):
    for name, day in [("a", "2026-01-03"), ("b", "2026-01-01"), ("c", "2026-01-02"), ("d", "2026-01-05")]:
        _store(tmp_path, name, name, day)
    size = scan(tmp_path)[0].size
    report = prune_cache(tmp_path, max_bytes=2 * size, now="2026-01-05", dry_run=True)
    assert [e.name for e in report.removed] == ["b", "c"]  # the two least recently used
    assert (tmp_path / "s" / "m" / "b").is_dir()  # dry run
    report = prune_cache(tmp_path, max_bytes=0, now="2026-01-05")
    assert sorted(e.name for e in report.removed) == ["a", "b", "c"]  # d was used today
    assert [e.name for e in scan(tmp_path)] == ["d"]


@settings(max_examples=40, deadline=None)
@given(days=st.lists(st.integers(0, 60), min_size=1, max_size=6), budget=st.integers(0, 70))
def test_age_budget_keeps_exactly_the_recent_entries(tmp_path_factory, days, budget):
    root = tmp_path_factory.mktemp("cache")
    import datetime as dt

    now = dt.date(2026, 6, 1)
    for i, age in enumerate(days):
        _store(root, f"e{i}", f"t{i}", (now - dt.timedelta(days=age)).isoformat())
    prune_cache(root, max_age_days=budget, now=now.isoformat())
    assert sorted(e.name for e in scan(root)) == sorted(f"e{i}" for i, age in enumerate(days) if age <= budget)


def test_stats_count_entries_chunks_and_days(tmp_path):
    _store(tmp_path, "x", "x", "2026-02-01")
    _store(tmp_path, "y", "y", "2026-02-03")
    (group,) = cache_stats(tmp_path)
    assert (group.strategy, group.model, group.entries, group.chunks) == ("s", "m", 2, 2)
    assert (group.oldest, group.newest) == ("2026-02-01", "2026-02-03") and group.size > 0


def test_config_budget_prunes_old_entries_after_a_build_but_keeps_its_own(tmp_path):
    content = write_tree(tmp_path / "a", DOCS_A)
    _store(tmp_path / "cache", "stale", "stale text", "2020-01-01")
    cfg = SiteConfig(cache_dir=tmp_path / "cache", cache_max_age_days=30, cache_max_size="0")
    embedder = HashingEmbedder()
    build(content, tmp_path / "site", cfg, embedder=embedder, progress=False)
    names = {e.name for e in scan(tmp_path / "cache")}
    assert "stale" not in names and names  # this build's entries were used today: kept
    again = build(content, tmp_path / "site2", cfg, embedder=embedder, progress=False)
    assert again.spec.embedded == 0


def test_a_build_applies_the_budget_once_a_day(tmp_path):
    cfg = SiteConfig(cache_dir=tmp_path, cache_max_age_days=10)
    _store(tmp_path, "old", "o", "2026-01-01")
    assert [e.name for e in prune_by_budget(cfg, now="2026-03-01").removed] == ["old"]
    _store(tmp_path, "older", "p", "2025-01-01")
    assert prune_by_budget(cfg, now="2026-03-01") is None  # already done today
    assert [e.name for e in scan(tmp_path)] == ["older"]
    assert [e.name for e in prune_by_budget(cfg, now="2026-03-02").removed] == ["older"]
    assert prune_by_budget(SiteConfig(cache_dir=tmp_path)) is None  # no budget, nothing to do


def test_sizes_parse_and_bad_ones_are_errors(tmp_path):
    assert parse_size("500M") == 500 << 20 and parse_size("2g") == 2 << 30 and parse_size("1024") == 1024
    with pytest.raises(PipelineError, match="expected a number"):
        parse_size("lots")
    (tmp_path / "site.toml").write_text('cache_max_size = "big"\n')
    with pytest.raises(PipelineError, match="cache_max_size"):
        load_config(tmp_path / "site.toml")


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_cache_commands_default_to_the_build_cache_folder(tmp_path):
    _store(tmp_path / ".embedding-cache", "ancient", "a", "2000-01-01")
    _store(tmp_path / ".embedding-cache", "recent", "r", today())
    stats = run_cli("cache", "stats", cwd=tmp_path)
    assert stats.returncode == 0 and "s/m: 2 entries, 2 chunks" in stats.stdout
    pruned = run_cli("cache", "prune", cwd=tmp_path)  # default: older than 30 days
    assert pruned.returncode == 0 and "removed s/m/ancient" in pruned.stdout
    assert [e.name for e in scan(tmp_path / ".embedding-cache")] == ["recent"]
    bad = run_cli("cache", "prune", "--max-size", "huge", cwd=tmp_path)
    assert bad.returncode == 1 and "error:" in bad.stderr


def test_prune_removes_temp_folders_of_killed_builds_but_not_fresh_ones(tmp_path):
    import os

    _store(tmp_path, "keep", "k", today())
    old = tmp_path / "s" / "m" / ".entry-old"
    fresh = tmp_path / "s" / "m" / ".entry-fresh"
    old.mkdir()
    fresh.mkdir()
    os.utime(old, (0, 0))
    prune_cache(tmp_path, max_age_days=30)
    assert not old.exists() and fresh.is_dir() and [e.name for e in scan(tmp_path)] == ["keep"]
