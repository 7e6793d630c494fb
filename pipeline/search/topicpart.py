"""One topic's share of the search index: its documents, its chunks' term counts per field (a
``PostingTable`` part numbered from 0), its chunk records with their front matter, its prompt
hashes and its chunks' words (for the static encoder's word rows), read from its index files, manifests and chunk files.

Job: everything the index needs from one topic, as plain values ``reuse/memo.py`` can store, so a
rebuild reads only the topics whose inputs changed (``pipeline.search.index`` then numbers and
scores them site-wide).

Guarantees: a share depends only on the topic's index files (``index.json``, ``_index/``), its
manifests and chunk texts (what ``pipeline.search.index``'s per-folder digest names);
``complete_part(draft_part(...), reader, node)`` is ``topic_part`` of the built topic, or None; ``is_part`` checks a memo
entry's shape, never trusting it. With a memo, a topic of ``BIG_TOPIC_CHUNKS`` chunks or more
also keeps each document's term counts and record metadata (``DOCUMENTS_MEMO``, keyed by the
document's manifest bytes, title and chunk headings), so an edit in one big folder reads and
tokenises the edited documents only; the share is the same either way.
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from pathlib import Path
from typing import Iterable

import orjson
import xxhash

from pipeline.chunking.manifest import read_manifest, read_pages
from pipeline.errors import PipelineError
from pipeline.index.pages import document_files
from pipeline.reuse import memo as site_memo
from pipeline.search.bodies import BodyTerms
from pipeline.search.scoring import PostingTable
from pipeline.siteformat.searchlayout import WHOLE_WORD
from pipeline.siteformat.searchtext import chunk_fields, terms
from pipeline.siteformat.indexfiles import DocumentPages
from pipeline.siteformat.readerrors import SiteError
from pipeline.siteformat.records import Node, TopicIndex
from pipeline.siteformat.tree import INDEX_FILE, document_key

# reuse/memo.py: each big topic's documents' term counts (a ``PostingTable`` part) and record
# metadata, by document key (``_document_key``)
DOCUMENTS_MEMO = "search-documents"


def record_metadata(metadata: dict) -> dict:
    """What ``chunk_record`` reads of a chunk's front matter: its ``type`` (a string or None) and
    its ``tags`` (sorted strings); ``record_metadata`` of its own result is that result."""
    kind, tags = metadata.get("type"), metadata.get("tags")
    return {"type": kind if isinstance(kind, str) else None,
            "tags": sorted(str(t) for t in tags) if isinstance(tags, list) else []}


def chunk_record(ref, document, metadata: dict) -> dict:
    """What a reader needs to show, filter and re-create a chunk's ``ChunkRef`` (no text)."""
    kept = record_metadata(metadata)
    return {
        "topic": ref.topic,
        "document": ref.document,
        "document_title": document.title,
        "source": ref.source,
        "index": ref.index,
        "path": ref.path,
        "title": ref.title,
        "header_path": ref.header_path,
        "start_line": ref.start_line,
        "end_line": ref.end_line,
        "is_code": ref.is_code,
        "keywords": [[k.name, k.score] for k in ref.keywords],
        "prompt_hashes": [f"{h:016x}" for h in ref.prompt_hashes],
        "promotion_level": ref.promotion_level,
        "type": kept["type"],
        "tags": kept["tags"],
        **({"page_url": ref.page_url} if ref.page_url else {}),  # MkDocs: its page and anchor (sources/pages.py)
    }


def _manifest_of(site: Path, ref, last: dict | None) -> dict:
    """The manifest of ``ref``'s document (its pages joined). ``last`` (a dict the caller keeps)
    holds the last manifest read: a document's chunks come one after another, so each manifest is
    read once. Raises OSError or ValueError when it cannot be read."""
    # the manifest's folder and document name: its pages are read only when they change
    key = (posixpath.dirname(ref.path), ref.document)
    if last is not None and last.get("key") == key:
        return last["data"]
    data = read_manifest(os.path.join(site, key[0]), ref.document)[1]
    if last is not None:
        last.update(key=key, data=data)
    return data


def note_aliases(site: Path, ref, last: dict | None = None) -> tuple[str, ...]:
    """The front-matter ``aliases`` of the vault note ``ref`` lies in (its manifest's), or ()."""
    try:
        aliases = _manifest_of(site, ref, last).get("aliases")
    except (OSError, ValueError, AttributeError):
        return ()
    return tuple(a for a in aliases if isinstance(a, str)) if isinstance(aliases, list) else ()


def front_matter(site: Path, ref, last: dict | None = None) -> dict:
    """The chunk's front matter from its manifest (``metadata.front_matter``; for an entry file
    its ``entry_type`` as ``type``), or {}. ``last``: as for ``_manifest_of``."""
    try:
        meta = _manifest_of(site, ref, last)["chunks"][ref.index].get("metadata") or {}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return {}
    if not isinstance(meta, dict):
        return {}
    front = meta.get("front_matter") if isinstance(meta.get("front_matter"), dict) else {}
    # knowledge-base entries carry their type as ``entry_type`` (and may carry ``tags``) in metadata
    base = {"type": meta.get("entry_type"), "tags": meta.get("tags")}
    out = {**{k: v for k, v in base.items() if v is not None}, **front}
    if isinstance(meta.get("tags"), list):  # a vault note's: front matter and inline #tags together
        out["tags"] = meta["tags"]
    return out


def topic_part(site: Path, reader, node, bodies: BodyTerms | None = None, memo=None) -> tuple:
    """One topic's share of the index, from its ``index.json``, manifests and chunk files, as
    plain values (``reuse/memo.py`` stores them): (its documents ``[[name, chunks]]``, its chunks'
    term counts as a ``PostingTable.to_part`` numbered from 0, its chunk records, its prompts
    ``[[hash, chunk number from 0]]``, whether its prompt hashes use our SimHash, its radius,
    its chunks' words sorted: ``text_words``).
    ``bodies``: chunk texts whose term counts are known already (the same counts). ``memo``
    (a build's): a big topic's documents' parts (module docstring)."""
    try:
        index = reader.topic(node)
        ours, radius = matching_of(reader.index_document(node))
    except SiteError as exc:
        raise PipelineError(f"cannot read the built site for the search index: {exc}", path=site) from None
    return _part(site, index, ours, radius, bodies, _documents_memo(memo, node.path, index.documents))


def keep_documents(memo, path: str, documents: list) -> None:
    """Keep the per-document entry of the topic at ``path`` (its index.json) past the memo's
    prune when its share was taken whole (``documents``: the share's ``[[name, chunks]]``)."""
    if memo is not None and site_memo.is_big(sum(chunks for _, chunks in documents)):
        memo.keep(DOCUMENTS_MEMO, memo.key(DOCUMENTS_MEMO, path))


def _documents_memo(memo, path: str, documents: list):
    """The per-document memo of a big topic (``site_memo.DocumentMemo``), or None."""
    if memo is None or not site_memo.is_big(sum(len(d.items) for d in documents)):
        return None
    return site_memo.DocumentMemo(memo, DOCUMENTS_MEMO, memo.key(DOCUMENTS_MEMO, path), _is_document_part)


def draft_part(site: Path, dir_rel: str, specs: list[dict], bodies: BodyTerms | None = None, memo=None) -> tuple:
    """``topic_part`` of the topic ``dir_rel`` before its vectors exist, from its document specs
    (``spec.records.document_spec``) with their vector fields not yet computed: the document
    resources IndexTool makes of them (``index.pages.document_files``, read as every reader reads
    any) differ from the final ones only in fields a part does not read or in their prompt
    hashes, which a question gets by its similarity to the chunks; the draft has none.
    ``complete_part`` adds them from the final resources. A build drafts while it encodes
    (``draft_parts``; the overlap schedule: ``site/build.py``)."""

    path = _index_path(dir_rel)
    documents = []
    for spec in specs:
        pages = DocumentPages(topic=dir_rel, name=document_key(spec["source"]), base=dir_rel)
        for name, data in document_files(spec, "/", dir_rel).items():
            pages.add(orjson.loads(data), name, lambda rel: rel)
        documents.append(pages.document())
    index = TopicIndex(Node(dir_rel, "", len(specs), path, path, None), tuple(documents), None)
    # no item has prompt hashes: no prompts either
    return _part(site, index, True, None, bodies, _documents_memo(memo, path, index.documents))


DRAFT_CHUNKS = 20_000
"""Most chunks ``draft_parts`` drafts: a draft is held from the encode to the search index, ~1 kB
a chunk (records and term counts), so ~20 MB at most; a bigger build makes the other topics'
parts after the last vector, as before."""


def draft_parts(site: Path, specs: Iterable[tuple[str, list[dict]]], bodies: BodyTerms | None = None,
                budget: int = DRAFT_CHUNKS, memo=None) -> dict[str, tuple]:
    """``draft_part`` of each topic of ``specs`` ((directory, its document specs) pairs), by its
    index.json path (as ``Node.path``), in order, while their chunks total at most ``budget``
    (no pair after the first over it is read)."""
    drafts: dict[str, tuple] = {}
    for dir_rel, topic_specs in specs:
        budget -= sum(len(spec["items"]) for spec in topic_specs)
        if budget < 0:
            break
        drafts[_index_path(dir_rel)] = draft_part(site, dir_rel, topic_specs, bodies, memo)
    return drafts


def _index_path(dir_rel: str) -> str:
    """The directory's index.json relative to the site root, as a reader's ``Node.path``."""
    return f"{dir_rel}/{INDEX_FILE}" if dir_rel else INDEX_FILE


def complete_part(draft: tuple, reader, node, written: tuple[list, list[list[str]]] | None = None) -> tuple | None:
    """The ``topic_part`` of the built topic ``node`` (read through ``reader``, a
    ``siteformat.reader.SiteReader``), from its ``draft_part``: the prompt hashes, the matching algorithm and the radius
    taken from the topic's index files. None when they list other documents or chunk counts than
    the draft (make the part afresh then). ``written`` (a build's: ``index.tool.written_prompts``
    of the specs its document resources were written from, what reading them gives): the
    documents and prompt hashes without reading the resources back."""
    documents, table, records, _, _, _, words = draft
    try:
        if written is None:
            index = reader.topic(node)
            written = ([[d.name, len(d.items)] for d in index.documents],
                       [[f"{h:016x}" for h in ref.prompt_hashes] for d in index.documents for ref in d.items])
        ours, radius = matching_of(reader.index_document(node))
    except SiteError:  # malformed: ``topic_part`` reads it afresh and says where
        return None
    if written[0] != documents:
        return None
    prompts: list[list] = []
    for number, (record, hashes) in enumerate(zip(records, written[1])):
        record["prompt_hashes"] = hashes
        if ours:
            prompts.extend([h, number] for h in hashes)
    return documents, table, records, prompts, ours, radius, words


def _part(site: Path, index, ours: bool, radius: int | None, bodies: BodyTerms | None, by_document=None) -> tuple:
    """``topic_part`` of a read ``index`` (a ``TopicIndex``) whose prompt hashes use our SimHash
    (``ours``) with ``radius``; ``by_document``: a big topic's ``DocumentMemo`` of
    ``_document_part``s, or None."""
    table = PostingTable()
    records: list[dict] = []
    prompts: list[list] = []
    last_manifest: dict = {}
    counted: dict[str, Counter] = {}  # each title's and heading's terms, counted once (``add`` only reads them)
    words: set[str] = set()

    def count(text: str) -> Counter:
        if text not in counted:
            counted[text] = Counter(terms(text))
        return counted[text]

    root = os.fspath(site)
    for document in index.documents:
        start = table.chunks
        if by_document is None:
            metadata = _add_document(table, root, document, bodies, count, last_manifest, words)
        else:
            part, metadata, document_words = by_document.value(
                _document_key(root, document),
                lambda document=document: _document_part(root, document, bodies, count, last_manifest),
            )
            table.extend(part)
            words.update(document_words)
        for number, (ref, kept) in enumerate(zip(document.items, metadata), start):
            if ours:
                prompts.extend([f"{h:016x}", number] for h in ref.prompt_hashes)
            records.append(chunk_record(ref, document, kept))
    if by_document is not None:
        by_document.store()
    documents = [[d.name, len(d.items)] for d in index.documents]
    return documents, table.to_part(), records, prompts, ours, radius, sorted(words)


def _add_document(table: PostingTable, root: str, document, bodies: BodyTerms | None, count, last_manifest: dict,
                  words: set[str]) -> list[dict]:
    """Add the term counts of ``document``'s chunks to ``table``, in order, and their words
    (``text_words``) to ``words``; returns each chunk's ``record_metadata``."""
    metadata = []
    aliases = note_aliases(root, document.items[0], last_manifest) if document.items else ()
    for ref in document.items:
        with open(os.path.join(root, ref.path), encoding="utf-8") as file:  # as Path.read_text reads it
            text = file.read()
        body = bodies.counts(text) if bodies is not None else None
        words.update(text_words(text))
        table.add(chunk_fields(document.title, ref.header_path, ref.title, body if body is not None else Counter(terms(text)),
                               count, aliases))
        metadata.append(record_metadata(front_matter(root, ref, last_manifest)))
    return metadata


def _document_part(root: str, document, bodies: BodyTerms | None, count, last_manifest: dict) -> tuple:
    """(the document's chunks as a ``PostingTable.to_part`` numbered from 0, their
    ``record_metadata``, their words sorted): ``_add_document`` kept apart, so a topic's table
    ``extend``-ed with its documents' parts in order is the one ``_add_document`` makes
    (``PostingTable.extend``)."""
    table = PostingTable()
    words: set[str] = set()
    metadata = _add_document(table, root, document, bodies, count, last_manifest, words)
    return table.to_part(), metadata, sorted(words)


def _document_key(root: str, document) -> str | None:
    """A digest of every input of ``_document_part``: the document's manifest (its chunks' text
    hashes and front matter: every page), its title and each chunk's path, heading and title.
    None when the manifest cannot be read (the part is then computed, and not kept)."""
    if not document.items:
        return None
    first = document.items[0]
    try:
        pages = read_pages(os.path.join(root, posixpath.dirname(first.path)), first.document)[0]
    except (OSError, ValueError):
        return None
    h = xxhash.xxh3_128()
    for page in pages:
        h.update(page)
    h.update(orjson.dumps([document.title, [[ref.path, ref.header_path, ref.title, ref.document] for ref in document.items]]))
    return h.hexdigest()


def _is_document_part(value: object) -> bool:
    """True when a memo value has the shape ``_document_part`` returns (checked, never trusted)."""
    return (
        isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], tuple) and len(value[0]) == 5
        and isinstance(value[1], list) and all(isinstance(m, dict) for m in value[1])
        and isinstance(value[2], list) and all(isinstance(w, str) for w in value[2])
    )


def is_part(value: object) -> bool:
    """True when ``value`` has the shape ``topic_part`` returns (a memo entry is checked, never trusted)."""
    return (
        isinstance(value, tuple) and len(value) == 7 and isinstance(value[0], list) and isinstance(value[1], tuple)
        and len(value[1]) == 5 and isinstance(value[2], list) and isinstance(value[3], list)
        and isinstance(value[4], bool) and (value[5] is None or isinstance(value[5], int))
        and isinstance(value[6], list) and all(isinstance(w, str) for w in value[6])
    )


def text_words(text: str) -> set[str]:
    """The words of ``text`` that a term shard may carry a static encoder row for: its maximal
    runs of ASCII letters and digits, lowercased (``searchlayout.WHOLE_WORD``; a query's
    words as the model's tokenizer splits them, where they are ASCII)."""
    return set(WHOLE_WORD.findall(text.lower()))


def matching_of(doc: object) -> tuple[bool, int | None]:
    """(the topic's prompt hashes use our SimHash, its published radius or None), from its
    parsed ``index.json``."""
    from pipeline.simhash import ALGORITHM

    matching = doc.get("prompt_matching") if isinstance(doc, dict) else None
    matching = matching if isinstance(matching, dict) else {}
    value = matching.get("max_distance")
    radius = value if isinstance(value, int) and not isinstance(value, bool) else None
    return matching.get("algorithm", ALGORITHM) == ALGORITHM, radius
