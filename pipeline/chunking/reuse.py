"""Reusing a previous build's chunks: the fingerprint of everything a document's chunks depend
on, and the check that the files a build wrote for it are still what it wrote.

Guarantees: ``reuse_chunks`` returns a plan only when the build state records the same
fingerprint, the manifest's pages still hold the data it recorded, byte for byte as this build
writes them, and every chunk file still hashes as the state says (or, where the stamps are the
ones recorded, they all stat so); any doubt returns None and the document is chunked again.
Reads only; writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import orjson

from pipeline.chunking.base import Chunk
from pipeline.chunking.manifest import DocumentChunks, ManifestStub, manifest_digest, manifest_files, read_manifest
from pipeline.config import SiteConfig
from pipeline.errors import PipelineError
from pipeline.fsutil import decode_utf8
from pipeline.parsing.tokens import TokenCounter
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, Digest, file_hash
from pipeline.siteformat.tree import CHUNKS_DIR, SourceDoc, manifest_name


def document_fingerprint(doc: SourceDoc, source_xxh64: str, chunking_key: str) -> str:
    """Digest of everything a document's chunks depend on: its path and bytes (front matter
    included; by their xxh64, ``source_xxh64``), and (``chunking_key``, its directory's
    ``chunking_digest``) the directory's effective strategy and options, the site settings
    chunking reads (the base URL: the manifest's links) and the tokenizer. The code is covered by
    the build state's ``code_digest``."""
    return Digest(doc.rel, source_xxh64, chunking_key).hex()


def chunking_digest(chunking: tuple[str, dict], config: SiteConfig, tokenizer: str) -> str:
    """The part of ``document_fingerprint`` that a directory's documents share (computed once
    per directory by ``plan_chunks``): the strategy and options, the site settings chunking
    reads (the base URL: the manifest pages' links), and the tokenizer (``counter_identity``)."""
    name, options = chunking
    return Digest(
        name, orjson.dumps(options, option=orjson.OPT_SORT_KEYS, default=repr), config.embedder, config.allow_unclosed_fences, tokenizer,
        config.normalized_base_url,
    ).hex()


def counter_identity(counter: TokenCounter) -> str:
    """The tokenizer's name, token limit and, when the name is a file, a hash of that file."""
    name = getattr(counter, "name", type(counter).__name__)
    return f"{name}|{getattr(counter, 'model_max_tokens', None)}|{_tokenizer_file_hash(name)}"


def _tokenizer_file_hash(name: str) -> str | None:
    path = Path(name)
    return _file_hash_cached(str(path), path.stat().st_mtime_ns, path.stat().st_size) if path.is_file() else None


@lru_cache(maxsize=8)
def _file_hash_cached(path: str, mtime_ns: int, size: int) -> str | None:
    return file_hash(Path(path))


class StoredChunks(Sequence):
    """A reused plan's chunks: its manifest's records, each chunk's text read from its file only
    when a chunk is asked for (a build never asks: the files are in place and were checked)."""

    def __init__(self, folder: str, records: list[dict] | None = None, *, count: int = 0, load=None):
        self._folder = folder
        self._records = records
        self._count = len(records) if records is not None else count
        self._load = load  # returns the records when they were not given (a ManifestStub's)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._records is None:
            self._records = self._load()["chunks"]
        record = dict(self._records[index])
        href = record.pop("href")
        record.pop("content_xxh64")
        record.pop("promotion_level", None)
        path = os.path.join(self._folder, href)
        try:
            with open(path, "rb") as handle:
                content = decode_utf8(handle.read(), path)
        except OSError:
            raise PipelineError("chunk file missing; rebuild with `pipeline chunk-dir`", path=path) from None
        return Chunk.from_dict({**record, "content": content})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and list(self) == list(other)


def reuse_chunks(
    site: Path, doc: SourceDoc, fingerprint: str, state: BuildState, *, source_stamp: list | None = None, source_xxh64: str = "",
    base_url: str = "/",
) -> DocumentChunks | None:
    """The chunks a previous build wrote for ``doc`` under ``site``, when the state records them
    for the same ``fingerprint`` and the manifest and every chunk file are still what it wrote;
    else None (the document is chunked again). The manifest's pages are read, their data checked
    against the state's digest and their bytes against what this build writes for it (``base_url``:
    the site's, part of the fingerprint); a chunk file is read and hashed unless its stamp is the
    one the state recorded (``reuse/stamps.py``). When every manifest page has its recorded stamp,
    no page is read."""
    entry = state.get("documents", doc.rel, fingerprint)
    if entry is None:
        return None
    # plain strings: os.path.join per chunk file cost more than its stat
    folder = f"{os.fspath(site)}/{doc.dir_rel}" if doc.dir_rel else os.fspath(site)
    recorded = entry.get("files")
    recorded = recorded if isinstance(recorded, list) else []
    chunks_folder = f"{folder}/{CHUNKS_DIR}"
    page_stamps = entry.get("manifest_stamp")  # one a page (each stat before any read)
    if isinstance(page_stamps, list) and page_stamps and all(
        stamps.matches(stamps.stat(f"{chunks_folder}/{manifest_name(doc.key, p)}"), s) for p, s in enumerate(page_stamps, 1)
    ):
        plan = _reuse_unread(doc, folder, entry, recorded, fingerprint, source_stamp, source_xxh64, base_url)
        if plan is not None:
            return plan
    try:
        seen_pages: list = []
        raws, manifest = read_manifest(chunks_folder, doc.key, seen_pages)
        if manifest_digest(manifest) != entry.get("manifest"):
            return None
        if list(manifest_files(manifest, base_url, doc.dir_rel, doc.key).values()) != raws:
            return None  # the recorded data, but not the files this build writes of it (their links, their form)
        manifest_stamp = [stamps.recordable(st) for st in seen_pages]
        records = manifest["chunks"]
        # content_xxh64 is the xxh64 of the chunk's UTF-8 text, so of the file's bytes
        seen = stamps.verify_all((f"{folder}/{r['href']}" for r in records), (r["content_xxh64"] for r in records), recorded)
        if seen is None:
            return None
        return DocumentChunks(
            doc=doc,
            source_sha256=manifest["source_sha256"],
            strategy=manifest["strategy"],
            strategy_key=manifest["strategy_key"],
            title=manifest["title"],
            chunks=StoredChunks(folder, records),
            fingerprint=fingerprint,
            reused=True,
            stored_pages=len(raws),
            stored_data=manifest,
            warnings=tuple(str(w) for w in entry.get("warnings", [])),
            promotion_level=manifest.get("promotion_level", DEFAULT_LEVEL),
            source_stamp=source_stamp,
            source_xxh64=source_xxh64,
            file_stamps=seen,
            manifest_stamp=manifest_stamp if all(manifest_stamp) else None,
            manifest_xxh64=entry["manifest"],
            base_url=base_url,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _reuse_unread(
    doc: SourceDoc, folder: str, entry: dict, recorded: list, fingerprint: str,
    source_stamp: list | None, source_xxh64: str, base_url: str,
) -> DocumentChunks | None:
    """``reuse_chunks`` for a document whose manifest pages have the stamps the state recorded: the
    state's summary of it stands for its records (names, content hashes), so it is not read;
    each chunk file must have its recorded stamp too. None: check by content instead."""
    summary, hashes = entry.get("summary"), entry.get("hashes")
    if not (
        isinstance(summary, list) and len(summary) == 5 and all(isinstance(v, str) for v in summary)
        and isinstance(hashes, list) and all(isinstance(h, str) for h in hashes) and len(recorded) == len(hashes)
    ):
        return None
    prefix = f"{folder}/{CHUNKS_DIR}/"
    chunk_prefix = f"{prefix}{doc.key}-"  # chunk i is ``<key>-<i>.md`` (``DocumentChunks.chunk_file``)
    for i, stamp in enumerate(recorded):
        if not stamps.matches(stamps.stat(f"{chunk_prefix}{i}.md"), stamp):
            return None
    seen = list(recorded)  # each file's recorded stamp, just matched
    sha, strategy, strategy_key, title, promotion = summary
    manifest_path = prefix + manifest_name(doc.key)
    stub = ManifestStub(manifest_path, entry["manifest"], doc.name, sha, strategy_key, tuple(hashes), doc.key)
    return DocumentChunks(
        doc=doc,
        source_sha256=sha,
        strategy=strategy,
        strategy_key=strategy_key,
        title=title,
        chunks=StoredChunks(folder, count=len(hashes), load=stub.load),
        fingerprint=fingerprint,
        reused=True,
        stored_pages=len(entry["manifest_stamp"]),
        warnings=tuple(str(w) for w in entry.get("warnings", [])),
        promotion_level=promotion,
        source_stamp=source_stamp,
        source_xxh64=source_xxh64,
        file_stamps=seen,
        manifest_stamp=entry["manifest_stamp"],
        manifest_xxh64=entry["manifest"],
        stub=stub,
        base_url=base_url,
    )
