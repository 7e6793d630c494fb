"""Every document and chunk of a built site, as export records (read through ``pipeline.client``).

A site is read the way any reader reads it, so a directory and a URL give the same records:
the topics by following links from the root ``index.json``, each document's manifest
(``_chunks/<key>.manifest.json``, or ``_chunks/<key>.json`` as sites built before the rename
name it; its later pages by their ``_links.next``) for offsets, token counts and front matter,
each chunk file for the text, and each topic's vector pages (``_embeddings.bin`` and the next ones) for the vectors (as
published: int8 with a per-row scale, read back as float32). Records come in site order: topics
as the walk from the root meets them, documents as their topic lists them, chunks by index.

A manifest whose ``manifest_version`` is not ``MANIFEST_VERSION`` means a site built by
another version of the pipeline: ``SiteError`` naming the manifest and both versions.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import orjson

from pipeline.chunking.manifest import MANIFEST_VERSION, join_pages
from pipeline.client import NotFound, Site, SiteError
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.siteformat.records import Document, TopicIndex

MANIFEST_NAMES = ("{key}.manifest.json", "{key}.json")  # newest naming first


@dataclass(frozen=True)
class ExportChunk:
    """One chunk with everything the exports store."""

    chunk_id: str
    document_id: str
    source: str  # the document's path relative to the site root
    topic: str
    chunk_index: int
    total_chunks: int
    header_path: str
    heading: str
    title: str
    start_line: int
    end_line: int
    start_offset: int
    end_offset: int
    token_count: int
    is_code: bool
    keywords: tuple[tuple[str, int | float], ...]
    promotion_level: str
    href: str  # the chunk file, relative to the site root
    content: str
    embedding: np.ndarray | None  # float32, unit length; None when the topic publishes no vectors


@dataclass(frozen=True)
class ExportDocument:
    """One document with its chunks."""

    document_id: str
    source: str
    topic: str
    title: str
    strategy: str
    promotion_level: str
    front_matter: dict
    chunks: tuple[ExportChunk, ...]

    @property
    def is_chunked(self) -> bool:
        """True when the document was split (more than one chunk; seed 000's ``is_chunked``)."""
        return len(self.chunks) > 1


@dataclass(frozen=True)
class SiteExport:
    """What an export writes: the site's title and model, and its documents in site order."""

    title: str
    model: str | None
    dimension: int | None
    location: str
    documents: tuple[ExportDocument, ...]


def read_manifest(site: Site, document: Document, index: TopicIndex) -> tuple[str, dict]:
    """(site-relative path of its first page, the whole manifest) of ``document``; SiteError when
    missing, from another pipeline version, or its pages do not fit together."""
    folder = posixpath.dirname(document.items[0].path) if document.items else posixpath.join(posixpath.dirname(index.node.path), "_chunks")
    for pattern in MANIFEST_NAMES:
        rel = posixpath.join(folder, pattern.format(key=document.name))
        try:
            data = site.transport.get(rel)
        except NotFound:
            continue
        try:
            manifest = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise SiteError(f"manifest is not valid JSON ({exc})", site.transport.locate(rel)) from None
        if not isinstance(manifest, dict) or manifest.get("source") != posixpath.basename(document.source):
            continue  # another document's manifest under the other naming scheme
        check_version(manifest, site.transport.locate(rel))
        return rel, _whole(site, rel, manifest)
    raise SiteError(f"no manifest for document {document.name!r} (looked for {', '.join(MANIFEST_NAMES)})", site.transport.locate(folder))


def _whole(site: Site, rel: str, first: dict) -> dict:
    """The manifest whose first page (``first``) is at ``rel``, with its later pages read by
    following each page's ``_links.next`` (as many as the first page's ``pages`` says)."""
    pages, at = [first], rel
    count = first.get("pages")
    while isinstance(count, int) and len(pages) < count:
        link = pages[-1].get("_links", {}).get("next") if isinstance(pages[-1].get("_links"), dict) else None
        href = link.get("href") if isinstance(link, dict) else None
        if not isinstance(href, str):
            raise SiteError(f"manifest page {len(pages)} of {count} has no _links.next", site.transport.locate(at))
        at = site.resolve(href, at)
        try:
            page = orjson.loads(site.transport.get(at))
        except orjson.JSONDecodeError as exc:
            raise SiteError(f"manifest page is not valid JSON ({exc})", site.transport.locate(at)) from None
        if not isinstance(page, dict):
            raise SiteError("manifest page is not a JSON object", site.transport.locate(at))
        pages.append(page)
    try:
        return join_pages(pages)
    except ValueError as exc:
        raise SiteError(f"the manifest's pages do not fit together ({exc}); the site is half rebuilt", site.transport.locate(rel)) from None


def check_version(manifest: dict, where: str) -> None:
    """SiteError unless ``manifest`` is of the version this pipeline writes and reads."""
    version = manifest.get("manifest_version")
    if version != MANIFEST_VERSION:
        age = "an older" if isinstance(version, int) and version < MANIFEST_VERSION else "another"
        raise SiteError(
            f"built by {age} version of the pipeline (manifest_version {version!r}, "
            f"pipeline {manifest.get('pipeline_version')!r}; this one reads {MANIFEST_VERSION}): rebuild the site with `pipeline build`",
            where,
        )


def check_site(site: Site) -> None:
    """Check the first manifest of the site (a few requests: the first topic's first document):
    SiteError when the site was built by another version. A site without documents passes."""
    for node in site.topics():
        entries = site.listing(node, most=1)
        if entries:
            document = site.document(node, entries[0].name)
            read_manifest(site, document, TopicIndex(node, (document,), None))
            return


def read_site(site: Site) -> SiteExport:
    """Every document and chunk of ``site`` (see the module docstring)."""
    documents: list[ExportDocument] = []
    dimension: int | None = None
    model = site.model
    for node in site.topics():
        index = site.topic(node)
        table = site.embeddings(index)
        if table is not None:
            model = model or table.model
            dimension = dimension or table.dimension
        for document in index.documents:
            documents.append(_document(site, index, document, table))
    return SiteExport(site.title, model, dimension, site.url, tuple(documents))


def _document(site: Site, index: TopicIndex, document: Document, table) -> ExportDocument:
    rel, manifest = read_manifest(site, document, index)
    try:
        return _records(site, index, document, table, rel, manifest)
    except (KeyError, TypeError, AttributeError) as exc:
        raise SiteError(f"manifest lacks a field exports need ({exc!r})", site.transport.locate(rel)) from None


def _records(site: Site, index: TopicIndex, document: Document, table, rel: str, manifest: dict) -> ExportDocument:
    records = manifest.get("chunks")
    if not isinstance(records, list) or len(records) != len(document.items):
        raise SiteError(
            f"manifest lists {len(records) if isinstance(records, list) else 'no'} chunks but index.json lists "
            f"{len(document.items)}; the site is half rebuilt",
            site.transport.locate(rel),
        )
    texts = site.read_all(list(document.items))
    level = manifest.get("promotion_level", DEFAULT_LEVEL)
    chunks = []
    for ref, chunk, record in zip(document.items, texts, records):
        row = table.row_of(document.name, ref.index) if table is not None else None
        chunks.append(
            ExportChunk(
                chunk_id=record["chunk_id"],
                document_id=record["document_id"],
                source=document.source,
                topic=index.node.id,
                chunk_index=ref.index,
                total_chunks=len(document.items),
                header_path=record["header_path"],
                heading=record.get("heading") or "",
                title=record.get("title") or ref.title,
                start_line=record["start_line"],
                end_line=record["end_line"],
                start_offset=record["start_offset"],
                end_offset=record["end_offset"],
                token_count=record["token_count"],
                is_code=bool(record["is_code"]),
                keywords=tuple((k.name, k.score) for k in ref.keywords),
                promotion_level=record.get("promotion_level", level),
                href=ref.path,
                content=chunk.text,
                embedding=None if row is None else np.asarray(table.vectors[row], dtype=np.float32),
            )
        )
    first = records[0].get("metadata", {}) if records else {}
    front_matter = first.get("front_matter", {}) if isinstance(first, dict) else {}
    return ExportDocument(
        document_id=manifest["document_id"],
        source=document.source,
        topic=index.node.id,
        title=manifest.get("title") or document.title,
        strategy=manifest.get("strategy_key") or manifest.get("strategy") or "",
        promotion_level=level,
        front_matter=front_matter if isinstance(front_matter, dict) else {},
        chunks=tuple(chunks),
    )


def iter_chunks(export: SiteExport) -> Iterator[ExportChunk]:
    for document in export.documents:
        yield from document.chunks
