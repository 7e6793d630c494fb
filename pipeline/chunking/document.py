"""Reading and chunking one document: size limit, strict UTF-8, validation, and the directory's
chunking choice (``_chunking.toml`` files from the root down).

Guarantees: bad input (unreadable, over ``max_document_bytes``, not UTF-8, empty, a fence that
swallows the rest of the file, invalid ``_chunking.toml``) raises PipelineError naming the file
(and the line where there is one); nothing is written. ``chunk_document`` is deterministic: the
same bytes, options and tokenizer give the same chunks.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
import warnings
from pathlib import Path

from pipeline.chunking.base import assemble
from pipeline.chunking.manifest import DocumentChunks
from pipeline.chunking.select import merge_chunking, strategy_for
from pipeline.config import SiteConfig
from pipeline.errors import PipelineError
from pipeline.fsutil import LinkRefused, Vanished, decode_utf8, read_below, read_error
from pipeline.parsing.links import chunk_file_text, link_destinations
from pipeline.parsing.markdown import ParsedDocument, parse_markdown
from pipeline.parsing.tokens import TokenCounter
from pipeline.promotion import promotion_level
from pipeline.siteformat.tree import SourceDoc
from pipeline.sources.pages import PageLocation
from pipeline.vault.names import VaultNames
from pipeline.vault.notes import Note, read_note

DIRECTORY_CONFIG = "_chunking.toml"  # a directory's chunking choice: `strategy = "..."` plus options


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
        rel = "/".join([*parts[:depth], DIRECTORY_CONFIG])
        path = root / rel
        try:  # links are never followed (sources/confine.py): read_below refuses one as it reads
            text = decode_utf8(read_below(root, rel), path)
        except (LinkRefused, Vanished):
            continue
        try:
            layer = tomllib.loads(text)
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
    page: PageLocation | None = None,
    vault: VaultNames | None = None,
) -> DocumentChunks:
    """Read, validate and chunk one document; ``chunking`` is its directory's (name, options).
    ``page``: where another generator publishes it (each chunk's ``page_url``); ``vault``: the
    files of the Obsidian vault it is a note of (its wikilinks, tags and aliases: ``vault/notes.py``)."""
    data = read_source(doc, config.max_document_bytes) if data is None else data
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
        max_tokens=getattr(strategy, "max_tokens", None),
    )
    entry_title = chunks[0].metadata.get("parent_title") if chunks and not markdown else None
    files = None
    note = None
    if markdown:  # a chunk file sits one folder below its source: relocate relative links
        if vault is not None:  # one parse: its wikilinks and link destinations
            note, destinations = read_note(document, doc.rel, vault)
            destinations = sorted([*destinations, *note.edits], key=lambda d: d.start)
            _note_metadata(note, chunks, doc.path)
        else:
            destinations = link_destinations(document)
        if destinations:
            files = tuple(
                chunk_file_text(c.content, text, c.start_offset, c.end_offset, destinations, doc.name, _header_span(c))
                for c in chunks
            )
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
        page_urls=page.chunk_urls(document, [c.start_offset for c in chunks]) if page is not None else None,
        note=None if note is None else {"links": list(note.links), "tags": list(note.tags), "aliases": list(note.aliases)},
    )


def _header_span(chunk) -> tuple[int, int] | None:
    """Source offsets of the table header a chunk repeats (``chunking/tables.py``), else None."""
    header = chunk.metadata.get("repeated_header")
    return (header["start_offset"], header["end_offset"]) if header else None
def _note_metadata(note: Note, chunks: list, path: Path) -> None:
    """A note's tags on each chunk's record (search filters read them there); its unresolved
    wikilinks reported, once per note."""
    for chunk in chunks:
        chunk.metadata["tags"] = list(note.tags)
    if note.unresolved:
        shown = ", ".join(note.unresolved[:5]) + (f" and {len(note.unresolved) - 5} more" if len(note.unresolved) > 5 else "")
        warnings.warn(f"{path}: {len(note.unresolved)} wikilink(s) name no file of the vault, kept as text: {shown}",
                      UserWarning, stacklevel=3)


def stat_source(doc: SourceDoc, limit: int | None = None) -> os.stat_result:
    """The document file's ``lstat`` (a link is never followed: its own stamp, which no recorded
    stamp of a file matches); PipelineError naming ``doc.path`` when it cannot be stat'ed or is
    over ``limit`` bytes (told by its size, before reading: every later step grows with a
    document's size)."""
    try:  # a plain string: a Path per document cost more than the stat (a rebuild stats them all)
        st = os.stat(os.path.join(doc.root, doc.rel), follow_symlinks=False)
    except OSError as exc:
        raise read_error(exc, doc.path) from None
    if limit is not None and st.st_size > limit:
        raise PipelineError(
            f"document is {st.st_size:,} bytes, over the limit of {limit:,} (max_document_bytes in the site "
            "config); split it into several documents or raise the limit",
            path=doc.path,
        )
    return st


def read_source(doc: SourceDoc, limit: int | None = None) -> bytes:
    """The document's bytes, read below its root without following a link (``read_below``:
    what was checked is what is read); LinkRefused, Vanished or PipelineError otherwise."""
    return read_below(doc.root, doc.rel, limit=limit)
