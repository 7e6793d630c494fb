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
    )
    env.filters["cell"] = lambda value: str(value).replace("|", "\\|").replace("\n", " ")
    env.filters["chunk_name"] = lambda href: PurePosixPath(href).stem
    env.filters["href"] = quote_path
    return env


def load_template():
    """The page's compiled template (compiled once per process: a build does it while it waits
    for the encoding, not after)."""
    return _templates().get_template("topic-spec.md.j2")


def render_topic_spec(data: dict) -> str:
    """The markdown page for people, with ``data`` as a JSON block for IndexTool."""
    payload = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    longest = max((len(run) for run in re.findall(r"`+", payload)), default=0)
    fence = "`" * max(3, longest + 1)
    return load_template().render(
        data=data, payload=payload, fence=fence, marker=DATA_MARKER
    )


def read_topic_spec(path: Path) -> dict:
    """The data block of a ``topic-spec.md`` written by ``render_topic_spec``."""
    text = read_text(path)
    marker = text.find(DATA_MARKER)
    match = re.compile(r"^(`{3,})json\n(.*?)^\1\s*$", re.M | re.S).search(text, marker) if marker >= 0 else None
    if not match:
        raise PipelineError("no data block; regenerate it with `pipeline spec`", path=path)
    try:
        return orjson.loads(match.group(2))
    except orjson.JSONDecodeError as exc:
        line = text.count("\n", 0, match.start(2)) + 1
        raise PipelineError(f"data block is not valid JSON: {exc}", path=path, line=line) from None
