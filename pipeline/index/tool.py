"""IndexTool: ``topic-spec.md`` data -> every node directory's index files (``index.json``, the
rest of its listing and its documents' resources in ``_index/``: ``names.py``), plus the JSON
Schemas of those files in ``_schema/`` at the site root (``publish_schemas``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

from pipeline.config import SiteConfig
from pipeline.fsutil import require_dir, write_bytes_atomic
from pipeline.index import hal, pages
from pipeline.siteformat.indexnames import (
    INDEX_DIR, INDEX_VERSION, LINK_BYTES, LISTING_ENTRIES, ORDER_BYTES, PAGE_BYTES, SAMPLE_ITEMS,
)
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, Digest, output_hash
from pipeline.siteformat.schemas import SCHEMA_DIR, SCHEMA_FILES, schema_texts
from pipeline.siteformat.records import item_prompt_hashes
from pipeline.siteformat.tree import INDEX_FILE, document_key, TOPIC_SPEC_FILE, humanize, site_dirs
from pipeline.siteformat.vectors import is_page_file
from pipeline.sources.documents import node_dirs
from pipeline.topicspec.specfile import read_topic_spec

# what every file of the index depends on besides a directory's inputs
_FORMAT = [INDEX_VERSION, PAGE_BYTES, LISTING_ENTRIES, ORDER_BYTES, LINK_BYTES, SAMPLE_ITEMS]


@dataclass
class IndexReport:
    directories: int = 0
    written: int = 0
    prompts: dict[str, tuple[list, list[list[str]]]] = field(default_factory=dict)
    """``run_index``'s ``prompts_of``: what the search index reads back of those topics
    (``written_prompts``), by index.json path."""


class _Specs:
    """Each directory's ``topic-spec.md``: hashed once, its data block parsed on demand and kept
    only until ``done`` (a site's parsed pages together: ~1 GB at 100,000 documents)."""

    def __init__(self, site: Path, dirs: list[str]):
        self.site = site
        self.hashes: dict[str, str | None] = {}
        for d in dirs:
            try:
                self.hashes[d] = output_hash((site / d / TOPIC_SPEC_FILE).read_bytes())
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                self.hashes[d] = None
        self._parsed: dict[str, dict | None] = {}

    def get(self, dir_rel: str) -> dict | None:
        if dir_rel not in self._parsed:
            has = self.hashes.get(dir_rel) is not None
            self._parsed[dir_rel] = read_topic_spec(self.site / dir_rel / TOPIC_SPEC_FILE) if has else None
        return self._parsed[dir_rel]

    def done(self, dir_rel: str) -> None:
        """The directory's index is written: its parsed page is not needed any more (its parent
        needs only the document count)."""
        self._parsed.pop(dir_rel, None)

    def hash(self, dir_rel: str) -> str | None:
        return self.hashes.get(dir_rel)


def directory_files(*, base_url: str, dir_rel: str, title: str, children: list[dict], spec: dict | None) -> dict[str, bytes]:
    """Every index file of one directory, by path relative to it: its listing (``index.json``
    first, then ``_index/page-<p>.json``) and each document's resource (``_index/<key>.doc*.json``).
    ``children``: ``{"id", "title", "documents"}`` per sub-directory (a node)."""
    specs = spec["documents"] if spec else []
    matching = spec.get("prompt_matching") if spec else None
    if not any(item.get("prompt_hashes") for s in specs for item in s["items"]):
        matching = None
    fields, links = hal.directory_fields(
        base_url=base_url, dir_rel=dir_rel, title=title, topics=len(children), documents=len(specs),
        model=spec["model"] if spec else None, prompt_matching=matching,
    )
    entries, resources_ = [], {}
    for s in specs:
        orders = hal.orders(s)
        entries.append(hal.document_entry(s, orders[0], base_url, dir_rel))
        resources_.update(pages.document_files(s, base_url, dir_rel, orders))
    listing = pages.listing_files(
        base_url=base_url, dir_rel=dir_rel, fields=fields, links=links,
        topics=[hal.topic_ref(child, base_url) for child in children], documents=entries,
    )
    return {**listing, **resources_}


def written_prompts(specs: list[dict]) -> tuple[list, list[list[str]]]:
    """What a reader of a topic's document resources written from ``specs`` (its document
    specs) gets of them for the search index (``search.topicpart.complete_part``): its documents
    ``[[name, chunks]]`` in listing order, and each chunk's prompt hashes (16 hex digits, as
    ``ChunkRef.prompt_hashes`` read back and formatted) in document then chunk order."""
    documents, hashes = [], []
    for s in specs:
        items = sorted(s["items"], key=lambda item: item["index"])
        documents.append([document_key(s["source"]), len(items)])
        hashes += [[f"{h:016x}" for h in item_prompt_hashes(item)] for item in items]
    return documents, hashes


def run_index(site: Path, config: SiteConfig, *, state: BuildState | None = None,
              prompts_of: Collection[str] = ()) -> IndexReport:
    """Write every node directory's index files (``directory_files``) and publish the schemas.

    With ``state`` (a build), a directory whose inputs (its ``topic-spec.md``, its folders'
    document counts, the site's title and base URL) are unchanged since the previous build keeps
    its files unread when their stamps (else their hashes) are those recorded; a directory that
    changed rewrites only the files whose bytes changed (a one-document edit: that document's
    resource and the listing page naming it), and removes the files it no longer has.

    ``prompts_of`` (a build: the index.json paths of the topics the search index drafted):
    each such directory written now gets its ``written_prompts`` in ``report.prompts``, so the
    search index need not read its document resources back (~300 bytes a chunk, at most
    ``topicpart.DRAFT_CHUNKS`` chunks). A directory whose files are kept gets none."""
    report = IndexReport()
    dirs = node_dirs(require_dir(site, "site"))
    nodes = set(dirs)
    for dir_rel in site_dirs(site):  # a folder without documents below it is no node (any more)
        if dir_rel not in nodes:
            if (site / dir_rel / INDEX_FILE).is_file():
                (site / dir_rel / INDEX_FILE).unlink()
            _remove_stale(site / dir_rel / INDEX_DIR, set())
    specs = _Specs(site, dirs)
    counts: dict[str, int] = {}  # each directory's documents, for its parent's listing
    base_url = config.normalized_base_url
    kids_of = _node_children(dirs)
    # children before their parent (``node_dirs`` sorts a parent first): a parent then needs
    # only their document counts, and one parsed page at a time is held
    for dir_rel in reversed(dirs):
        kids = kids_of.get(dir_rel, [])
        children = [{"id": k, "title": humanize(k), "documents": counts[k]} for k in kids]
        title = humanize(dir_rel) or config.title
        digest = Digest(_FORMAT, base_url, title, dir_rel, specs.hash(dir_rel), children).hex()
        report.directories += 1
        folder = site / dir_rel
        entry = state.reuse("index", dir_rel, digest, lambda e: _intact(folder, e)) if state is not None else None
        if entry is not None:
            counts[dir_rel] = entry["documents"]
            specs.done(dir_rel)
            continue
        spec = specs.get(dir_rel)
        files = directory_files(base_url=base_url, dir_rel=dir_rel, title=title, children=children, spec=spec)
        counts[dir_rel] = len(spec["documents"]) if spec else 0
        index_path = f"{dir_rel}/{INDEX_FILE}" if dir_rel else INDEX_FILE
        if spec and index_path in prompts_of:
            report.prompts[index_path] = written_prompts(spec["documents"])
        specs.done(dir_rel)
        del spec
        previous = state.previous("index", dir_rel) if state is not None else None
        written, recorded = _write(site / dir_rel, files, previous if _well_formed(previous) else None)
        report.written += written
        if state is not None:
            names = list(files)
            listing = [output_hash(files[n]) for n in names if n == INDEX_FILE or n.startswith(f"{INDEX_DIR}/page-")]
            state.put("index", dir_rel, digest, output=Digest(listing).hex(), documents=counts[dir_rel], names=names,
                      hashes=[output_hash(files[n]) for n in names], files=recorded)
    report.written += publish_schemas(site)
    return report


def _node_children(dirs: list[str]) -> dict[str, list[str]]:
    """Each node's child nodes, sorted: ``child_dirs(site, d)`` that are nodes, told from the
    nodes' paths alone (a node is a site directory: a folder, not hidden, no link, a usable
    name, ``site_dirs``), so no node folder is listed again (a stat per entry: ~0.05 s at
    10,000 documents)."""
    kids: dict[str, list[str]] = {}
    for d in dirs:
        if d:
            kids.setdefault(d.rpartition("/")[0], []).append(d)
    return {parent: sorted(names) for parent, names in kids.items()}


def _well_formed(entry: object) -> bool:
    """True when a state entry of this stage has the fields it records, of the right shapes."""
    return (
        isinstance(entry, dict) and isinstance(entry.get("documents"), int) and isinstance(entry.get("names"), list)
        and isinstance(entry.get("hashes"), list) and len(entry["names"]) == len(entry["hashes"])
        and all(isinstance(n, str) and not n.startswith("/") and ".." not in n.split("/") for n in entry["names"])
    )


def _intact(folder: Path, entry: dict) -> dict | None:
    """``{"files": stamps to record}`` when the entry is well formed and each file it names still
    holds what was recorded (its stamp matches, else its bytes hash to it), else None."""
    if not _well_formed(entry):
        return None
    prefix = os.path.join(folder, "")  # ``prefix + name`` is ``os.path.join(folder, name)`` for a relative name
    paths = [prefix + name for name in entry["names"]]
    fresh = stamps.verify_all(paths, entry["hashes"], entry.get("files"))
    return None if fresh is None else {"files": fresh}


def _write(folder: Path, files: dict[str, bytes], previous: dict | None) -> tuple[int, list]:
    """Write ``files`` into ``folder`` and remove the other files of its ``_index/``; returns
    (files written, a stamp or None per file). A file recorded by ``previous`` with the same
    hash and an unchanged stamp is neither read nor written."""
    known: dict[str, tuple[str, object]] = {}
    if previous is not None:
        stamped = previous.get("files") if isinstance(previous.get("files"), list) else []
        for i, (name, h) in enumerate(zip(previous["names"], previous["hashes"])):
            known[name] = (h, stamped[i] if i < len(stamped) else None)
    written = 0
    recorded: list = []
    if any(name.startswith(f"{INDEX_DIR}/") for name in files):
        (folder / INDEX_DIR).mkdir(exist_ok=True)
    for name, data in files.items():
        path = folder / name
        st = stamps.stat(path)
        old = known.get(name)
        if old is not None and old[0] == output_hash(data) and stamps.matches(st, old[1]):
            recorded.append(old[1])
            continue
        changed, stamp = stamps.write(path, data, st)
        written += changed
        recorded.append(stamp)
    _remove_stale(folder / INDEX_DIR, {name.split("/", 1)[1] for name in files if name.startswith(f"{INDEX_DIR}/")})
    return written, recorded


def _remove_stale(folder: Path, keep: set[str]) -> None:
    """Remove the files of ``folder`` (an ``_index/``) not named in ``keep`` but publish's vector
    pages (``_index/embeddings-<p>.bin``), and the folder once empty."""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:  # publish's vector pages are its own (site/vectorpages.py removes them)
        if name not in keep and not is_page_file(name) and (folder / name).is_file():
            (folder / name).unlink()
    if not keep and not os.listdir(folder):
        folder.rmdir()


def publish_schemas(site: Path) -> int:
    """Copy the schemas to ``site/_schema/`` (unchanged files untouched, others removed).
    Returns how many files were written."""
    shipped = schema_texts()
    assert set(SCHEMA_FILES.values()) <= shipped.keys(), "pipeline/schemas/ lacks a schema the index links to"
    folder = site / SCHEMA_DIR
    written = sum(write_bytes_atomic(folder / name, data) for name, data in shipped.items())
    for path in sorted(folder.iterdir()):
        if path.name not in shipped and path.is_file():
            path.unlink()
    return written
