"""ChunkingTool: every document of a tree -> ``_chunks/<key>-<i>.md`` beside it, plus a manifest
(``SourceDoc.key``: the file name without ``.md``).

Two phases: ``plan_chunks`` reads and chunks everything (raising on the first bad input, having
written nothing); ``write_chunks`` then writes. ``_chunks/`` is owned by the pipeline: files
there that no current chunk needs (a deleted or shrunk document's) are removed.

Manifest ``_chunks/<key>.manifest.json``: the document's chunk records without ``content`` (the chunk
file holds it), each with ``href`` and ``content_xxh64``, over pages of at most 30 kB (the later ones
``<key>.manifest-<p>.json``, ``manifest.py``); see docs/ARCHITECTURE.md.

The parts: ``document.py`` reads and chunks one document, ``manifest.py`` holds its result and
manifest, ``reuse.py`` decides whether a previous build's chunks still stand.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import orjson

from pipeline.chunking.document import chunk_document, directory_chunking, read_source, stat_source
from pipeline.chunking.manifest import (
    DocumentChunks, ManifestStub, manifest_digest, manifest_field, manifest_files, read_manifest,
)
from pipeline.chunking.reuse import chunking_digest, counter_identity, document_fingerprint, reuse_chunks
from pipeline.config import SiteConfig
from pipeline.embedding.cache import content_hash
from pipeline.errors import PipelineError
from pipeline.fsutil import LinkRefused, Vanished, require_dir, write_bytes_atomic, write_text_atomic
from pipeline.parsing.tokens import TokenCounter
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, output_hash
from pipeline.siteformat.tree import CHUNKS_DIR, MANIFEST_SUFFIX, SourceDoc, site_dirs
from pipeline.sources.confine import warn_link
from pipeline.sources.documents import all_documents
from pipeline.sources.exclude import Exclude
from pipeline.vault.mode import vault_config
from pipeline.vault.names import VaultNames
from pipeline.wording import counted


@dataclass
class ChunkReport:
    documents: int = 0
    chunks: int = 0
    written: int = 0  # files whose bytes changed
    removed: list[str] = field(default_factory=list)
    # what unchanged documents warned about when they were chunked: not said again (``plan_chunks``)
    repeated_warnings: int = 0
    repeated_warning_documents: int = 0

    def repeats_note(self) -> str | None:
        """One line summarising the warnings of unchanged documents that were not said again."""
        if not self.repeated_warnings:
            return None
        return (
            f"{counted(self.repeated_warnings, 'warning')} about {counted(self.repeated_warning_documents, 'unchanged document')} "
            "not repeated (shown when they were chunked; `pipeline chunk FILE` shows one's again)"
        )


def plan_chunks(
    root: Path, config: SiteConfig, counter: TokenCounter, *, site: Path | None = None, state: BuildState | None = None
) -> list[DocumentChunks]:
    """Chunk every document under ``root``; raises PipelineError on bad input. Writes nothing.

    With ``site`` and ``state`` (a build), a document whose inputs are unchanged since the build
    that wrote ``site`` takes its chunks from there (``reuse_chunks``) instead of being parsed,
    and a source whose stamp is the one the state recorded is not read (``reuse/stamps.py``).

    What chunking warns about (a chunk over the limit, ``base.assemble``) is said once, when the
    document is chunked: a reused plan keeps its warnings (``DocumentChunks.warnings``, counted
    in ``ChunkReport.repeated_warnings``) but does not warn them again."""
    require_dir(root, "content")
    config = vault_config(root, config)
    documents = all_documents(root, Exclude(config.exclude))
    # a vault note's chunk files link to the files its wikilinks resolve to: the vault's file
    # list is an input of every note (an added or renamed note changes what links resolve to)
    vault = VaultNames.scan(root, Exclude(config.exclude), {d.rel for d in documents}) if config.vault else None
    chunking: dict[str, tuple[str, dict]] = {}
    shared: dict[str, str] = {}  # chunking_digest per directory
    tokenizer = counter_identity(counter)  # once per build: it stats the tokenizer file
    limit, base_url = config.max_document_bytes, config.normalized_base_url
    plans = []
    for doc in documents:
        dir_rel = doc.dir_rel
        if dir_rel not in chunking:
            chunking[dir_rel] = directory_chunking(root, dir_rel, config)
            shared[dir_rel] = chunking_digest(chunking[dir_rel], config, tokenizer)
            if vault is not None:
                shared[dir_rel] += "|" + vault.digest()
        try:
            st = stat_source(doc, limit)  # before the read (reuse/stamps.py)
        except Vanished as gone:
            warnings.warn(f"{gone}; skipped", UserWarning, stacklevel=2)
            continue
        source_stamp = stamps.recordable(st)
        known = state.previous("documents", doc.rel) if state is not None else None
        data = None
        if known is not None and isinstance(known.get("source_xxh64"), str) and stamps.matches(st, known.get("source")):
            source_xxh64 = known["source_xxh64"]
        else:
            data = _read_or_skip(doc, limit)
            if data is None:
                continue
            source_xxh64 = output_hash(data)
        # a document published as another generator's page (MkDocs): its URLs are inputs too
        page = config.pages.get(doc.rel) if config.pages else None
        doc_key = shared[dir_rel] if page is None else f"{shared[dir_rel]}|{page.digest()}"
        fingerprint = document_fingerprint(doc, source_xxh64, doc_key)
        plan = None
        if site is not None and state is not None:
            plan = reuse_chunks(site, doc, fingerprint, state, source_stamp=source_stamp, source_xxh64=source_xxh64,
                                base_url=base_url)
        if plan is None:
            if data is None:  # trusted by its stamp, but it is chunked now: read it (and check the stamp's word)
                data = _read_or_skip(doc, limit)
                if data is None:
                    continue
                if output_hash(data) != source_xxh64:
                    source_xxh64, source_stamp = output_hash(data), None
                    fingerprint = document_fingerprint(doc, source_xxh64, doc_key)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plan = chunk_document(doc, config, counter, chunking[dir_rel], data=data, fingerprint=fingerprint, page=page,
                                      vault=vault)
            plan = replace(
                plan,
                warnings=tuple(str(w.message) for w in caught if w.category is UserWarning),
                source_stamp=source_stamp,
                source_xxh64=source_xxh64,
                base_url=base_url,
            )
            for w in caught:
                if w.category is not UserWarning:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not plan.reused:  # a reused plan's warnings were said when it was chunked
            for message in plan.warnings:
                warnings.warn(message, UserWarning, stacklevel=2)
        plans.append(plan)
    return plans


def _read_or_skip(doc: SourceDoc, limit: int) -> bytes | None:
    """The document's bytes (``read_source``); None, with a warning naming it, when it turned into
    a symbolic link or vanished since it was listed: it is then left out, as if it had been so
    when the build listed the tree (a file replaced between two steps of a build is never read
    through a link, ``fsutil.read_below``)."""
    try:
        return read_source(doc, limit)
    except LinkRefused:
        warn_link(doc.path, doc.root)
    except Vanished as gone:
        warnings.warn(f"{gone}; skipped", UserWarning, stacklevel=3)
    return None


def write_chunks(site: Path, plans: list[DocumentChunks], *, state: BuildState | None = None) -> ChunkReport:
    """Write chunk files and manifests under ``site`` (same relative paths as the plans' sources).

    A reused plan's files are already there (``reuse_chunks`` checked them). With ``state``,
    records each document's fingerprint and manifest hash for the next build."""
    report = ChunkReport(documents=len(plans))
    repeated = [len(plan.warnings) for plan in plans if plan.reused and plan.warnings]
    report.repeated_warnings, report.repeated_warning_documents = sum(repeated), len(repeated)
    expected: dict[Path, set[str]] = {}
    folders: dict[str, Path] = {}  # one Path per directory, not per plan
    for plan in plans:
        folder = folders.get(plan.doc.dir_rel)
        if folder is None:
            folder = folders[plan.doc.dir_rel] = site / plan.doc.dir_rel / CHUNKS_DIR
        names = expected.setdefault(folder, set())
        if plan.reused:  # its files are in place (no chunk text is read); chunk i is ``<key>-<i>.md``
            names.update(map(plan.chunk_file, range(len(plan.chunks))))
        else:
            for chunk in plan.chunks:
                name = plan.chunk_file(chunk.chunk_index)
                names.add(name)
                report.written += write_text_atomic(folder / name, plan.file_text(chunk.chunk_index))
        digest = plan.manifest_xxh64
        if plan.reused:
            names.update(plan.manifest_names())
        else:
            manifest = plan.manifest()
            for name, data in manifest_files(manifest, plan.base_url, plan.doc.dir_rel, plan.doc.key).items():
                names.add(name)
                report.written += write_bytes_atomic(folder / name, data)
            digest = manifest_digest(manifest)
        if state is not None and plan.fingerprint:
            if plan.stub is not None:
                hashes = list(plan.stub.hashes)
            elif plan.stored_data is not None:
                hashes = [record["content_xxh64"] for record in plan.stored_data["chunks"]]
            else:
                hashes = [content_hash(plan.file_text(i)) for i in range(len(plan.chunks))]
            # stamps (reuse/stamps.py) only for what was checked, never for files written just now
            extra = {"source": plan.source_stamp} if plan.source_stamp is not None else {}
            if plan.source_xxh64:
                extra["source_xxh64"] = plan.source_xxh64
            if plan.file_stamps is not None and any(plan.file_stamps):
                extra["files"] = plan.file_stamps
            if plan.manifest_stamp is not None:
                extra["manifest_stamp"] = plan.manifest_stamp
            state.put(
                "documents", plan.doc.rel, plan.fingerprint, manifest=digest,
                warnings=list(plan.warnings), summary=plan.summary(), hashes=hashes, **extra,
            )
        report.chunks += len(plan.chunks)
    for dir_rel in site_dirs(site):
        folder = site / dir_rel / CHUNKS_DIR
        if not folder.is_dir():
            continue
        keep = expected.get(folder, set())
        # names, not Paths: sorting tens of thousands of Paths costs seconds; same order in one
        # folder. Only the names to remove are sorted: a no-op rebuild has none
        for name in sorted(set(os.listdir(folder)).difference(keep)):
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
        else:  # a plan chunked now: its data as its files give it back (JSON types)
            data = plan.stored_data if plan.stored_data is not None else orjson.loads(orjson.dumps(plan.manifest()))
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
    """The chunk manifests of one directory (each joined from its pages), sorted by source name."""
    folder = site / dir_rel / CHUNKS_DIR
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob(f"*{MANIFEST_SUFFIX}")):
        try:
            out.append(read_manifest(os.fspath(folder), path.name[: -len(MANIFEST_SUFFIX)])[1])
        except (OSError, ValueError) as exc:
            raise PipelineError(f"corrupt chunk manifest ({exc}); rebuild with `pipeline chunk-dir`", path=path) from None
    return sorted(out, key=lambda m: m["source"])
