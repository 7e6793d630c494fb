"""The on-disk embedding cache, laid out as seed 001 §3 specifies::

    {root}/{strategy-key}/{model}/{sha256(source)[:16]}/metadata.json
                                                     /chunk-{i}.bin   (little-endian float32)
    {root}/{strategy-key}/{model}/index.json          source path -> current file hash

An entry is used whole only if its model, strategy and chunk count (and chunk content hashes)
match; otherwise it is a miss. Beyond the seed, vectors are reused per chunk by content hash
(xxh64) from any entry of the same model and strategy, so editing one section of a document
re-embeds one chunk.

Entries are never removed because a build did not use them (another site, an earlier version
of a document may need them again). Each (strategy, model) folder records the UTC day each
entry was last used in ``used.json``; ``save`` rewrites it only when a day changed, so a no-op
rebuild on the same day writes nothing. Removal is ``pipeline/embedding/cache_admin.py``'s job
(``pipeline cache prune``, or a build's size/age budget).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
import warnings
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import xxhash

from pipeline.fsutil import write_bytes_atomic


def content_hash(text: str) -> str:
    """The per-chunk cache key: xxh64 of the exact text that is embedded."""
    return xxhash.xxh64_hexdigest(text.encode("utf-8"))


def vectors_digest(vectors: list[np.ndarray]) -> str:
    """xxh64 of ``vectors`` as the cache stores them (little-endian float32, in order)."""
    h = xxhash.xxh64()
    for vector in vectors:
        h.update(np.asarray(vector, dtype="<f4").tobytes())
    return h.hexdigest()


def safe_component(name: str) -> str:
    """A model or strategy name usable as one path component."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "_"


USED_FILE = "used.json"  # entry folder name -> UTC day ("YYYY-MM-DD") it was last used
NOT_A_FOLDER = object()  # what ``_read_json`` returns for a path below a file


def today() -> str:
    """The current UTC day, the unit of last-use bookkeeping."""
    return time.strftime("%Y-%m-%d", time.gmtime())


@dataclass
class CacheStats:
    hits: int = 0  # chunks served from the cache
    misses: int = 0  # chunks that needed the model


class EmbeddingCache:
    """Embeddings of one (strategy, model) pair."""

    def __init__(self, root: Path, strategy_key: str, model: str):
        self.strategy_key = strategy_key
        self.model = model
        self.dir = Path(root) / safe_component(strategy_key) / safe_component(model)
        self.index_path = self.dir / "index.json"
        self.index: dict[str, str] = self._read_index()
        self._by_hash: dict[str, tuple[str, int]] | None = None  # content hash -> (entry, chunk index)
        self._entries: dict[str, tuple[list[str], list[np.ndarray]] | None] = {}  # read once per instance
        self._metas: dict[str, dict | None] = {}  # metadata.json of an entry, read once per instance
        self.stats = CacheStats()
        self.used: set[str] = set()  # entries this instance read or wrote (recorded by ``save``)
        self._legacy_seen = False  # warned about an entry without a vector digest

    # -- lookups -------------------------------------------------------------------------
    def lookup(self, source: str, file_hash: str, hashes: list[str]) -> list[np.ndarray | None]:
        """Vectors for the chunks with ``hashes`` of ``source`` at ``file_hash``; None where missing."""
        entry = self._load_entry(file_hash)
        if entry is not None and entry[0] == hashes:
            self.stats.hits += len(hashes)
            self.used.add(file_hash)
            return list(entry[1])
        found: list[np.ndarray | None] = []
        pool = self._reuse_pool()
        for h in hashes:
            found.append(self._pooled(h, pool.get(h)))
        hits = sum(v is not None for v in found)
        self.stats.hits += hits
        self.stats.misses += len(hashes) - hits
        return found

    def entry_digest(self, source: str, file_hash: str, hashes: list[str]) -> str | None:
        """``vectors_digest`` of the entry at ``file_hash`` when it holds a vector for each of
        ``hashes`` (a whole hit, counted as hits), told by its metadata and the chunk files'
        sizes without reading a vector; None otherwise (then ``lookup``). ``entry_vectors``
        reads the vectors when they are needed."""
        meta = self._meta(file_hash)
        digest = meta.get("vectors_xxh64") if meta else None
        if not isinstance(digest, str) or meta.get("chunk_hashes") != hashes:
            return None
        folder = os.path.join(self.dir, file_hash)  # strings, not Paths: once per chunk of a no-op rebuild
        size = 4 * meta["dimension"]
        try:
            if any(os.stat(f"{folder}/chunk-{i}.bin").st_size != size for i in range(len(hashes))):
                return None
        except OSError:
            return None
        self.stats.hits += len(hashes)
        self.used.add(file_hash)
        return digest

    def confirm(self, file_hash: str, count: int) -> None:
        """Count a whole hit of ``count`` chunks at the entry ``file_hash`` that the caller
        confirmed without ``entry_digest`` (the build state's stamps of it, topicspec/topicgather.py)."""
        self.stats.hits += count
        self.used.add(file_hash)

    def entry_vectors(self, file_hash: str) -> list[np.ndarray | None]:
        """The vectors of the entry at ``file_hash`` that ``entry_digest`` confirmed (not counted
        again); None for each chunk when the entry vanished since."""
        entry = self._load_entry(file_hash)
        meta = self._meta(file_hash) or {}
        return list(entry[1]) if entry is not None else [None] * len(meta.get("chunk_hashes", []))

    def _meta(self, file_hash: str) -> dict | None:
        """The entry's metadata.json when it is one of this model and strategy, with a count
        that matches its chunk hashes and the digest of its vectors. An entry without that digest
        (written by an older version) is not trusted: nothing could tell its vectors from damaged
        ones, so it is a miss, recomputed and written again whole (``store``)."""
        if file_hash not in self._metas:
            meta = self._read_json(self.dir / file_hash / "metadata.json")
            valid = (
                isinstance(meta, dict)
                and meta.get("model") == self.model
                and meta.get("strategy") == self.strategy_key
                and isinstance(meta.get("chunk_hashes"), list)
                and all(isinstance(h, str) for h in meta["chunk_hashes"])
                and meta.get("chunk_count") == len(meta["chunk_hashes"])
                and type(meta.get("dimension")) is int
                and meta["dimension"] >= 0
                and isinstance(meta.get("vectors_xxh64", ""), str)
            )
            if valid and "vectors_xxh64" not in meta:
                self._legacy(file_hash)
                valid = False
            elif meta is NOT_A_FOLDER:
                self._corrupt(file_hash, "it is a file, not a folder")
            elif meta is not None and not valid:
                self._corrupt(file_hash, "its metadata.json is not what this code writes")
            self._metas[file_hash] = meta if valid else None
        return self._metas[file_hash]

    def _legacy(self, file_hash: str) -> None:
        """Say once per cache that entries without a vector digest are recomputed."""
        if not self._legacy_seen:
            self._legacy_seen = True
            warnings.warn(
                f"embedding cache entry {self.dir / file_hash} has no digest of its vectors (written by an older "
                "version), so it cannot be checked; recomputing it and any other such entry of this cache",
                UserWarning, stacklevel=4,
            )

    def _load_entry(self, file_hash: str) -> tuple[list[str], list[np.ndarray]] | None:
        """The entry at ``file_hash`` (read from disk once per instance; ``store`` and ``prune``
        forget what they change)."""
        if file_hash not in self._entries:
            self._entries[file_hash] = self._read_entry(file_hash)
        return self._entries[file_hash]

    def _read_entry(self, file_hash: str) -> tuple[list[str], list[np.ndarray]] | None:
        folder = self.dir / file_hash
        meta = self._meta(file_hash)
        if meta is None:
            return None
        hashes = meta["chunk_hashes"]
        vectors = []
        for i in range(len(hashes)):
            try:
                data = (folder / f"chunk-{i}.bin").read_bytes()
            except FileNotFoundError:
                return None
            except (IsADirectoryError, NotADirectoryError):
                self._corrupt(file_hash, f"chunk-{i}.bin is not a file")
                return None
            if len(data) != 4 * meta["dimension"]:
                self._corrupt(file_hash, f"chunk-{i}.bin has {len(data)} bytes, not {4 * meta['dimension']}")
                return None
            vectors.append(np.frombuffer(data, dtype="<f4").astype(np.float32))
        # The digest is checked whenever vectors are read: a flipped bit keeps every size.
        if vectors_digest(vectors) != meta["vectors_xxh64"]:
            self._corrupt(file_hash, "its vectors do not match the digest in metadata.json")
            return None
        if not all(np.isfinite(v).all() for v in vectors):
            self._corrupt(file_hash, "it holds a vector that is not finite (NaN or infinity)")
            return None
        return hashes, vectors

    def _corrupt(self, file_hash: str, why: str) -> None:
        """Report a damaged entry; it is then a miss, so its vectors are computed and stored again."""
        warnings.warn(f"embedding cache entry {self.dir / file_hash} is corrupt ({why}); recomputing it", UserWarning, stacklevel=3)

    def _reuse_pool(self) -> dict[str, tuple[str, int]]:
        """Content hash -> (entry, chunk index) over every entry of this strategy and model, from
        the entries' metadata alone (read once, lazily): a vector is read only when a chunk needs
        it (``_pooled``), so one edit in a large site neither reads nor holds every vector."""
        if self._by_hash is None:
            self._by_hash = {}
            if self.dir.is_dir():
                for folder in sorted(p for p in self.dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
                    meta = self._meta(folder.name)
                    if meta:
                        self._by_hash.update((h, (folder.name, i)) for i, h in enumerate(meta["chunk_hashes"]))
        return self._by_hash

    def _pooled(self, content: str, where: tuple[str, int] | None) -> np.ndarray | None:
        """The vector of the chunk with hash ``content`` at ``where`` in the pool; None when there
        is none or its entry fails its checks when read (the chunk is then embedded again)."""
        if where is None:
            return None
        entry = self._load_entry(where[0])
        if entry is None or where[1] >= len(entry[0]) or entry[0][where[1]] != content:
            return None
        return entry[1][where[1]]

    # -- writes --------------------------------------------------------------------------
    def store(self, source: str, file_hash: str, hashes: list[str], vectors: list[np.ndarray]) -> None:
        """Write the entry for ``source`` at ``file_hash`` whole (temp folder, then rename).
        Raises PipelineError, storing nothing, when a vector is not finite: a backend's NaN must
        stop the build, not be published and cached."""
        assert len(hashes) == len(vectors)
        if not all(np.isfinite(v).all() for v in vectors):
            from pipeline.errors import PipelineError

            raise PipelineError(f"the embedding model ({self.model}) gave a vector that is not finite (NaN or infinity) "
                                "for a chunk of this document; nothing was stored", path=source)
        existing = self._load_entry(file_hash)  # None for an entry without a digest: written again
        if not (existing and existing[0] == hashes):
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".entry-", dir=self.dir))
            dimension = int(vectors[0].shape[0]) if vectors else 0
            for i, vector in enumerate(vectors):
                (tmp / f"chunk-{i}.bin").write_bytes(np.asarray(vector, dtype="<f4").tobytes())
            meta = {
                "source": source,
                "file_hash": file_hash,
                "model": self.model,
                "strategy": self.strategy_key,
                "chunk_count": len(hashes),
                "dimension": dimension,
                "dtype": "float32-le",
                "chunk_hashes": hashes,
                "vectors_xxh64": vectors_digest(vectors),
            }
            (tmp / "metadata.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
            final = self.dir / file_hash
            if final.is_dir() and not final.is_symlink():
                shutil.rmtree(final)
            elif os.path.lexists(final):  # a file (or link) where the entry's folder belongs
                final.unlink()
            os.replace(tmp, final)
            self._entries.pop(file_hash, None)
            self._metas.pop(file_hash, None)
        if self._by_hash is not None:
            self._by_hash.update((h, (file_hash, i)) for i, h in enumerate(hashes))
        self.index[source] = file_hash
        self.used.add(file_hash)

    def keep(self, source: str, file_hash: str) -> None:
        """Point ``source`` at the entry ``file_hash``, which already holds its vectors."""
        self.index[source] = file_hash
        self.used.add(file_hash)

    def save(self) -> None:
        """Write ``index.json`` and the last-use days of the entries used, each only if it changed."""
        if self.index or self.index_path.exists():
            write_bytes_atomic(self.index_path, orjson.dumps(self.index, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
        if self.used:
            record_use(self.dir, self.used)

    def _read_index(self) -> dict[str, str]:
        """``index.json`` when it maps source paths to entry names; else empty, with a warning."""
        index = self._read_json(self.index_path)
        if index is None:
            return {}
        if index == "corrupt" and self.index_path.is_dir():  # it could not be rebuilt there: say so now
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.index_path))
        if not (isinstance(index, dict) and all(isinstance(v, str) for v in index.values())):
            warnings.warn(f"embedding cache index {self.index_path} is corrupt; rebuilding it", UserWarning, stacklevel=3)
            return {}
        return index

    @staticmethod
    def _read_json(path: Path):
        """The file's JSON; None when missing, NOT_A_FOLDER when its folder is a file, "corrupt"
        when it does not parse or is not a file (a miss). A file the cache may not read is an
        error (PermissionError), not a miss: it could not be replaced either."""
        try:
            return orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except NotADirectoryError:
            if path.parent.is_file():  # the entry's folder is a file; a file above it is the user's
                return NOT_A_FOLDER
            raise
        except (IsADirectoryError, orjson.JSONDecodeError):
            return "corrupt"


def read_used(folder: Path) -> dict[str, str]:
    """``used.json`` of a (strategy, model) folder; {} when missing or unreadable."""
    try:
        data = orjson.loads((folder / USED_FILE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def record_use(folder: Path, entries: set[str], day: str | None = None) -> bool:
    """Mark ``entries`` of ``folder`` as used on ``day`` (default today). Writes ``used.json``
    only when some entry's day changes; returns whether it wrote."""
    day = day or today()
    used = read_used(folder)
    if all(used.get(name) == day for name in entries):
        return False
    used.update(dict.fromkeys(entries, day))
    write_bytes_atomic(folder / USED_FILE, orjson.dumps(used, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return True


def holds_vectors_of(root: Path, model: str) -> bool:
    """Whether the cache under ``root`` may serve some vector of ``model``: False only when no
    (strategy, ``model``) folder holds an entry (each entry is a folder; any folder there counts,
    a half-written one too), so that every text a build embeds with this cache misses it. Stops
    at the first folder found: a full cache costs a few directory reads, not a walk."""
    try:
        strategies = os.scandir(root)
    except (FileNotFoundError, NotADirectoryError):
        return False
    with strategies:
        for strategy in strategies:
            try:
                with os.scandir(os.path.join(strategy.path, safe_component(model))) as entries:
                    if any(entry.is_dir() for entry in entries):
                        return True
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:  # unreadable: it may hold vectors
                return True
    return False
