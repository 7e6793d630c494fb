"""Chunk records packed small enough to travel inside ``_search/meta.json`` (pure).

A record (``pipeline.search.index.chunk_record``) repeats per chunk what belongs to its document
(name, title, source, front matter) and spells out what follows from it (topic, index, path,
title), so the 128-record blocks cost ~25 bytes gzipped a chunk. Packed, a site's records are
one document table and one short row per chunk::

    {"documents": [[name, chunks, document_title, type, tags, promotion_level], ...],
     "chunks":    [[header_path, is_code, keywords] or [header_path, is_code, keywords, {field: value}], ...]}

in site order (chunk number = row). ``unpack`` gives back exactly the records ``pack`` took:
whatever the derivation rules below do not give (a ``path`` that is not ``<topic>/_chunks/<document>-<index>.md``,
a title that is not the header path's last heading, a chunk whose front matter differs from its
document's first chunk, prompt hashes) travels in the row's override dict, so the rules only
decide the size, never the result. ``pipeline/assets/searchindex.js`` (``unpackRecords``) is the
browser's twin; ``tests/test_search_index.py`` round-trips a built site's records through both.
"""

from __future__ import annotations

import orjson

DOC_FIELDS = ("document_title", "type", "tags", "promotion_level")
"""Record fields taken from the document table (its first chunk's values)."""


def derived(topic: str, document: str, index: int, header_path: str, doc: dict) -> dict:
    """The fields a row does not store: what they are unless its override dict says otherwise."""
    folder = f"{topic}/" if topic else ""
    last = header_path.rsplit(" > ", 1)[-1].lstrip("#").strip(" ")
    return {
        "topic": topic,
        "document": document,
        "index": index,
        "source": f"{folder}{document}.md",
        "path": f"{folder}_chunks/{document}-{index}.md",
        "title": last or doc["document_title"],
        "prompt_hashes": [],
        **doc,
    }


class Packer:
    """``pack`` one record at a time, counting the packed JSON's bytes as it goes (``size``,
    within a few bytes), so a builder can give up once the records are too many to inline."""

    def __init__(self) -> None:
        self.documents: list[list] = []
        self.rows: list[list] = []
        self.size = 0
        self._run: tuple[str, str] | None = None
        self._doc: dict = {}
        self._position = 0

    def add(self, record: dict, topic: str) -> None:
        """The next chunk's record; ``topic``: the id of the topic its number lies in."""
        key = (topic, record["document"])
        if key != self._run:
            self._run, self._position = key, 0
            self._doc = {f: record.get(f) for f in DOC_FIELDS}
            self.documents.append([record["document"], 0, *(self._doc[f] for f in DOC_FIELDS)])
            self.size += len(orjson.dumps(self.documents[-1])) + 8
        self.documents[-1][1] += 1
        expect = derived(topic, record["document"], self._position, record["header_path"], self._doc)
        row = [record["header_path"], record["is_code"], record["keywords"]]
        extra = {f: record.get(f) for f in expect if record.get(f) != expect[f]}
        extra.update({f: v for f, v in record.items() if f not in expect and f not in ("header_path", "is_code", "keywords")})
        if extra:
            row.append(extra)
        self.rows.append(row)
        self.size += len(orjson.dumps(row)) + 1
        self._position += 1

    def packed(self) -> dict:
        return {"documents": self.documents, "chunks": self.rows}


def pack(records: list[dict], topic_of: list[str]) -> dict:
    """``records`` in site order (``topic_of[n]``: the topic id chunk ``n`` lies in, as the
    manifest's topic ranges say) as {"documents", "chunks"} (module docstring)."""
    packer = Packer()
    for number, record in enumerate(records):
        packer.add(record, topic_of[number])
    return packer.packed()


def unpack(packed: dict, topic_of: list[str]) -> list[dict]:
    """The records ``pack`` took (``topic_of`` as there)."""
    out: list[dict] = []
    rows = packed["chunks"]
    for name, count, *values in packed["documents"]:
        doc = dict(zip(DOC_FIELDS, values))
        for position in range(count):
            number = len(out)
            header_path, is_code, keywords, *rest = rows[number]
            record = derived(topic_of[number], name, position, header_path, doc)
            record.update(header_path=header_path, is_code=is_code, keywords=keywords)
            if rest:
                record.update(rest[0])
            out.append(record)
    return out
