"""ChunkingTool: every document of a tree -> ``_chunks/<key>-<i>.md`` beside it, plus a manifest
(``SourceDoc.key``: the file name without ``.md``).

Two phases: ``plan_chunks`` reads and chunks everything (raising on the first bad input, having
written nothing); ``write_chunks`` then writes. ``_chunks/`` is owned by the pipeline: files
there that no current chunk needs (a deleted or shrunk document's) are removed.

Manifest ``_chunks/<key>.manifest.json``: the document's chunk records without ``content`` (the chunk
file holds it), each with ``href`` and ``content_xxh64``; see docs/ARCHITECTURE.md.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from pathlib import Path

import orjson

from pipeline import __version__
from pipeline.chunking.base import Chunk, assemble, is_technical_title
from pipeline.chunking.select import merge_chunking, strategy_for
from pipeline.config import SiteConfig
from pipeline.embedding.cache import content_hash
from pipeline.errors import PipelineError
from pipeline.fsutil import decode_utf8, read_text, require_dir, write_bytes_atomic, write_text_atomic
from pipeline.parsing.markdown import ParsedDocument, parse_markdown
from pipeline.parsing.links import chunk_file_text, link_destinations
from pipeline.parsing.tokens import TokenCounter
from pipeline.promotion import DEFAULT_LEVEL, promotion_level
from pipeline.site import stamps
from pipeline.site.state import BuildState, Digest, file_hash, output_hash
from pipeline.site.exclude import Exclude
from pipeline.site.tree import CHUNKS_DIR, MANIFEST_SUFFIX, SourceDoc, all_documents, manifest_name, site_dirs

MANIFEST_VERSION = 2  # 2: promotion_level (readers refuse other versions: pipeline/export/source.py)
_RECORD_FIELDS = tuple(f.name for f in fields(Chunk) if f.name != "content")
DIRECTORY_CONFIG = "_chunking.toml"  # a directory's chunking choice: `strategy = "..."` plus options


@dataclass(frozen=True)
class ManifestStub:
    """A reused document's manifest that the build did not read (its stamp is the one the build
    state recorded, ``site/stamps.py``): what a rebuild needs of it, from the state; the rest is
    read by ``load`` when a later stage needs it."""

    path: str
    digest: str  # xxh64 of the file (the state's ``manifest``)
    source: str
    source_sha256: str
    strategy_key: str
    hashes: tuple[str, ...]  # each chunk's ``content_xxh64``, in order

    def load(self) -> dict:
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except OSError as exc:
            raise PipelineError(f"chunk manifest unreadable during the build ({exc.strerror}); build again", path=self.path) from None
        if output_hash(raw) != self.digest:
            raise PipelineError("chunk manifest changed during the build; build again", path=self.path)
        return orjson.loads(raw)


def manifest_field(manifest: dict | ManifestStub, name: str):
    """``manifest[name]`` of a parsed manifest or a stub (source, source_sha256, strategy_key)."""
    return getattr(manifest, name) if isinstance(manifest, ManifestStub) else manifest[name]


@dataclass(frozen=True)
class DocumentChunks:
    """The chunking result for one document."""

    doc: SourceDoc
    source_sha256: str
    strategy: str
    strategy_key: str
    title: str
    chunks: list[Chunk]
    fingerprint: str = ""  # digest of every input of this result (``document_fingerprint``)
    reused: bool = False  # taken from a previous build's files, which were checked to be current
    stored_manifest: bytes | None = field(default=None, compare=False, repr=False)  # a reused plan's manifest file
    stored_data: dict | None = field(default=None, compare=False, repr=False)  # ... and its parsed JSON
    warnings: tuple[str, ...] = ()  # what chunking warned about (shown again when the plan is reused)
    promotion_level: str = DEFAULT_LEVEL  # from front matter; every chunk record carries it (pipeline/promotion.py)
    # Each chunk FILE's text when it differs from the record's content: relative link
    # destinations relocated for ``_chunks/`` (parsing/links.py). None: the files are the contents.
    files: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    # For the build state (site/stamps.py): the source's stamp, taken before it was read (None:
    # not recordable) and xxh64 of its bytes; a reused plan's stamps of its manifest, then of each
    # chunk file (None where a file is too recent to stamp). A plan written now has none.
    source_stamp: list | None = field(default=None, compare=False, repr=False)
    source_xxh64: str = field(default="", compare=False, repr=False)
    file_stamps: list | None = field(default=None, compare=False, repr=False)
    manifest_stamp: list | None = field(default=None, compare=False, repr=False)
    manifest_xxh64: str = field(default="", compare=False, repr=False)  # a reused plan's manifest hash
    stub: ManifestStub | None = field(default=None, compare=False, repr=False)  # a reused plan's unread manifest

    def file_text(self, index: int) -> str:
        """What ``_chunks/<key>-<index>.md`` holds (``content_xxh64`` hashes it)."""
        return self.files[index] if self.files is not None else self.chunks[index].content

    @property
    def technical_baseline(self) -> int | None:
        """1 when chunk 1's title reads like a Quick Reference (seed 001 §7), else None."""
        return 1 if len(self.chunks) > 1 and is_technical_title(self.chunks[1].title) else None

    def chunk_file(self, index: int) -> str:
        return f"{self.doc.key}-{index}.md"

    def manifest(self) -> dict:
        records = []
        for chunk in self.chunks:
            # Chunk.to_dict without its deep copy (asdict): the record is only serialized.
            record = {name: getattr(chunk, name) for name in _RECORD_FIELDS}
            record["href"] = f"{CHUNKS_DIR}/{self.chunk_file(chunk.chunk_index)}"
            record["content_xxh64"] = content_hash(self.file_text(chunk.chunk_index))
            record["promotion_level"] = self.promotion_level
            records.append(record)
        return {
            "manifest_version": MANIFEST_VERSION,
            "pipeline_version": __version__,
            "source": self.doc.name,
            "document_id": self.doc.document_id,
            "title": self.title,
            "source_sha256": self.source_sha256,
            "strategy": self.strategy,
            "strategy_key": self.strategy_key,
            "technical_baseline": self.technical_baseline,
            "promotion_level": self.promotion_level,
            "count": len(self.chunks),
            "chunks": records,
        }

    def manifest_bytes(self) -> bytes:
        if self.stored_manifest is not None:
            return self.stored_manifest
        return orjson.dumps(self.manifest(), option=orjson.OPT_INDENT_2) + b"\n"

    def summary(self) -> list:
        """What the build state keeps of the manifest so that a rebuild need not read it."""
        return [self.source_sha256, self.strategy, self.strategy_key, self.title, self.promotion_level]


@dataclass
class ChunkReport:
    documents: int = 0
    chunks: int = 0
    written: int = 0  # files whose bytes changed
    removed: list[str] = field(default_factory=list)


def validate(document: ParsedDocument, *, allow_unclosed_fences: bool) -> None:
    """Bad input for a build: an empty document, or a fence never closed (it swallows the rest)."""
    if not document.text.strip() or not document.text[document.body_start :].strip():
        raise PipelineError("empty document: add content or delete the file", path=document.path, line=1)
    if not allow_unclosed_fences:
        for fence in document.code:
            # A fence its container (a quote, a list item) ends is harmless and valid CommonMark;
            # only one that runs to the end of the file swallows the rest of it.
            if fence.fenced and not fence.closed and not document.text[document.line_offset(fence.end_line) :].strip():
                raise PipelineError(
                    "code fence opened here is never closed, so it swallows the rest of the file "
                    "(close it, or set allow_unclosed_fences = true)",
                    path=document.path,
                    line=fence.start_line + 1,
                )


def directory_chunking(root: Path, dir_rel: str, config: SiteConfig) -> tuple[str, dict]:
    """The site's chunking choice with each ``_chunking.toml`` from the root down to ``dir_rel``
    applied in turn (a directory's file holds for its subdirectories too)."""
    name, options = config.strategy, dict(config.strategy_options)
    parts = dir_rel.split("/") if dir_rel else []
    for depth in range(len(parts) + 1):
        path = root.joinpath(*parts[:depth], DIRECTORY_CONFIG)
        if path.is_file() and not path.is_symlink():  # links are never followed (site/confine.py)
            try:
                layer = tomllib.loads(read_text(path))
            except tomllib.TOMLDecodeError as exc:
                raise PipelineError(f"invalid TOML: {exc}", path=path) from None
            name, options = merge_chunking(name, options, layer, path=str(path))
    return name, options


def chunk_document(
    doc: SourceDoc,
    config: SiteConfig,
    counter: TokenCounter,
    chunking: tuple[str, dict] | None = None,
    *,
    data: bytes | None = None,
    fingerprint: str = "",
) -> DocumentChunks:
    """Read, validate and chunk one document; ``chunking`` is its directory's (name, options)."""
    data = _read(doc.path, config.max_document_bytes) if data is None else data
    text = decode_utf8(data, doc.path)
    document = parse_markdown(text, str(doc.path))
    markdown = doc.name.endswith(".md")  # else a YAML/JSON entry: backticks there are no fences
    validate(document, allow_unclosed_fences=config.allow_unclosed_fences or not markdown)
    name, options = chunking or (config.strategy, config.strategy_options)
    site_defaults = {"semantic": {"embedder": config.embedder}}
    strategy = strategy_for(document, name, options, counter, site_defaults=site_defaults)
    chunks = assemble(
        document,
        strategy.pieces(document),
        strategy=strategy.name,
        document_id=doc.document_id,
        source_file=doc.rel,
        counter=counter,
    )
    entry_title = chunks[0].metadata.get("parent_title") if chunks and not markdown else None
    files = None
    if markdown:  # a chunk file sits one folder below its source: relocate relative links
        destinations = link_destinations(document)
        if destinations:
            files = tuple(chunk_file_text(c.content, text, c.start_offset, c.end_offset, destinations, doc.name) for c in chunks)
    front_matter = document.front_matter or (chunks[0].metadata.get("front_matter") if chunks else None)
    promotion = promotion_level(front_matter if isinstance(front_matter, dict) else None, path=str(doc.path), text=text)
    return DocumentChunks(
        doc=doc,
        source_sha256=hashlib.sha256(data).hexdigest(),
        strategy=strategy.name,
        strategy_key=strategy.cache_key(),
        title=entry_title or (document.title if markdown else None) or doc.stem,
        chunks=chunks,
        fingerprint=fingerprint,
        files=files,
        promotion_level=promotion,
    )


def document_fingerprint(doc: SourceDoc, source_xxh64: str, chunking_key: str) -> str:
    """Digest of everything a document's chunks depend on: its path and bytes (front matter
    included; by their xxh64, ``source_xxh64``), and (``chunking_key``, its directory's
    ``chunking_digest``) the directory's effective strategy and options, the site settings
    chunking reads and the tokenizer. The code is covered by the build state's ``code_digest``."""
    return Digest(doc.rel, source_xxh64, chunking_key).hex()


def chunking_digest(chunking: tuple[str, dict], config: SiteConfig, tokenizer: str) -> str:
    """The part of ``document_fingerprint`` that a directory's documents share (computed once
    per directory by ``plan_chunks``): the strategy and options, the site settings chunking
    reads, and the tokenizer (``_counter_identity``)."""
    name, options = chunking
    return Digest(
        name, orjson.dumps(options, option=orjson.OPT_SORT_KEYS, default=repr), config.embedder, config.allow_unclosed_fences, tokenizer
    ).hex()


def _counter_identity(counter: TokenCounter) -> str:
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
    site: Path, doc: SourceDoc, fingerprint: str, state: BuildState, *, source_stamp: list | None = None, source_xxh64: str = ""
) -> DocumentChunks | None:
    """The chunks a previous build wrote for ``doc`` under ``site``, when the state records them
    for the same ``fingerprint`` and the manifest and every chunk file are still what it wrote;
    else None (the document is chunked again). The manifest is read and hashed; a chunk file is
    read and hashed unless its stamp is the one the state recorded (``site/stamps.py``)."""
    entry = state.get("documents", doc.rel, fingerprint)
    if entry is None:
        return None
    # plain strings: os.path.join per chunk file cost more than its stat
    folder = f"{os.fspath(site)}/{doc.dir_rel}" if doc.dir_rel else os.fspath(site)
    recorded = entry.get("files")
    recorded = recorded if isinstance(recorded, list) else []
    manifest_path = f"{folder}/{CHUNKS_DIR}/{manifest_name(doc.key)}"
    manifest_stat = stamps.stat(manifest_path)  # before any read
    manifest_stamp = stamps.recordable(manifest_stat)
    if stamps.matches(manifest_stat, entry.get("manifest_stamp")):
        plan = _reuse_unread(doc, folder, manifest_path, entry, recorded, fingerprint, source_stamp, source_xxh64)
        if plan is not None:
            return plan
    try:
        with open(manifest_path, "rb") as handle:
            raw = handle.read()
        if output_hash(raw) != entry.get("manifest"):
            return None
        manifest = orjson.loads(raw)
        records = manifest["chunks"]
        seen = []
        for i, record in enumerate(records):
            path = f"{folder}/{record['href']}"
            st = stamps.stat(path)  # before any read: the stamp recorded must not be newer than what was checked
            if st is None:
                return None
            seen.append(stamps.recordable(st))
            if i < len(recorded) and stamps.matches(st, recorded[i]):
                continue
            with open(path, "rb") as handle:
                content = handle.read().decode("utf-8")
            if content_hash(content) != record["content_xxh64"]:
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
            stored_manifest=raw,
            stored_data=manifest,
            warnings=tuple(str(w) for w in entry.get("warnings", [])),
            promotion_level=manifest.get("promotion_level", DEFAULT_LEVEL),
            source_stamp=source_stamp,
            source_xxh64=source_xxh64,
            file_stamps=seen,
            manifest_stamp=manifest_stamp,
            manifest_xxh64=entry["manifest"],
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _reuse_unread(
    doc: SourceDoc, folder: str, manifest_path: str, entry: dict, recorded: list, fingerprint: str,
    source_stamp: list | None, source_xxh64: str,
) -> DocumentChunks | None:
    """``reuse_chunks`` for a document whose manifest has the stamp the state recorded: the
    state's summary of it stands for its records (names, content hashes), so it is not read;
    each chunk file must have its recorded stamp too. None: check by content instead."""
    summary, hashes = entry.get("summary"), entry.get("hashes")
    if not (
        isinstance(summary, list) and len(summary) == 5 and all(isinstance(v, str) for v in summary)
        and isinstance(hashes, list) and all(isinstance(h, str) for h in hashes) and len(recorded) == len(hashes)
    ):
        return None
    seen = []
    for i in range(len(hashes)):
        st = stamps.stat(f"{folder}/{CHUNKS_DIR}/{doc.key}-{i}.md")
        if not stamps.matches(st, recorded[i]):
            return None
        seen.append(recorded[i])
    sha, strategy, strategy_key, title, promotion = summary
    stub = ManifestStub(manifest_path, entry["manifest"], doc.name, sha, strategy_key, tuple(hashes))
    return DocumentChunks(
        doc=doc,
        source_sha256=sha,
        strategy=strategy,
        strategy_key=strategy_key,
        title=title,
        chunks=StoredChunks(folder, count=len(hashes), load=stub.load),
        fingerprint=fingerprint,
        reused=True,
        warnings=tuple(str(w) for w in entry.get("warnings", [])),
        promotion_level=promotion,
        source_stamp=source_stamp,
        source_xxh64=source_xxh64,
        file_stamps=seen,
        manifest_stamp=entry["manifest_stamp"],
        manifest_xxh64=entry["manifest"],
        stub=stub,
    )


def plan_chunks(
    root: Path, config: SiteConfig, counter: TokenCounter, *, site: Path | None = None, state: BuildState | None = None
) -> list[DocumentChunks]:
    """Chunk every document under ``root``; raises PipelineError on bad input. Writes nothing.

    With ``site`` and ``state`` (a build), a document whose inputs are unchanged since the build
    that wrote ``site`` takes its chunks from there (``reuse_chunks``) instead of being parsed,
    and a source whose stamp is the one the state recorded is not read (``site/stamps.py``)."""
    require_dir(root, "content")
    chunking: dict[str, tuple[str, dict]] = {}
    shared: dict[str, str] = {}  # chunking_digest per directory
    tokenizer = _counter_identity(counter)  # once per build: it stats the tokenizer file
    previous = state.old.get("documents", {}) if state is not None else {}
    plans = []
    for doc in all_documents(root, Exclude(config.exclude)):
        if doc.dir_rel not in chunking:
            chunking[doc.dir_rel] = directory_chunking(root, doc.dir_rel, config)
            shared[doc.dir_rel] = chunking_digest(chunking[doc.dir_rel], config, tokenizer)
        st = _stat(doc.path, config.max_document_bytes)  # before the read (site/stamps.py)
        source_stamp = stamps.recordable(st)
        known = previous.get(doc.rel)
        data = None
        if isinstance(known, dict) and isinstance(known.get("source_xxh64"), str) and stamps.matches(st, known.get("source")):
            source_xxh64 = known["source_xxh64"]
        else:
            data = _read_bytes(doc.path)
            source_xxh64 = output_hash(data)
        fingerprint = document_fingerprint(doc, source_xxh64, shared[doc.dir_rel])
        plan = None
        if site is not None and state is not None:
            plan = reuse_chunks(site, doc, fingerprint, state, source_stamp=source_stamp, source_xxh64=source_xxh64)
        if plan is None:
            if data is None:  # trusted by its stamp, but it is chunked now: read it (and check the stamp's word)
                data = _read_bytes(doc.path)
                if output_hash(data) != source_xxh64:
                    source_xxh64, source_stamp = output_hash(data), None
                    fingerprint = document_fingerprint(doc, source_xxh64, shared[doc.dir_rel])
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plan = chunk_document(doc, config, counter, chunking[doc.dir_rel], data=data, fingerprint=fingerprint)
            plan = replace(
                plan,
                warnings=tuple(str(w.message) for w in caught if w.category is UserWarning),
                source_stamp=source_stamp,
                source_xxh64=source_xxh64,
            )
            for w in caught:
                if w.category is not UserWarning:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        for message in plan.warnings:
            warnings.warn(message, UserWarning, stacklevel=2)
        plans.append(plan)
    return plans


def write_chunks(site: Path, plans: list[DocumentChunks], *, state: BuildState | None = None) -> ChunkReport:
    """Write chunk files and manifests under ``site`` (same relative paths as the plans' sources).

    A reused plan's files are already there (``reuse_chunks`` checked them). With ``state``,
    records each document's fingerprint and manifest hash for the next build."""
    report = ChunkReport(documents=len(plans))
    expected: dict[Path, set[str]] = {}
    folders: dict[str, Path] = {}  # one Path per directory, not per plan
    for plan in plans:
        folder = folders.get(plan.doc.dir_rel)
        if folder is None:
            folder = folders[plan.doc.dir_rel] = site / plan.doc.dir_rel / CHUNKS_DIR
        names = expected.setdefault(folder, set())
        if plan.reused:  # its files are in place (no chunk text is read); chunk i is ``<key>-<i>.md``
            names.update(plan.chunk_file(i) for i in range(len(plan.chunks)))
        else:
            for chunk in plan.chunks:
                name = plan.chunk_file(chunk.chunk_index)
                names.add(name)
                report.written += write_text_atomic(folder / name, plan.file_text(chunk.chunk_index))
        names.add(manifest_name(plan.doc.key))
        if not plan.reused:
            manifest = plan.manifest_bytes()
            report.written += write_bytes_atomic(folder / manifest_name(plan.doc.key), manifest)
        if state is not None and plan.fingerprint:
            if plan.stub is not None:
                hashes = list(plan.stub.hashes)
            elif plan.stored_data is not None:
                hashes = [record["content_xxh64"] for record in plan.stored_data["chunks"]]
            else:
                hashes = [content_hash(plan.file_text(i)) for i in range(len(plan.chunks))]
            # stamps (site/stamps.py) only for what was checked, never for files written just now
            extra = {"source": plan.source_stamp} if plan.source_stamp is not None else {}
            if plan.source_xxh64:
                extra["source_xxh64"] = plan.source_xxh64
            if plan.file_stamps is not None and any(plan.file_stamps):
                extra["files"] = plan.file_stamps
            if plan.manifest_stamp is not None:
                extra["manifest_stamp"] = plan.manifest_stamp
            state.put(
                "documents", plan.doc.rel, plan.fingerprint, manifest=plan.manifest_xxh64 or output_hash(manifest),
                warnings=list(plan.warnings), summary=plan.summary(), hashes=hashes, **extra,
            )
        report.chunks += len(plan.chunks)
    for dir_rel in site_dirs(site):
        folder = site / dir_rel / CHUNKS_DIR
        if not folder.is_dir():
            continue
        keep = expected.get(folder, set())
        # names, not Paths: sorting tens of thousands of Paths costs seconds; same order in one folder
        for name in sorted(os.listdir(folder)):
            if name not in keep:
                path = folder / name
                path.unlink()
                report.removed.append(path.relative_to(site).as_posix())
        if not keep:
            folder.rmdir()
    return report


def manifests_by_dir(plans: list[DocumentChunks]) -> dict[str, list[dict | ManifestStub]]:
    """What ``read_manifests`` returns for each directory once ``write_chunks`` wrote ``plans``
    (a directory without plans: none), from the plans: a reused plan's manifest was parsed when
    it was checked, so a rebuild parses each manifest once, not once per stage; one whose stamp
    spared the read is a ``ManifestStub`` (read if a later stage needs more of it)."""
    out: dict[str, list[dict | ManifestStub]] = {}
    for plan in plans:
        if plan.stub is not None:
            data = plan.stub
        else:
            data = plan.stored_data if plan.stored_data is not None else orjson.loads(plan.manifest_bytes())
        out.setdefault(plan.doc.dir_rel, []).append(data)
    return {d: sorted(ms, key=lambda m: manifest_field(m, "source")) for d, ms in out.items()}


def chunk_texts_by_dir(plans: list[DocumentChunks]) -> dict[str, dict[str, str]]:
    """Each directory's chunk file texts by ``href``: what ``write_chunks`` writes, so a later
    stage need not read them back (a reused plan's are not read here: a no-op rebuild reads no
    chunk file)."""
    out: dict[str, dict[str, str]] = {}
    for plan in plans:
        texts = out.setdefault(plan.doc.dir_rel, {})
        if plan.reused:  # its files are in SITE already and read only if a stage needs them
            continue
        for chunk in plan.chunks:
            texts[f"{CHUNKS_DIR}/{plan.chunk_file(chunk.chunk_index)}"] = plan.file_text(chunk.chunk_index)
    return out


def read_manifests(site: Path, dir_rel: str) -> list[dict]:
    """The chunk manifests of one directory, sorted by source name."""
    folder = site / dir_rel / CHUNKS_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"*{MANIFEST_SUFFIX}")):
        try:
            out.append(orjson.loads(path.read_bytes()))
        except orjson.JSONDecodeError as exc:
            raise PipelineError(f"corrupt chunk manifest ({exc}); rebuild with `pipeline chunk-dir`", path=path) from None
    return sorted(out, key=lambda m: m["source"])


def _stat(path: Path, limit: int | None = None) -> os.stat_result:
    """The file's ``stat``; PipelineError when it cannot be read or is over ``limit`` bytes (told
    by its size, before reading: every later step grows with a document's size)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PipelineError(f"cannot read: {exc.strerror}", path=path) from None
    if limit is not None and st.st_size > limit:
        raise PipelineError(
            f"document is {st.st_size:,} bytes, over the limit of {limit:,} (max_document_bytes in the site "
            "config); split it into several documents or raise the limit",
            path=path,
        )
    return st


def _read(path: Path, limit: int | None = None) -> bytes:
    """The file's bytes; PipelineError when it cannot be read or is over ``limit`` bytes."""
    _stat(path, limit)
    return _read_bytes(path)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PipelineError(f"cannot read: {exc.strerror}", path=path) from None
