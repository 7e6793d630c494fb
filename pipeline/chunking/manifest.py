"""One document's chunking result (``DocumentChunks``) and its manifest ``_chunks/<key>.manifest.json``.

The manifest holds the document's chunk records without ``content`` (the chunk file holds it),
each with ``href`` and ``content_xxh64``; see docs/ARCHITECTURE.md. Guarantees: ``manifest_bytes``
is deterministic (the same plan gives the same bytes; a reused plan gives the bytes it was read
from), and ``ManifestStub.load`` returns the manifest only if its file still has the hash the
build state recorded. No writes here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import orjson

from pipeline import __version__
from pipeline.chunking.base import Chunk, is_technical_title
from pipeline.embedding.cache import content_hash
from pipeline.errors import PipelineError
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.site.state import output_hash
from pipeline.site.tree import CHUNKS_DIR, SourceDoc

MANIFEST_VERSION = 2  # 2: promotion_level (readers refuse other versions: pipeline/export/source.py)
_RECORD_FIELDS = tuple(f.name for f in fields(Chunk) if f.name != "content")


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
    # Each chunk's URL on another generator's page (MkDocs: ``site/pages.py``), None without one.
    page_urls: tuple[str, ...] | None = None
    # A vault note's ``links`` (documents it links to), ``tags`` and ``aliases`` (vault/notes.py).
    note: dict | None = None

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
            if self.page_urls is not None:
                record["page_url"] = self.page_urls[chunk.chunk_index]
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
            **(self.note or {}),
            "chunks": records,
        }

    def manifest_bytes(self) -> bytes:
        if self.stored_manifest is not None:
            return self.stored_manifest
        return orjson.dumps(self.manifest(), option=orjson.OPT_INDENT_2) + b"\n"

    def summary(self) -> list:
        """What the build state keeps of the manifest so that a rebuild need not read it."""
        return [self.source_sha256, self.strategy, self.strategy_key, self.title, self.promotion_level]
