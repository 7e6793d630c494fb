"""Build state: what a rebuild may reuse instead of recomputing (``SITE/.pipeline-state.json``).

Every entry is a fact "inputs with digest D gave an output with hash H", recorded by the stage
that computed it. A stage reuses its earlier result only when the digest of its current inputs
equals D *and* the output on disk still hashes to H, so a stale, partial or hand-edited state, a
deleted or corrupted site file, or a change of any input only ever costs a recomputation. The
whole state is dropped when the pipeline's code changed (``code_digest``: every file of the
package), and when the file is missing or unreadable. Schema (docs/ARCHITECTURE.md)::

    {"state_version": 1, "code": "<xxh64>", "sections": {"<section>": {"<key>": {"digest": "<xxh64>", ...}}}}

The one interface every stage uses: ``reuse`` (the previous entry for the same inputs when the
stage's ``intact`` check confirms its files, carried into this build with their fresh stamps),
else ``put`` (record a result, ``data=`` the bytes written); ``get`` and ``keep`` are its two
halves, for a stage that reuses several entries as one; ``previous`` is an entry trusted by its
file stamps alone, whatever its inputs' digest. Files are verified by ``reuse/stamps.verify_all``.

Sections: ``documents`` (plan: per source, ``manifest`` = xxh64 of the manifest bytes),
``llms`` (per file of ``site/llms.py``, ``output``: keyed on the ``index`` and ``documents`` digests),
``search`` (``meta.json`` of ``_search/``, ``output``: keyed on the ``documents``, ``index`` and
``embeddings`` digests),
``keywords`` (generated tables: ``stats`` per topic), ``topics`` (``output`` = xxh64 of
``topic-spec.md``), ``index`` (``output`` = xxh64 of ``index.json``), ``embeddings`` (per topic:
its vector pages' ``names`` and ``hashes``, keyed on the same build's ``topics`` digest, which
covers the exact vectors; per page, keyed by its site path: ``output``, keyed on its documents
and their exact rows: ``site/vectorpages.py``).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import orjson
import xxhash

from pipeline import __version__
from pipeline.fsutil import write_bytes_atomic

if TYPE_CHECKING:
    from pipeline.reuse.memo import Memo

STATE_FILE = ".pipeline-state.json"
STATE_VERSION = 1
_PACKAGE = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=1)
def code_digest() -> str:
    """xxh64 of the pipeline's version and every file of the package (sources, templates, assets,
    schemas): any change of code invalidates every recorded result."""
    h = xxhash.xxh64(__version__.encode())
    for path in sorted(_PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            rel = path.relative_to(_PACKAGE).as_posix().encode()
            data = path.read_bytes()
            h.update(len(rel).to_bytes(8, "little") + rel + len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


class Digest:
    """An unambiguous xxh64 over a sequence of parts (each length-prefixed)."""

    def __init__(self, *parts: object):
        self._h = xxhash.xxh64()
        self.add(*parts)

    def add(self, *parts: object) -> "Digest":
        for part in parts:
            data = part if isinstance(part, (bytes, bytearray, memoryview)) else _encode(part)
            self._h.update(len(data).to_bytes(8, "little"))
            self._h.update(data)
        return self

    def hex(self) -> str:
        return self._h.hexdigest()


def _encode(value: object) -> bytes:
    if isinstance(value, str):
        return b"s" + value.encode("utf-8")
    return b"j" + orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY)


def output_hash(data: bytes) -> str:
    return xxhash.xxh64_hexdigest(data)


def file_hash(path: Path) -> str | None:
    """xxh64 of a file's bytes, None when it cannot be read."""
    try:
        return xxhash.xxh64_hexdigest(Path(path).read_bytes())
    except OSError:
        return None


@dataclass
class BuildState:
    """The previous build's entries (``old``) and this build's (``new``; what ``save`` writes).
    A section's entries not recorded again by this build are forgotten. ``memo``: the build's
    store of larger per-topic results (``reuse/memo.py``), read only by stages that recompute."""

    old: dict[str, dict[str, dict]] = field(default_factory=dict)
    new: dict[str, dict[str, dict]] = field(default_factory=dict)
    memo: Memo | None = None
    # (section, key) of the previous entries found well-formed: several stages ask for the same
    # entry (a rebuild of 10,000 documents, ~40,000 times), each is checked once
    _valid: set[tuple[str, str]] = field(default_factory=set, repr=False, compare=False)

    def get(self, section: str, key: str, digest: str, *, output: str | os.PathLike | None = None) -> dict | None:
        """The previous entry of ``key`` when it was recorded for inputs with ``digest`` and every
        field has the type this code writes (``entry_is_valid``), and, given ``output``, that
        file still hashes to the entry's ``output``; else None (the stage recomputes). A corrupt
        entry is reported with a warning and ignored."""
        entry = self.previous(section, key)
        if entry is None or entry.get("digest") != digest:
            return None
        if output is not None and file_hash(Path(output)) != entry.get("output"):
            return None
        return entry

    def reuse(self, section: str, key: str, digest: str, intact: Callable[[dict], dict | None], *,
              output: str | os.PathLike | None = None) -> dict | None:
        """The previous entry of ``key`` for inputs with ``digest`` (``get``) when ``intact(entry)``
        confirms that what it stands for is still there, kept into this build (``keep``) with the
        fresh values ``intact`` returns (its files' stamps; ``{}`` for none); else None: the stage
        recomputes and ``put``s. A reused entry is always carried into the next build's state."""
        entry = self.get(section, key, digest, output=output)
        fresh = intact(entry) if entry is not None else None
        if fresh is None:
            return None
        self.keep(section, key, entry, **fresh)
        return self.new[section][key]

    def previous(self, section: str, key: str) -> dict | None:
        """The previous entry of ``key`` whatever the digest it was recorded for (a stage that
        trusts it by file stamps), when well-formed; a corrupt one is warned about once."""
        entries = self.old.get(section, {})
        if key not in entries:
            return None
        entry = entries[key]
        if (section, key) in self._valid:
            return entry
        if not entry_is_valid(entry):
            warnings.warn(f"build state entry {section}/{key} is corrupt; recomputing it", UserWarning, stacklevel=3)
            self.old[section].pop(key, None)  # warn once
            return None
        self._valid.add((section, key))
        return entry

    def previous_keys(self, section: str) -> list[str]:
        """The keys the previous build recorded in ``section`` (a stage whose files are named by them)."""
        return list(self.old.get(section, {}))

    def keep(self, section: str, key: str, entry: dict, **fresh: object) -> None:
        """Record a reused previous ``entry`` (``get``, ``previous``) for this build as it was,
        but for the ``fresh`` values (the stamps just taken of its files)."""
        self.new.setdefault(section, {})[key] = {**entry, **fresh}

    def recorded(self, section: str, key: str, field: str = "digest") -> str | None:
        """The digest (or another ``field``) this build recorded for ``key`` (an earlier stage's
        inputs or output, for a later stage that depends on exactly those), or None."""
        entry = self.new.get(section, {}).get(key)
        return entry.get(field) if entry else None

    def recorded_all(self, section: str) -> list[list[str]]:
        """``[[key, digest], ...]`` of every entry this build recorded in ``section``, by key:
        a later stage whose output is a function of all of them digests this list."""
        return [[key, entry["digest"]] for key, entry in sorted(self.new.get(section, {}).items())]

    def put(self, section: str, key: str, digest: str, *, data: bytes | None = None, **values: object) -> None:
        """Record that inputs with ``digest`` gave this result: ``data``, the bytes the stage
        wrote (recorded as their hash, ``output``, which ``get(..., output=path)`` checks), and
        ``values``."""
        if data is not None:
            values["output"] = output_hash(data)
        self.new.setdefault(section, {})[key] = {"digest": digest, **values}

    def to_bytes(self) -> bytes:
        """The state file: every entry without its file stamps (the same bytes for the same
        inputs, as every file of the site)."""
        sections = {
            section: {key: {k: v for k, v in entry.items() if k not in STAMP_FIELDS} for key, entry in entries.items()}
            for section, entries in self.new.items()
        }
        data = {"state_version": STATE_VERSION, "code": code_digest(), "sections": sections}
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"

    def stamps_bytes(self) -> bytes:
        """The stamps file: each entry's file stamps with its ``digest`` (``merge_stamps``)."""
        sections = {}
        for section, entries in self.new.items():
            kept = {}
            for key, entry in entries.items():
                found = entry.keys() & STAMP_FIELDS  # a set operation, not a test per field: ~30,000 entries
                if found:
                    stamps = {k: entry[k] for k in found}
                    stamps["digest"] = entry["digest"]
                    kept[key] = stamps
            if kept:
                sections[section] = kept
        data = {"state_version": STATE_VERSION, "code": code_digest(), "sections": sections}
        return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"

    def merge_stamps(self, data: bytes) -> None:
        """Add the stamps in ``data`` (``stamps_bytes``) to the previous entries recorded with
        the same ``digest``; a stamp names a file's state when it was checked against exactly
        that entry, so one from another generation or a stale file attaches to nothing wrong.
        Unreadable or foreign data adds nothing."""
        other = parse_state(data).old
        for section, entries in other.items():
            mine = self.old.get(section)
            if not isinstance(mine, dict):
                continue
            for key, stamped in entries.items():
                entry = mine.get(key)
                if isinstance(entry, dict) and isinstance(stamped, dict) and stamped.get("digest") == entry.get("digest"):
                    if stamped.keys() <= _STAMP_FILE_FIELDS:  # as stamps_bytes wrote it: the digest and stamps
                        entry.update(stamped)
                    else:
                        entry.update((k, v) for k, v in stamped.items() if k in STAMP_FIELDS)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _stats_row(row: object) -> bool:
    """A ``keywords`` stats row: ``[name, occurrences, chunks, specificity, spread, cvalue, score]``."""
    return (
        isinstance(row, list) and len(row) == 7 and isinstance(row[0], str)
        and _is_int(row[1]) and _is_int(row[2]) and all(_is_number(v) for v in row[3:6]) and _is_int(row[6])
    )


# Every field any stage records, with the check its value must pass to be trusted.
# Fields holding file stamps (reuse/stamps.py): inodes and times of this machine's files, so they
# are kept out of the site (whose every file is the same for the same inputs) in a file beside it.
STAMP_FIELDS = frozenset({"source", "files", "copy", "folder", "meta", "manifest_stamp", "pages"})

_TYPED_FIELDS = {
    "digest": str,
    "manifest": str,
    "output": str,
    # File stamps (reuse/stamps.py): only ever compared for equality with a fresh stat, so a wrong
    # value is a mismatch (the file is verified by content), never trusted.
    "source": list,
    "source_xxh64": str,
    "files": list,
    "copy": list,
    "folder": list,
    "manifest_stamp": list,
    "pages": list,  # a topic's document pages (topicspec/specfile.py pages_intact)
    "summary": list,  # checked where used (chunking/reuse.py, _reuse_unread)
    "hashes": list,
    "names": list,
    "meta": list,
    "vectors_xxh64": str,
    "encoder": dict,  # a manifest's encoder entry, its files checked where used (site/static_encoder.py)
}
"""Fields whose check is their type alone: an ``isinstance`` without a call around it (a rebuild
of 10,000 documents checks ~30,000 entries)."""
_CHECKED_FIELDS = {
    "size": lambda v: _is_int(v) and v >= 0,
    "warnings": lambda v: isinstance(v, list) and all(isinstance(w, str) for w in v),
    "stats": lambda v: isinstance(v, dict) and all(isinstance(rows, list) and all(map(_stats_row, rows)) for rows in v.values()),
    "documents": lambda v: _is_int(v) and v >= 0,
}
_STAMP_FILE_FIELDS = STAMP_FIELDS | {"digest"}


def entry_is_valid(entry: object) -> bool:
    """True when ``entry`` is a mapping with a string ``digest`` and only known, well-typed fields."""
    if not isinstance(entry, dict) or "digest" not in entry:
        return False
    for name, value in entry.items():  # a loop, not all(<generator>): asked for every entry of a rebuild
        kind = _TYPED_FIELDS.get(name)
        if kind is not None:
            if not isinstance(value, kind):
                return False
        else:
            check = _CHECKED_FIELDS.get(name)
            if check is None or not check(value):
                return False
    return True


def parse_state(data: bytes) -> BuildState:
    """The state in ``data``; an empty one when it is unreadable or from other code."""
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        return BuildState()
    if not isinstance(raw, dict) or raw.get("state_version") != STATE_VERSION or raw.get("code") != code_digest():
        return BuildState()
    sections = raw.get("sections")
    if not isinstance(sections, dict):
        return BuildState()
    return BuildState(old={k: v for k, v in sections.items() if isinstance(v, dict)})


def load_state(site: Path, stamps: Path | None = None) -> BuildState:
    """The state of the build that wrote ``site``, with the file stamps in ``stamps`` (when given
    and readable) added to its entries."""
    try:
        state = parse_state((Path(site) / STATE_FILE).read_bytes())
    except OSError:
        return BuildState()
    if stamps is not None and state.old:
        try:
            state.merge_stamps(Path(stamps).read_bytes())
        except OSError:
            pass
    return state


def save_state(site: Path, state: BuildState, stamps: Path | None = None) -> bool:
    """Write the state into ``site`` and, when given, its file stamps to ``stamps`` (outside the
    site). Returns whether the state file changed."""
    if stamps is not None:
        write_bytes_atomic(Path(stamps), state.stamps_bytes())
    return write_bytes_atomic(Path(site) / STATE_FILE, state.to_bytes())
