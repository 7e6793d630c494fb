"""Chunk records packed small enough to travel inside ``_search/meta.json`` (pure).

A record (``pipeline.search.topicpart.chunk_record``) repeats per chunk what belongs to its document
(name, title, source, front matter) and spells out what follows from it (topic, index, path,
title), so the 128-record blocks cost ~25 bytes gzipped a chunk. Packed, a site's records are
one document table and one short row per chunk::

    {"documents": [[name, chunks, document_title, type, tags, promotion_level], ...],
     "chunks":    [[header_path, is_code, keywords, gap, span] or [..., span, {field: value}], ...]}

in site order (chunk number = row). ``gap`` and ``span`` give the chunk's source lines, which
a citation needs, in few bytes: ``start_line`` is the previous chunk's ``end_line`` (0 for a
document's first chunk, or after a chunk without lines) plus ``gap`` (2 for most chunks: one
blank line between them), ``end_line`` is ``start_line + span``; both null when the record has
no lines. ``unpack`` gives back exactly the records ``pack`` took:
whatever the derivation rules below do not give (a ``path`` that is not ``<topic>/_chunks/<document>-<index>.md``,
a title that is not the header path's last heading, a chunk whose front matter differs from its
document's first chunk, prompt hashes) travels in the row's override dict, so the rules only
decide the size, never the result. ``pipeline/assets/searchindex.js`` (``unpackRecords``) is the
browser's twin; ``tests/test_search_index.py`` round-trips a built site's records through both.
"""

from __future__ import annotations

import bisect

import orjson

DOC_FIELDS = ("document_title", "type", "tags", "promotion_level")
"""Record fields taken from the document table (its first chunk's values)."""

ROW_FIELDS = ("header_path", "is_code", "keywords", "start_line", "end_line")
"""Record fields a row holds (the lines as ``gap`` and ``span``)."""


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


def lines_of(rows: list[list]) -> list[tuple[int | None, int | None]]:
    """(start_line, end_line) of each of one document's rows, from their ``gap`` and ``span``."""
    out, end = [], None
    for row in rows:
        gap, span = row[3], row[4]
        if gap is None or span is None:
            out.append((None, None))
            end = None
        else:
            start = (end or 0) + gap
            end = start + span
            out.append((start, end))
    return out


def _is_line(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        self._end: int | None = None  # the previous chunk's end_line in this document run

    def add(self, record: dict, topic: str) -> None:
        """The next chunk's record; ``topic``: the id of the topic its number lies in."""
        key = (topic, record["document"])
        if key != self._run:
            self._run, self._position, self._end = key, 0, None
            self._doc = {f: record.get(f) for f in DOC_FIELDS}
            self.documents.append([record["document"], 0, *(self._doc[f] for f in DOC_FIELDS)])
            self.size += len(orjson.dumps(self.documents[-1])) + 8
        self.documents[-1][1] += 1
        expect = derived(topic, record["document"], self._position, record["header_path"], self._doc)
        start, end = record.get("start_line"), record.get("end_line")
        if _is_line(start) and _is_line(end):
            gap, span = start - (self._end or 0), end - start
            expect["start_line"], expect["end_line"] = start, end
            self._end = end
        else:  # no range (or half of one: its override carries what there is)
            gap = span = self._end = expect["start_line"] = expect["end_line"] = None
        row = [record["header_path"], record["is_code"], record["keywords"], gap, span]
        extra = {f: record.get(f) for f in expect if record.get(f) != expect[f]}
        extra.update({f: v for f, v in record.items() if f not in expect and f not in ROW_FIELDS})
        if extra:
            row.append(extra)
        self.rows.append(row)
        self.size += len(orjson.dumps(row)) + 1
        self._position += 1

    def packed(self) -> dict:
        return {"documents": self.documents, "chunks": self.rows}


def slice_packed(packed: dict, start: int, end: int) -> dict:
    """The packed records of chunk numbers ``start`` to ``end`` - 1 (numbered from the packed
    records' first), when no document runs across either end: unpacked with a ``topic_of``
    counting from ``start``, they are the records of those chunks."""
    documents, at = [], 0
    for document in packed["documents"]:
        if start <= at and at + document[1] <= end:
            documents.append(document)
        at += document[1]
    return {"documents": documents, "chunks": packed["chunks"][start:end]}


def pack(records: list[dict], topic_of: list[str]) -> dict:
    """``records`` in site order (``topic_of[n]``: the topic id chunk ``n`` lies in, as the
    manifest's topic ranges say) as {"documents", "chunks"} (module docstring)."""
    packer = Packer()
    for number, record in enumerate(records):
        packer.add(record, topic_of[number])
    return packer.packed()


class Unpacked:
    """The records ``pack`` took, as a read-only sequence by chunk number, each built when first
    asked for: a query reads a handful of a site's records, and building all of them cost
    ~100 ms at 10k chunks. ``topic_of(n)``: the topic id chunk ``n`` lies in. Raises ValueError
    when the document table and the rows disagree in count."""

    def __init__(self, packed: dict, topic_of) -> None:
        self._rows = packed["chunks"]
        self._documents = packed["documents"]
        self._topic_of = topic_of
        self._starts: list[int] = []
        total = 0
        for document in self._documents:
            self._starts.append(total)
            count = document[1]
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(f"document {document[0]!r}: chunk count {count!r}")
            total += count
        if total != len(self._rows):
            raise ValueError(f"{total} chunks in the document table, {len(self._rows)} rows")
        self._built: dict[int, dict] = {}
        self._lines: dict[int, list] = {}  # each document's rows' lines, by document, when first read

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, number: int) -> dict:
        if not 0 <= number < len(self._rows):
            raise IndexError(number)
        record = self._built.get(number)
        if record is None:
            d = bisect.bisect_right(self._starts, number) - 1
            name, _, *values = self._documents[d]
            header_path, is_code, keywords, gap, span, *rest = self._rows[number]
            first = self._starts[d]
            if d not in self._lines:
                self._lines[d] = lines_of(self._rows[first:first + self._documents[d][1]])
            record = derived(self._topic_of(number), name, number - first, header_path, dict(zip(DOC_FIELDS, values)))
            start, end = self._lines[d][number - first]
            record.update(header_path=header_path, is_code=is_code, keywords=keywords, start_line=start, end_line=end)
            if rest:
                record.update(rest[0])
            self._built[number] = record
        return record


def unpack(packed: dict, topic_of: list[str]) -> list[dict]:
    """The records ``pack`` took (``topic_of`` as there), all of them."""
    records = Unpacked(packed, topic_of.__getitem__)
    return [records[n] for n in range(len(records))]
