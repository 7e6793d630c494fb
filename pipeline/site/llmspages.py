"""The pager of the llms files (``site/llms.py``): their names and budget, and the split of a run
of blocks (a document's text, a listing line) into pages of fixed groups (no I/O).

A reader reads an llms file whole, so every one holds at most ``PAGE_BYTES`` bytes. Blocks go
into fixed groups (``group`` blocks each: a topic's text by ``TEXT_GROUP`` documents, aligned
with its ``index.json`` listing's ``LISTING_ENTRIES``), and a group into as many parts as its
bytes need, cut at block boundaries, or inside a block bigger than a page at line boundaries (a
line bigger than a page at character boundaries). A page's name depends only on its group and
part numbers, so an edit that changes a block's size rewrites its group's pages, never another
group's. Guarantees: the pages' bodies, joined in order, give every block's ``head + body`` once
(a piece after the first opens with the block's ``again`` instead of ``head``); each body is at
most ``room`` bytes (UTF-8) unless one ``head`` alone is bigger.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.siteformat.indexnames import LISTING_ENTRIES, PAGE_BYTES as INDEX_PAGE_BYTES

LLMS_TXT = "llms.txt"
LLMS_FULL_TXT = "llms-full.txt"
LLMS_DIR = "_llms"
"""Each folder's later llms pages (``_llms/full-<g>.txt`` ...): a hidden folder, no node of the site."""

PAGE_BYTES = INDEX_PAGE_BYTES
"""Most bytes of one llms file: an agent reads it whole (~8k tokens, the index files' budget)."""
TEXT_GROUP = LISTING_ENTRIES
"""Documents of one group of a topic's text: the documents of one page of its listing."""
LISTING_GROUP = 8 * LISTING_ENTRIES
"""Documents of one page of a topic's document list (~80 bytes a line: ~20 kB)."""
TOPICS_GROUP = 64
"""Topics of one page of the root ``llms.txt`` when it cannot list every document."""

FULL, DOCUMENTS, TOPICS = "full", "documents", "topics"


def page_file(kind: str, group: int, part: int = 1) -> str:
    """The name, relative to its folder, of part ``part`` of group ``group`` (both from 1) of a
    folder's text (``FULL``), document list (``DOCUMENTS``) or the root's topics (``TOPICS``)."""
    if group == 1 and part == 1 and kind != DOCUMENTS:
        return LLMS_FULL_TXT if kind == FULL else LLMS_TXT
    return f"{LLMS_DIR}/{kind}-{group}.txt" if part == 1 else f"{LLMS_DIR}/{kind}-{group}-{part}.txt"


def in_folder(dir_rel: str, name: str) -> str:
    """``name`` of the folder ``dir_rel`` ("" the root) as a site path."""
    return f"{dir_rel}/{name}" if dir_rel else name


@dataclass(frozen=True)
class Block:
    head: str
    body: str = ""
    again: str = ""  # opens a piece of ``body`` after the first


@dataclass(frozen=True)
class Page:
    group: int
    part: int
    first: int  # index of the block it starts with
    continued: bool  # it starts inside that block (a piece after its first)
    body: str


def paginate(blocks: list[Block], group: int, room: int) -> list[Page]:
    """``blocks`` in pages (module docstring): groups of ``group`` blocks, each page's body at
    most ``room`` bytes."""
    pages: list[Page] = []
    for start in range(0, len(blocks), group):
        number = start // group + 1
        parts: list[tuple[int, bool, list[str]]] = []
        texts: list[str] = []
        used = 0
        first, continued = start, False
        for index in range(start, min(start + group, len(blocks))):
            block = blocks[index]
            size = byte_size(block.head) + byte_size(block.body)
            if texts and used + size > room:
                parts.append((first, continued, texts))
                texts, used, first, continued = [], 0, index, False
            if size <= room or not block.body:
                texts.append(block.head + block.body)
                used += size
                continue
            pieces = _pieces(block, room)
            for i, piece in enumerate(pieces[:-1]):
                parts.append((index, i > 0, [piece]))
            texts, used, first, continued = [pieces[-1]], byte_size(pieces[-1]), index, len(pieces) > 1
        if texts:
            parts.append((first, continued, texts))
        pages += [Page(number, part, b, c, "".join(t)) for part, (b, c, t) in enumerate(parts, 1)]
    return pages


def byte_size(text: str) -> int:
    """The UTF-8 bytes of ``text``: what a page's budget counts."""
    return len(text.encode("utf-8"))


def _pieces(block: Block, room: int) -> list[str]:
    """``block`` cut into pieces of at most ``room`` bytes at line boundaries: the first opens
    with ``head``, the others with ``again``."""
    pieces: list[str] = []
    opening = block.head
    lines: list[str] = []
    used = byte_size(opening)
    for line in block.body.splitlines(keepends=True):
        for cut in _cut(line, max(4, room - max(byte_size(block.head), byte_size(block.again)))):
            size = byte_size(cut)
            if lines and used + size > room:
                pieces.append(opening + "".join(lines))
                opening, lines = block.again, []
                used = byte_size(opening)
            lines.append(cut)
            used += size
    pieces.append(opening + "".join(lines))
    return pieces


def _cut(line: str, limit: int) -> list[str]:
    """``line`` in pieces of at most ``limit`` UTF-8 bytes, cut between characters."""
    data = line.encode("utf-8")
    if len(data) <= limit:
        return [line]
    out = []
    while data:
        end = min(limit, len(data))
        while end < len(data) and end > 1 and (data[end] & 0xC0) == 0x80:  # not inside a character
            end -= 1
        out.append(data[:end].decode("utf-8"))
        data = data[end:]
    return out
