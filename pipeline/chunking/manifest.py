"""One document's chunking result (``DocumentChunks``) and its manifest ``_chunks/<key>.manifest.json``.

The manifest holds the document's chunk records without ``content`` (the chunk file holds it),
each with ``href`` and ``content_xxh64``; see docs/ARCHITECTURE.md. Its files are pages of at most
``PAGE_BYTES`` of compact JSON, cut by the format's pager (``siteformat/paging.py``) as a document
resource is: ``<key>.manifest.json`` (the document's fields, ``pages`` and the first records),
then ``<key>.manifest-<p>.json``, linked by HAL ``first``/``prev``/``next``/``last``, so a reader
never fetches more than a page at a time, whatever the document's size.

Guarantees: ``manifest_files`` is deterministic (the same data, base URL and place give the same
bytes) and ``join_pages`` inverts it (the pages give back the data); ``manifest_digest`` names the
data, not how it is paged; ``ManifestStub.load`` returns the manifest only if its pages still hold
the data the build state recorded. No writes here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

import orjson

from pipeline import __version__
from pipeline.chunking.base import Chunk, is_technical_title
from pipeline.embedding.cache import content_hash
from pipeline.errors import PipelineError
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.reuse import stamps
from pipeline.reuse.state import output_hash
from pipeline.siteformat.indexnames import LINK_BYTES
from pipeline.siteformat.paging import cut_runs, json_cost, paged_files
from pipeline.siteformat.tree import CHUNKS_DIR, SourceDoc, manifest_name

MANIFEST_VERSION = 3
"""2: promotion_level; 3: compact JSON over pages (readers refuse other versions:
pipeline/export/source.py)."""
_RECORD_FIELDS = tuple(f.name for f in fields(Chunk) if f.name != "content")
PAGING_FIELDS = ("page", "pages", "_links")
"""What a page adds to the manifest's data (``join_pages`` drops them)."""
NOTE_RUNS = ("links", "tags", "aliases")
"""A vault note's lists (``vault/notes.py``): on the first page, continued on the next pages past
a page's share (``LINK_BYTES`` // 2 each), as a note's links are on its document resource."""


def manifest_digest(data: dict) -> str:
    """What names a manifest (the build state's ``manifest``, the spec stage's memos): xxh64 of
    its data, every page joined, as JSON with sorted keys, so not of how its pages cut it."""
    return output_hash(orjson.dumps(data, option=orjson.OPT_SORT_KEYS))


def manifest_files(data: dict, base_url: str, dir_rel: str, key: str) -> dict[str, bytes]:
    """The manifest ``data`` (``DocumentChunks.manifest``) of document ``key`` of directory
    ``dir_rel`` as its files, by name in ``_chunks/``, in page order: the first holds the
    document's fields and ``pages``; every page its ``page``, ``_links`` (absolute under
    ``base_url``), ``source``, ``manifest_version`` and a run of ``chunks``."""
    head = {k: v for k, v in data.items() if k != "chunks" and k not in NOTE_RUNS}
    raw = [orjson.dumps(record) for record in data["chunks"]]
    encoded = [orjson.Fragment(r) for r in raw]
    runs = {name: cut_runs(data[name], LINK_BYTES // 2, json_cost) for name in NOTE_RUNS if name in data}

    def page(number: int, pages: int, paging: dict, entries: slice) -> dict:
        doc = dict(head) if number == 1 else {"manifest_version": data["manifest_version"], "source": data["source"]}
        for name, segments in runs.items():  # on the first page always (maybe empty), later where a run is
            if number <= len(segments) and (number == 1 or segments[number - 1]):
                doc[name] = segments[number - 1]
        doc["page"] = number
        if number == 1:
            doc["pages"] = pages
        doc["_links"] = paging
        doc["chunks"] = encoded[entries]
        return doc

    folder = f"{dir_rel}/{CHUNKS_DIR}" if dir_rel else CHUNKS_DIR
    longest = max((len(segments) for segments in runs.values()), default=1)
    return paged_files(base_url=base_url, dir_rel=folder, name=lambda p: manifest_name(key, p),
                       costs=[len(r) + 1 for r in raw], page=page, least=longest)


def join_pages(pages: list[dict]) -> dict:
    """The manifest's data from its parsed pages, in order (``manifest_files`` inverted): the
    first page's fields, every page's ``chunks`` and note runs in turn. ValueError when the pages
    are not one manifest's, numbered 1, 2, ... up to the first page's ``pages``."""
    first = pages[0] if pages else None
    if not isinstance(first, dict) or first.get("pages") != len(pages) or not isinstance(first.get("chunks"), list):
        raise ValueError("not the pages of one manifest")
    data = {k: v for k, v in first.items() if k not in PAGING_FIELDS}
    for name in ("chunks", *NOTE_RUNS):
        if isinstance(data.get(name), list):
            data[name] = list(data[name])  # extended below: not the first page's own
    for number, page in enumerate(pages[1:], 2):
        if not isinstance(page, dict) or page.get("page") != number or page.get("source") != first.get("source"):
            raise ValueError(f"page {number} is not page {number} of the manifest of {first.get('source')!r}")
        for name in ("chunks", *NOTE_RUNS):
            if name in page or name == "chunks":
                if not isinstance(page.get(name), list) or not isinstance(data.get(name), list):
                    raise ValueError(f"page {number} of the manifest of {first.get('source')!r}: {name} is not a continued list")
                data[name].extend(page[name])
    return data


def read_pages(folder: str, key: str, seen: list | None = None) -> tuple[list[bytes], list[dict]]:
    """(the bytes, the parsed JSON) of each page of document ``key``'s manifest in ``folder`` (a
    ``_chunks/``), as many as its first page says; each page's ``stat`` taken before its read is
    appended to ``seen`` when given (``reuse/stamps.py``). OSError or ValueError otherwise."""
    raws: list[bytes] = []
    parsed: list[dict] = []
    count = 1
    while len(raws) < count:
        path = os.path.join(folder, manifest_name(key, len(raws) + 1))
        if seen is not None:
            seen.append(stamps.stat(path))
        with open(path, "rb") as handle:
            raws.append(handle.read())
        parsed.append(orjson.loads(raws[-1]))
        if len(raws) == 1:
            count = parsed[0].get("pages") if isinstance(parsed[0], dict) else None
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ValueError("the manifest's first page gives no page count")
    return raws, parsed


def read_manifest(folder: str, key: str, seen: list | None = None) -> tuple[list[bytes], dict]:
    """(each page's bytes, the manifest's data) of document ``key``'s manifest in ``folder``
    (``read_pages``, ``join_pages``)."""
    raws, parsed = read_pages(folder, key, seen)
    return raws, join_pages(parsed)


@dataclass(frozen=True)
class ManifestStub:
    """A reused document's manifest that the build did not read (its stamp is the one the build
    state recorded, ``reuse/stamps.py``): what a rebuild needs of it, from the state; the rest is
    read by ``load`` when a later stage needs it."""

    path: str  # its first page
    digest: str  # ``manifest_digest`` of its data (the state's ``manifest``)
    source: str
    source_sha256: str
    strategy_key: str
    hashes: tuple[str, ...]  # each chunk's ``content_xxh64``, in order
    key: str = ""  # the document's key (its pages' names: ``manifest_name``)

    def load(self) -> dict:
        folder = os.path.dirname(self.path)
        try:
            _, data = read_manifest(folder, self.key)
        except OSError as exc:
            raise PipelineError(f"chunk manifest unreadable during the build ({exc.strerror}); build again", path=self.path) from None
        except ValueError:
            data = None
        if data is None or manifest_digest(data) != self.digest:
            raise PipelineError("chunk manifest changed during the build; build again", path=self.path)
        return data


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
    stored_pages: int = field(default=0, compare=False, repr=False)  # a reused plan's manifest files
    stored_data: dict | None = field(default=None, compare=False, repr=False)  # ... and their data, when read
    warnings: tuple[str, ...] = ()  # what chunking warned about (shown again when the plan is reused)
    promotion_level: str = DEFAULT_LEVEL  # from front matter; every chunk record carries it (pipeline/promotion.py)
    # Each chunk FILE's text when it differs from the record's content: relative link
    # destinations relocated for ``_chunks/`` (parsing/links.py). None: the files are the contents.
    files: tuple[str, ...] | None = field(default=None, compare=False, repr=False)
    # For the build state (reuse/stamps.py): the source's stamp, taken before it was read (None:
    # not recordable) and xxh64 of its bytes; a reused plan's stamps of its manifest pages, then of each
    # chunk file (None where a file is too recent to stamp). A plan written now has none.
    source_stamp: list | None = field(default=None, compare=False, repr=False)
    source_xxh64: str = field(default="", compare=False, repr=False)
    file_stamps: list | None = field(default=None, compare=False, repr=False)
    manifest_stamp: list | None = field(default=None, compare=False, repr=False)
    manifest_xxh64: str = field(default="", compare=False, repr=False)  # a reused plan's ``manifest_digest``
    stub: ManifestStub | None = field(default=None, compare=False, repr=False)  # a reused plan's unread manifest
    # Each chunk's URL on another generator's page (MkDocs: ``sources/pages.py``), None without one.
    page_urls: tuple[str, ...] | None = None
    # A vault note's ``links`` (documents it links to), ``tags`` and ``aliases`` (vault/notes.py).
    note: dict | None = None
    base_url: str = field(default="/", compare=False, repr=False)  # the site's (the manifest's ``_links``)

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

    def manifest_names(self) -> list[str]:
        """The names of the manifest's files in ``_chunks/`` (``manifest_files``)."""
        if self.reused:
            return [manifest_name(self.doc.key, p) for p in range(1, self.stored_pages + 1)]
        return list(manifest_files(self.manifest(), self.base_url, self.doc.dir_rel, self.doc.key))

    def summary(self) -> list:
        """What the build state keeps of the manifest so that a rebuild need not read it."""
        return [self.source_sha256, self.strategy, self.strategy_key, self.title, self.promotion_level]
