"""A topic's vectors as pages (``siteformat/vectors.py``): ``_embeddings.bin``, then
``_index/embeddings-<p>.bin``, 32 documents a page, written by publish.

Guarantees: the pages on disk are ``vectors.encode_pages`` of the topic's vectors, and no other
``_index/embeddings-*.bin`` is left; a page whose bytes are unchanged is not written (its ETag
stays), so an edit to one document rewrites one page. With a build state (section
``embeddings``): a topic whose spec inputs are unchanged (the ``topics`` digest) keeps its pages
unread when their stamps (else their hashes) are those recorded; otherwise each page whose
inputs (documents, their rows, its place) are unchanged and whose file still holds what was
written is neither encoded nor written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import xxhash

from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, Digest
from pipeline.siteformat import vectors
from pipeline.siteformat.indexnames import INDEX_DIR

TopicVectors = tuple[str, list[tuple[str, np.ndarray]]]
SECTION = "embeddings"


@dataclass
class TopicPages:
    """What publishing one topic's pages did: files written, the pages' bytes, files removed."""

    pages: int = 0
    written: int = 0
    size: int = 0
    removed: list[str] = field(default_factory=list)


def publish_topic_vectors(
    site: Path, dir_rel: str, vectors_of: Callable[[str], TopicVectors | None], *, dtype: str,
    state: BuildState | None = None,
) -> TopicPages:
    """Write the pages of ``dir_rel``'s vectors (``vectors_of(dir_rel)``: (model, [(document
    key, rows)]) or None when it has no documents, then every page is removed)."""
    folder = site / dir_rel
    out = TopicPages()
    spec_digest = state.recorded("topics", dir_rel) if state is not None else None
    digest = Digest(vectors.VERSION, dtype, spec_digest).hex() if spec_digest else None
    entry = state.reuse(SECTION, dir_rel, digest, lambda e: _topic_intact(folder, dir_rel, e, state)) if digest else None
    if entry is not None:
        out.pages, out.size = len(entry["names"]), int(entry.get("size", 0))
        out.removed = _remove_pages(site, dir_rel, out.pages)
        return out
    found = vectors_of(dir_rel)
    if found is None:
        out.removed = _remove_pages(site, dir_rel, 0)
        return out
    model, documents = found
    count = vectors.page_count(len(documents))
    names, hashes, recorded = [], [], []
    for number in range(1, count + 1):
        name = vectors.page_name(number)
        chunk = documents[(number - 1) * vectors.PAGE_DOCUMENTS : number * vectors.PAGE_DOCUMENTS]
        following = vectors.page_name(number + 1) if number < count else None
        path = folder / name
        key = _page_key(dir_rel, name)
        page_digest = _page_digest(dtype, model, number, following, chunk) if state is not None else None
        kept = _keep_page(path, key, page_digest, state) if state is not None else None
        if kept is not None:
            names.append(name), hashes.append(kept["output"]), recorded.append(kept["files"][0])
            out.size += int(kept.get("size", 0))
            continue
        data = vectors.encode(model, chunk, dtype=dtype, page=number, next=following)
        if number > 1:
            (folder / INDEX_DIR).mkdir(exist_ok=True)
        changed, stamp = stamps.write(path, data)
        out.written += changed
        out.size += len(data)
        if state is not None:
            state.put(SECTION, key, page_digest, data=data, size=len(data), files=[stamp])
            hashes.append(state.recorded(SECTION, key, "output"))
        names.append(name), recorded.append(stamp)
    out.pages = count
    out.removed = _remove_pages(site, dir_rel, count)
    if digest:
        state.put(SECTION, dir_rel, digest, names=names, hashes=hashes, size=out.size, files=recorded)
    return out


def _page_key(dir_rel: str, name: str) -> str:
    """A page's state key: its path below the site (no topic directory starts with ``_``, so it
    is no topic's key)."""
    return f"{dir_rel}/{name}" if dir_rel else name


def _page_digest(dtype: str, model: str, number: int, following: str | None, documents: list) -> str:
    """The inputs of one page: its place, its documents and the exact float32 rows."""
    rows = xxhash.xxh64()
    for _, matrix in documents:
        rows.update(np.ascontiguousarray(matrix, dtype="<f4").tobytes())
    return Digest(vectors.VERSION, dtype, model, number, following, [[n, len(m)] for n, m in documents], rows.hexdigest()).hex()


def _keep_page(path: Path, key: str, digest: str, state: BuildState) -> dict | None:
    """The previous entry of a page with the same inputs whose file still holds what was written
    (kept into this build with a fresh stamp), else None."""
    return state.reuse(SECTION, key, digest, lambda entry: _files_intact([path], [entry.get("output")], entry))


def _topic_intact(folder: Path, dir_rel: str, entry: dict, state: BuildState) -> dict | None:
    """``{"files": fresh stamps}`` when every page the topic's entry names is the page recorded
    and still holds what was written: the pages' entries are then kept into this build (the
    caller keeps the topic's), and nothing is read; else None."""
    names, hashes = entry.get("names"), entry.get("hashes")
    if not (isinstance(names, list) and isinstance(hashes, list) and len(names) == len(hashes) and names
            and names == [vectors.page_name(n) for n in range(1, len(names) + 1)]):
        return None
    pages = [state.previous(SECTION, _page_key(dir_rel, name)) for name in names]
    if any(page is None or page.get("output") != expected for page, expected in zip(pages, hashes)):
        return None
    fresh = _files_intact([folder / name for name in names], hashes, entry)
    if fresh is None:
        return None
    for name, page, stamp in zip(names, pages, fresh["files"]):
        state.keep(SECTION, _page_key(dir_rel, name), page, files=[stamp])
    return fresh


def _files_intact(paths: list[Path], hashes: list, entry: dict) -> dict | None:
    """``{"files": fresh stamps}`` when each file still hashes to what the entry recorded."""
    if not all(isinstance(h, str) for h in hashes):
        return None
    fresh = stamps.verify_all(paths, hashes, entry.get("files"))
    return None if fresh is None else {"files": fresh}


def _remove_pages(site: Path, dir_rel: str, count: int) -> list[str]:
    """Remove the topic's pages after page ``count`` (0: every page); their site paths. An
    ``_index/`` left empty is removed too."""
    folder = site / dir_rel
    removed = []
    if count == 0 and (folder / vectors.FILE_NAME).is_file():
        (folder / vectors.FILE_NAME).unlink()
        removed.append(_page_key(dir_rel, vectors.FILE_NAME))
    index = folder / INDEX_DIR
    try:
        names = sorted(os.listdir(index))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    keep = {vectors.page_name(n) for n in range(2, count + 1)}
    for name in names:
        if vectors.is_page_file(name) and f"{INDEX_DIR}/{name}" not in keep and (index / name).is_file():
            (index / name).unlink()
            removed.append(_page_key(dir_rel, f"{INDEX_DIR}/{name}"))
    if removed and not os.listdir(index):
        index.rmdir()
    return removed
