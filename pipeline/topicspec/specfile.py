"""A topic's spec pages: ``topic-spec.md``, a page for people (keywords, questions, a row per
document of its first ``SPEC_ENTRIES``), one page per document, ``_spec/<key>.md`` (its chunk
table), and in a topic of more documents its list pages ``_spec/_documents-<n>.md`` (n = 2, 3, ...:
the next ``SPEC_ENTRIES`` documents' rows each). Each carries its part of the spec stage's data as
a fenced JSON block after ``DATA_MARKER``, which IndexTool and publish read.

A document's row (in ``topic-spec.md`` or its list page) names its page and the xxh64 of its
bytes; ``topic-spec.md`` names the list pages by their count and one xxh64 of theirs
(``list_digest``). So the topic page changes whenever any page does, and a one-document edit
rewrites its own page, the list page naming it and the topic page, whose size does not grow with
the topic's documents (a small topic's pages are those of before the list pages).

``read_topic_spec(path) == data`` for the ``data`` whose pages ``render_topic_spec`` made;
``read_topic_summary(path)`` is the topic page's block alone (no other page read).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

import orjson
import xxhash
from jinja2 import Environment, PackageLoader, StrictUndefined

from pipeline.errors import PipelineError
from pipeline.fsutil import decode_utf8, read_text
from pipeline.siteformat.hrefs import quote_path

from pipeline.reuse import stamps
from pipeline.siteformat.indexnames import LISTING_ENTRIES
from pipeline.siteformat.tree import TOPIC_SPEC_FILE, document_key

DATA_MARKER = "<!-- pipeline:topic-spec-data -->"
SPEC_DIR = "_spec"
"""The folder of a topic's document pages (``_spec/<key>.md``): generated, so never a node."""
SUMMARY_FIELDS = ("source", "title", "count", "strategy", "promotion_level")
"""What the topic page's block keeps of each document spec, beside its page and the page's hash."""
SPEC_ENTRIES = LISTING_ENTRIES
"""Documents' rows on ``topic-spec.md`` and on each list page: the listing's page size, so the
spec's list page ``n`` names the documents listing page ``n`` names in a folder without
sub-folders, and an edit moves no boundary."""
PAGING_FIELDS = ("document_count", "document_pages")
"""The fields of ``topic-spec.md``'s block that only a topic with list pages has."""


def list_page(number: int) -> str:
    """List page ``number`` (2, 3, ...) of a topic's documents, relative to its folder (page 1 is
    ``topic-spec.md``). Never a document's page: a document's name does not start with ``_``."""
    return f"{SPEC_DIR}/_documents-{number}.md"


def list_digest(page_hashes: list[str]) -> str:
    """The xxh64 ``topic-spec.md`` names for its list pages: of their xxh64s (hex), in page
    order, each followed by a newline."""
    return xxhash.xxh64_hexdigest("".join(h + "\n" for h in page_hashes).encode("ascii"))


@lru_cache(maxsize=1)
def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("pipeline", "templates"),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        # the template is a file of the installed package: not checked for changes (a stat of it)
        # on every page, 30 of them after a cold build's last vector at 200 documents
        auto_reload=False,
    )
    env.filters["cell"] = _cell
    env.filters["chunk_rows"] = _chunk_rows
    env.filters["href"] = quote_path
    return env


def _cell(value) -> str:
    """``value`` as one markdown table cell: ``|`` escaped, line breaks as spaces."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _chunk_rows(doc: dict, prefix: str = "") -> str:
    """A document's chunk table rows, one line each (what the template would write with a loop
    over ``doc["items"]``: 4,228 rows at 1,000 documents, half the pages' time after the last
    vector as template code, most of it looking up each field)."""
    technical = "baseline_technical" in doc
    rows = []
    for item in doc["items"]:
        cells = [f"[{item['index']}]({prefix}{quote_path(item['href'])})", _cell(item["title"]), "yes" if item["is_code"] else "",
                 str(item["token_count"]), "%.4f" % item["similarity_conceptual"]]
        if technical:
            cells.append("%.4f" % item["similarity_technical"])
        cells.append(_cell(", ".join(str(k["name"]) for k in item["keywords"])))
        cells.append(str(len(item["prompt_hashes"])) if "prompt_hashes" in item else "")
        related = item.get("related")
        cells.append(", ".join(f"{_stem(r['href'])} ({'%.2f' % r['similarity']})" for r in related) if related is not None else "")
        rows.append("| " + " | ".join(cells) + " |\n")
    return "".join(rows)


def load_template():
    """The pages' compiled templates (compiled once per process: a build does it while it waits
    for the encoding, not after); returns the topic page's."""
    _templates().get_template("topic-spec-document.md.j2")
    _templates().get_template("topic-spec-list.md.j2")
    return _templates().get_template("topic-spec.md.j2")


def document_page(source: str) -> str:
    """The page of the document whose file is ``source``, relative to its topic's folder."""
    return f"{SPEC_DIR}/{document_key(source)}.md"


def render_topic_spec(data: dict) -> dict[str, str]:
    """The topic's pages for people, by path relative to its folder: ``topic-spec.md`` with the
    keywords, questions and a row for each of the first ``SPEC_ENTRIES`` documents, the list
    pages with the next ones' rows, and ``_spec/<key>.md`` per document with its chunk table;
    each with its part of ``data`` as a JSON block (module docstring)."""
    env = _templates()
    document_template = env.get_template("topic-spec-document.md.j2")
    pages: dict[str, str] = {}
    entries = []
    for doc in data["documents"]:
        rel = document_page(doc["source"])
        payload = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
        text = document_template.render(topic=data, doc=doc, payload=payload, fence=_fence(payload), marker=DATA_MARKER,
                                        up="../" * rel.count("/"))
        pages[rel] = text
        entries.append({**{k: doc[k] for k in SUMMARY_FIELDS if k in doc}, "page": rel,
                        "xxh64": xxhash.xxh64_hexdigest(text.encode("utf-8"))})
    groups = [entries[i : i + SPEC_ENTRIES] for i in range(0, len(entries), SPEC_ENTRIES)] or [[]]
    summary = {**data, "documents": groups[0]}
    if len(groups) > 1:
        list_template = env.get_template("topic-spec-list.md.j2")
        hashes = []
        for number, group in enumerate(groups[1:], start=2):
            block = {"topic": data["topic"], "page": number, "pages": len(groups), "documents": group}
            if number < len(groups):
                block["next"] = list_page(number + 1)
            payload = orjson.dumps(block, option=orjson.OPT_INDENT_2).decode()
            text = list_template.render(
                topic=data, data=block, first=(number - 1) * SPEC_ENTRIES + 1, total=len(entries),
                previous="../" + (TOPIC_SPEC_FILE if number == 2 else list_page(number - 1)),
                payload=payload, fence=_fence(payload), marker=DATA_MARKER,
            )
            pages[list_page(number)] = text
            hashes.append(xxhash.xxh64_hexdigest(text.encode("utf-8")))
        summary["document_count"] = len(entries)
        summary["document_pages"] = {"pages": len(groups), "next": list_page(2), "xxh64": list_digest(hashes)}
    payload = orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode()
    pages[TOPIC_SPEC_FILE] = load_template().render(data=summary, payload=payload, fence=_fence(payload), marker=DATA_MARKER)
    return pages


def _fence(payload: str) -> str:
    """A run of backticks longer than any in ``payload``, at least three. Only runs of three or
    more can make it longer than three, and most payloads have none (one scan in C, not a
    match object per backtick)."""
    if "```" not in payload:
        return "```"
    return "`" * (1 + max(len(run) for run in re.findall(r"`{3,}", payload)))


def _stem(href: str) -> str:
    """``PurePosixPath(href).stem``; for the usual href (no empty or "." part) without building
    a path: the topic page names ~2,500 related chunks at 200 documents."""
    if not isinstance(href, str) or href in ("", ".") or "//" in href or "/./" in href or href.startswith("./") or href.endswith(("/", "/.")):
        return PurePosixPath(href).stem
    name = href.rpartition("/")[2]
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


_OPENING = re.compile(r"^(`{3,})json\n", re.M)


@lru_cache(maxsize=8)
def _closing(fence: str) -> re.Pattern:
    return re.compile("^" + re.escape(fence) + r"\s*$", re.M)


def _data_block(text: str, start: int) -> tuple[int, int] | None:
    """(start, end) of the first fenced ``json`` block's body at or after ``start``: what
    ``^(`{3,})json\\n(.*?)^\\1\\s*$`` (multiline, dot-all) matches as its second group, found
    as an opening line and then its closing fence, not by trying the closing fence at every
    character of the block (18 ms of the 30 pages' 28 ms at 200 documents)."""
    while (opening := _OPENING.search(text, start)) is not None:
        closing = _closing(opening.group(1)).search(text, opening.end())
        if closing is not None:
            return opening.end(), closing.start()
        start = opening.start() + 1
    return None


def read_topic_summary(path: Path) -> dict:
    """The data block of a ``topic-spec.md`` written by ``render_topic_spec``: the topic's data
    with, per document, its summary fields, ``page`` and ``xxh64`` (no document page read)."""
    return _read_block(read_text(path), path)


def read_topic_spec(path: Path) -> dict:
    """The topic's whole data (``render_topic_spec``'s ``data``): ``topic-spec.md``'s block with
    each document's page read in place of its entry, the list pages' entries after its own.
    Raises PipelineError naming the page when one is missing, not the one listed (its hash),
    or without a valid block."""
    summary = read_topic_summary(path)
    documents = []
    for entry, name in _listed(path, summary):
        page = Path(name)
        try:
            data = page.read_bytes()
        except OSError:
            raise PipelineError("missing; regenerate it with `pipeline spec`", path=page) from None
        if xxhash.xxh64_hexdigest(data) != entry.get("xxh64"):
            raise PipelineError(f"not the page {TOPIC_SPEC_FILE} or its list page names (its hash differs); "
                                "regenerate it with `pipeline spec`", path=page)
        documents.append(_read_block(decode_utf8(data, page), page))
    return {**{k: v for k, v in summary.items() if k not in PAGING_FIELDS}, "documents": documents}


def _listed(path: Path, summary: dict) -> list[tuple[dict, str]]:
    """(entry, path of its document page) of every document ``topic-spec.md`` (at ``path``, its
    block ``summary``) and its list pages name, in order; the list pages are read and checked
    against the topic page's ``list_digest``. Raises PipelineError naming the file at fault."""
    folder = Path(path).parent
    entries = list(summary.get("documents") or [])
    paging = summary.get("document_pages")
    if paging is not None:
        count = paging.get("pages") if isinstance(paging, dict) else None
        if not isinstance(count, int) or count < 2:
            raise PipelineError("document_pages names no page count; regenerate it with `pipeline spec`", path=path)
        hashes = []
        for number in range(2, count + 1):
            page = folder / list_page(number)
            try:
                data = page.read_bytes()
            except OSError:
                raise PipelineError("missing; regenerate it with `pipeline spec`", path=page) from None
            hashes.append(xxhash.xxh64_hexdigest(data))
            block = _read_block(decode_utf8(data, page), page)
            if not isinstance(block, dict) or not isinstance(block.get("documents"), list):
                raise PipelineError("data block lists no documents; regenerate it with `pipeline spec`", path=page)
            entries += block["documents"]
        if list_digest(hashes) != paging.get("xxh64"):
            raise PipelineError(f"its list pages are not those {TOPIC_SPEC_FILE} names (their hash differs); "
                                "regenerate them with `pipeline spec`", path=path)
    out = []
    prefix = os.path.join(folder, "")  # ``prefix + page`` is ``os.path.join(folder, page)`` for a relative page
    for i, entry in enumerate(entries):
        page = entry.get("page") if isinstance(entry, dict) else None
        if not isinstance(page, str):
            raise PipelineError(f"documents[{i}] names no page; regenerate it with `pipeline spec`", path=path)
        out.append((entry, page if page.startswith("/") else prefix + page))  # a string: ~10,000 of them on a no-op rebuild
    return out


def pages_intact(folder: Path, recorded: object = None, *, topic_xxh64: str | None = None) -> list | None:
    """The stamps of ``folder``'s document pages (``reuse/stamps.py``, in the order its
    ``topic-spec.md`` and list pages list them; None for a page changed too recently to stamp)
    when each is the page listed, else None. A page whose stamp is the one ``recorded`` (a
    build's previous stamps of the same pages) is trusted unread; any other is read and checked
    against the hash listed: a no-op rebuild stats a topic's document pages instead of reading
    them (it reads the topic page and its list pages: ``SPEC_ENTRIES`` rows each).
    ``topic_xxh64`` (when given): None too unless ``topic-spec.md``'s bytes have that xxh64
    (the build state's ``output``), checked on the bytes read for its block."""
    try:
        path = folder / TOPIC_SPEC_FILE
        data = path.read_bytes()
        if topic_xxh64 is not None and xxhash.xxh64_hexdigest(data) != topic_xxh64:
            return None
        listed = _listed(path, _read_block(decode_utf8(data, path), path))
        recorded = recorded if isinstance(recorded, list) and len(recorded) == len(listed) else None
        return stamps.verify_all((page for _, page in listed), (entry["xxh64"] for entry, _ in listed), recorded)
    except (PipelineError, OSError, KeyError, TypeError):
        return None


def _read_block(text: str, path: Path) -> dict:
    """The JSON block after ``DATA_MARKER`` in a page's ``text``."""
    marker = text.find(DATA_MARKER)
    block = _data_block(text, marker) if marker >= 0 else None
    if block is None:
        raise PipelineError("no data block; regenerate it with `pipeline spec`", path=path)
    try:
        return orjson.loads(text[block[0] : block[1]])
    except orjson.JSONDecodeError as exc:
        line = text.count("\n", 0, block[0]) + 1
        raise PipelineError(f"data block is not valid JSON: {exc}", path=path, line=line) from None
