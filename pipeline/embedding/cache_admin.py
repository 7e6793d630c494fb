"""Looking after an embedding cache as a whole: ``pipeline cache stats`` and ``pipeline cache prune``.

A build never removes entries (``cache.py``): a cache folder is shared by every site built from
it, and what one build does not use another needs. Entries go only here, by a budget:

- age: an entry not used for more than ``max_age_days`` days (its day in ``used.json``; an entry
  that predates that file counts from its ``metadata.json``'s modification day);
- size: while the cache is larger than ``max_bytes``, the least recently used entry goes
  (oldest day first, then by name, so the choice is deterministic) — never one used today, so a
  budget smaller than one build's working set cannot make the next build re-embed.

Removing an entry also drops it from the folder's ``index.json`` and ``used.json``.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from pipeline.config import parse_size
from pipeline.embedding.cache import USED_FILE, read_used, today
from pipeline.errors import PipelineError
from pipeline.fsutil import write_bytes_atomic

TEMP_PREFIX = ".entry-"  # ``EmbeddingCache.store`` writes an entry here, then renames it
STALE_TEMP_SECONDS = 24 * 3600  # a temp folder this old belongs to no running build


@dataclass(frozen=True)
class Entry:
    """One cached document version: ``group`` is its ``{strategy}/{model}`` folder."""

    group: Path
    name: str
    last_used: str  # UTC day, YYYY-MM-DD
    size: int  # bytes of its files
    chunks: int


@dataclass
class GroupStats:
    """Totals of one ``{strategy}/{model}`` folder."""

    strategy: str
    model: str
    entries: int = 0
    chunks: int = 0
    size: int = 0
    oldest: str | None = None  # least recent last-use day
    newest: str | None = None


@dataclass
class PruneReport:
    removed: list[Entry] = field(default_factory=list)
    kept: int = 0
    kept_size: int = 0

    @property
    def freed(self) -> int:
        return sum(e.size for e in self.removed)


def _groups(root: Path) -> list[Path]:
    """Every ``{strategy}/{model}`` folder under ``root``, sorted."""
    if not root.is_dir():
        return []
    return sorted(m for s in root.iterdir() if s.is_dir() for m in s.iterdir() if m.is_dir())


def _day_of(path: Path) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(path.stat().st_mtime))


def scan(root: Path) -> list[Entry]:
    """Every entry of the cache at ``root`` with its last-use day and size, sorted by folder."""
    entries = []
    for group in _groups(Path(root)):
        used = read_used(group)
        for folder in sorted(p for p in group.iterdir() if p.is_dir() and not p.name.startswith(".")):
            meta_path = folder / "metadata.json"
            try:
                meta = orjson.loads(meta_path.read_bytes())
                day = used.get(folder.name) or _day_of(meta_path)
            except (OSError, orjson.JSONDecodeError):
                meta, day = {}, _day_of(folder)
            size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
            chunks = meta.get("chunk_count", 0) if isinstance(meta, dict) else 0
            entries.append(Entry(group, folder.name, day, size, chunks if isinstance(chunks, int) else 0))
    return entries


def cache_stats(root: Path) -> list[GroupStats]:
    """Entries, chunks, bytes and last-use range per ``{strategy}/{model}`` folder."""
    out: dict[Path, GroupStats] = {}
    for e in scan(root):
        g = out.setdefault(e.group, GroupStats(e.group.parent.name, e.group.name))
        g.entries += 1
        g.chunks += e.chunks
        g.size += e.size
        g.oldest = min(g.oldest or e.last_used, e.last_used)
        g.newest = max(g.newest or e.last_used, e.last_used)
    return list(out.values())


def prune_cache(
    root: Path,
    *,
    max_age_days: int | None = None,
    max_bytes: int | None = None,
    now: str | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Remove entries over the age and size budgets (module docstring); None means no budget.
    ``now`` is the current UTC day (default today). With ``dry_run`` nothing is removed."""
    if max_age_days is not None and max_age_days < 0:
        raise PipelineError("the age budget must be 0 or more days")
    if max_bytes is not None and max_bytes < 0:
        raise PipelineError("the size budget must be 0 or more bytes")
    now = now or today()
    entries = scan(root)
    doomed: list[Entry] = []
    if max_age_days is not None:
        cutoff = (dt.date.fromisoformat(now) - dt.timedelta(days=max_age_days)).isoformat()
        doomed = [e for e in entries if e.last_used < cutoff]
    if max_bytes is not None:
        total = sum(e.size for e in entries) - sum(e.size for e in doomed)
        gone = {(e.group, e.name) for e in doomed}
        for e in sorted(entries, key=lambda e: (e.last_used, str(e.group), e.name)):
            if total <= max_bytes or e.last_used >= now:
                break
            if (e.group, e.name) not in gone:
                doomed.append(e)
                total -= e.size
    report = PruneReport(removed=sorted(doomed, key=lambda e: (str(e.group), e.name)))
    report.kept = len(entries) - len(doomed)
    report.kept_size = sum(e.size for e in entries) - report.freed
    if not dry_run:
        _remove(Path(root), doomed)
    return report


def _remove(root: Path, doomed: list[Entry]) -> None:
    by_group: dict[Path, set[str]] = {}
    for e in doomed:
        by_group.setdefault(e.group, set()).add(e.name)
    for group, names in by_group.items():
        # The bookkeeping first: a crash between the two leaves folders nobody points to, which
        # the next prune removes, never an index entry naming a missing folder.
        index_path = group / "index.json"
        try:
            index = orjson.loads(index_path.read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            index = None
        if isinstance(index, dict):
            kept = {s: h for s, h in index.items() if h not in names}
            write_bytes_atomic(index_path, orjson.dumps(kept, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        used = read_used(group)
        if used:
            kept_used = {k: v for k, v in used.items() if k not in names}
            write_bytes_atomic(group / USED_FILE, orjson.dumps(kept_used, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        for name in sorted(names):
            shutil.rmtree(group / name, ignore_errors=True)
    for group in _groups(root):  # temp folders of builds killed mid-write
        for tmp in group.glob(f"{TEMP_PREFIX}*"):
            if tmp.is_dir() and time.time() - tmp.stat().st_mtime > STALE_TEMP_SECONDS:
                shutil.rmtree(tmp, ignore_errors=True)


def human(size: int) -> str:
    """Bytes for people: ``1.5 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"  # pragma: no cover


BUDGET_STAMP = ".budget-pruned"  # UTC day a build last applied the config's budget


def prune_by_budget(config, *, now: str | None = None) -> PruneReport | None:
    """Apply the site config's ``cache_max_age_days`` / ``cache_max_size`` to its cache (after
    the build's stages, so this build's entries are dated today and kept). At most once per UTC
    day per cache: the scan stats every entry, which a no-op rebuild should not pay each time.
    None when no budget is set or it already ran today."""
    if config.cache_max_age_days is None and config.cache_max_size is None:
        return None
    root = Path(config.cache_dir)
    now = now or today()
    stamp = root / BUDGET_STAMP
    try:
        if stamp.read_text(encoding="utf-8") == now:
            return None
    except OSError:
        pass
    max_bytes = parse_size(config.cache_max_size) if config.cache_max_size is not None else None
    report = prune_cache(root, max_age_days=config.cache_max_age_days, max_bytes=max_bytes, now=now)
    if root.is_dir():
        write_bytes_atomic(stamp, now.encode("utf-8"))
    return report
