"""The ``topic-spec.md`` file: a page for people (tables from a jinja2 template) that carries the
spec stage's data as a fenced JSON block after ``DATA_MARKER``, which IndexTool and publish read.

``read_topic_spec(path) == data`` for the ``data`` that ``render_topic_spec`` wrote.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path, PurePosixPath

import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined

from pipeline.index.hrefs import quote_path
from pipeline.errors import PipelineError
from pipeline.fsutil import read_text

DATA_MARKER = "<!-- pipeline:topic-spec-data -->"


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
    return env


def _cell(value) -> str:
    """``value`` as one markdown table cell: ``|`` escaped, line breaks as spaces."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _chunk_rows(doc: dict) -> str:
    """A document's chunk table rows, one line each (what the template would write with a loop
    over ``doc["items"]``: 4,228 rows at 1,000 documents, half the pages' time after the last
    vector as template code, most of it looking up each field)."""
    technical = "baseline_technical" in doc
    rows = []
    for item in doc["items"]:
        cells = [f"[{item['index']}]({quote_path(item['href'])})", _cell(item["title"]), "yes" if item["is_code"] else "",
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
    """The page's compiled template (compiled once per process: a build does it while it waits
    for the encoding, not after)."""
    return _templates().get_template("topic-spec.md.j2")


def render_topic_spec(data: dict) -> str:
    """The markdown page for people, with ``data`` as a JSON block for IndexTool."""
    payload = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    return load_template().render(
        data=data, payload=payload, fence=_fence(payload), marker=DATA_MARKER
    )


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


def read_topic_spec(path: Path) -> dict:
    """The data block of a ``topic-spec.md`` written by ``render_topic_spec``."""
    text = read_text(path)
    marker = text.find(DATA_MARKER)
    block = _data_block(text, marker) if marker >= 0 else None
    if block is None:
        raise PipelineError("no data block; regenerate it with `pipeline spec`", path=path)
    try:
        return orjson.loads(text[block[0] : block[1]])
    except orjson.JSONDecodeError as exc:
        line = text.count("\n", 0, block[0]) + 1
        raise PipelineError(f"data block is not valid JSON: {exc}", path=path, line=line) from None
