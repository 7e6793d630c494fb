"""Fuzzing the input side: generated markdown, front matter and file names (issue 15, point 8).

One *case* is a file name plus a document (markdown with or without front matter, or a YAML/JSON
knowledge-base entry) with any mix of line endings. ``check_case`` runs it through what a build
does with a document (name checks, parse, validate, choose a strategy, chunk, serialise the
records) and asserts:

- no exception but ``PipelineError`` (a refusal names the file; the build stops cleanly);
- chunk spans exact (``content`` ends with its span), ordered, non-overlapping; code fences
  never cut; every non-blank character after the front matter covered (markdown);
- every record serialises to JSON as is (metadata is JSON-safe);
- names: ``name_problem`` never raises; a published href decodes back to the name and holds
  only RFC 3986 path characters.

``tests/test_fuzz.py`` runs a few thousand cases; ``python -m bench.fuzz --cases 100000`` the long
campaign (it prints the counts).
"""

from __future__ import annotations

import json
import random
import re
import warnings
from urllib.parse import unquote

import orjson
import yaml
from hypothesis import strategies as st

from pipeline.chunking import chunk_text
from pipeline.chunking.document import validate
from pipeline.chunking.invariants import violations
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import parse_markdown
from pipeline.siteformat.hrefs import quote_path
from pipeline.siteformat.tree import document_key, name_problem

_RFC3986_PATH = re.compile(r"^(?:[A-Za-z0-9\-._~/]|%[0-9A-F]{2})*$")

# -- generators ----------------------------------------------------------------------------------

_WORDS = [
    "stripe", "order", "cache", "the", "a", "naïve", "日本", "x" * 40, "`code`", "**bold**", "_em_", "[l](u)",
    "<b>", "&amp;", "\\", "|", "#", "-", "*", "1.", ">", "~~~", "```", "\x1b[2J", "\u202e", "\t", "\x00", "é",
]
_FENCES = ["```", "````", "~~~"]


def _line(rng) -> str:
    """A line of words; plain ``random`` for the bulk of the text (hypothesis draws are ~100x
    dearer), seeded by a hypothesis draw so every case is reproducible and shrinkable."""
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(13)))


@st.composite
def _block(draw) -> str:
    kind = draw(st.integers(0, 9))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    if kind == 0:
        return "#" * rng.randint(1, 7) + " " + _line(rng)
    if kind == 1:
        fence = rng.choice(_FENCES)
        body = "\n".join(_line(rng) for _ in range(rng.randrange(6)))
        closing = rng.choice([fence, fence, fence, fence + fence[0], "", fence[0] * 2])  # sometimes unclosed
        return f"{fence}{rng.choice(['', 'python', 'bash'])}\n{body}\n{closing}".rstrip()
    if kind == 2:
        return "\n".join("    " + _line(rng) for _ in range(rng.randint(1, 4)))
    if kind == 3:
        marker = rng.choice(["- ", "* ", "1. ", "> ", "  - "])
        return "\n".join(marker + _line(rng) for _ in range(rng.randint(1, 6)))
    if kind == 4:
        cols = rng.randint(1, 4)
        rows = ["| " + " | ".join(_line(rng) or "x" for _ in range(cols)) + " |" for _ in range(rng.randrange(5))]
        return "\n".join(["| " + " | ".join(["h"] * cols) + " |", "|" + "---|" * cols, *rows])
    if kind == 5:
        return draw(st.text(max_size=60))  # anything at all
    if kind == 6:
        return rng.choice(["---", "***", "===", "<!-- c -->", "<div>\n\nx\n</div>", ""])
    return "\n".join(_line(rng) for _ in range(rng.randint(1, 5)))


_yaml_scalar = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10) | st.binary(max_size=6)
    | st.dates() | st.sets(st.integers(0, 5), max_size=3)
)
_yaml_value = st.recursive(
    _yaml_scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.integers(-2, 2) | st.text(max_size=4) | st.booleans(), c, max_size=3),
    max_leaves=10,
)
_HOSTILE_YAML = [
    "a: &a [*a]",
    "a: &a {b: *a}",
    'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n'
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]",
    "a: " + "[" * 2000 + "]" * 2000,
    "a: " + "[" * 70 + "]" * 70,
    "a: !!python/object:os.system x",
    "? [1, 2]\n: x",
    "big: 123456789012345678901234567890",
    "n: .nan",
    "b: !!binary aGVsbG8=",
    "<<: {a: 1}\nb: 2",
    "chunking: {strategy: nonsense}",
    "chunking: {strategy: tokens, max_tokens: 40}",
    "chunking: 5",
    "title: [1, 2]",
    "- just\n- a list",
    "",
    ":",
    "a: b: c",
]


@st.composite
def _front_matter(draw) -> str:
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return ""
    if choice == 1:
        body = draw(st.sampled_from(_HOSTILE_YAML))
    elif choice == 2:
        try:
            body = yaml.safe_dump(draw(st.dictionaries(st.text(max_size=6), _yaml_value, max_size=4)), allow_unicode=True)
        except yaml.YAMLError:
            body = "x: 1"
    else:
        body = draw(st.text(max_size=40))
    return f"---\n{body.rstrip()}\n---\n"


@st.composite
def _entry(draw) -> tuple[str, str]:
    """A YAML or JSON knowledge-base entry (suffix, text)."""
    data = {
        "type": draw(st.sampled_from(["how_to", "workflow", "definition", "error", "other", ""])),
        "title": draw(st.text(max_size=12)),
    }
    for name in draw(st.lists(st.sampled_from(["overview", "steps", "prerequisites", "tips", "issues", "extra"]), max_size=5)):
        rng = random.Random(draw(st.integers(0, 2**32 - 1)))
        data[name] = draw(st.one_of(st.just(_line(rng)), st.just([_line(rng) for _ in range(rng.randrange(5))]), _yaml_value))
    if draw(st.booleans()):
        try:
            return ".json", json.dumps(data, default=str, ensure_ascii=draw(st.booleans()))
        except (TypeError, ValueError):
            return ".json", "{}"
    if draw(st.integers(0, 4)) == 0:
        return ".yaml", "type: how_to\n" + draw(st.sampled_from(_HOSTILE_YAML))
    try:
        return ".yaml", yaml.safe_dump(data, allow_unicode=True)
    except yaml.YAMLError:
        return ".yaml", "type: definition\n"


_name_char = st.characters(blacklist_categories=("Cs",)) | st.sampled_from(list("#%?&=; .-_~/\\") + ["%2e", "%2F"])


@st.composite
def cases(draw) -> tuple[str, str]:
    """One fuzz case: ``(file name, text)``."""
    stem = "".join(draw(st.lists(_name_char, max_size=12))).replace("/", "_") or "doc"
    if draw(st.integers(0, 7)) == 0:  # names a site cannot hold (os.walk gives undecodable bytes as surrogates)
        stem = draw(st.sampled_from(["x" * 245, "é" * 120, "caf\udce9", "a#b", "p%2e%2e", "日本語", "q?x=1"]))
    if draw(st.integers(0, 4)) == 0:
        suffix, text = draw(_entry())
    else:
        blocks = draw(st.lists(_block(), min_size=0, max_size=8))
        text = draw(_front_matter()) + "\n\n".join(blocks)
        suffix = ".md"
    newline = draw(st.sampled_from(["\n", "\r\n", "\r", "mixed"]))
    if newline == "mixed":
        rng = random.Random(draw(st.integers(0, 2**32 - 1)))
        text = "".join(ch if ch != "\n" else rng.choice(["\n", "\r\n", "\r"]) for ch in text)
    elif newline != "\n":
        text = text.replace("\n", newline)
    if draw(st.integers(0, 9)) == 0:
        text = "\ufeff" + text
    return stem + suffix, text


# -- the check -------------------------------------------------------------------------------


def check_case(name: str, text: str, counter) -> str:
    """Run one case; returns its outcome (``chunked``, ``empty``, ``refused``, ``skipped-name``).
    Raises AssertionError (with the case) when an invariant breaks, or the unexpected exception."""
    problem = name_problem(name)
    if problem is None:
        href = quote_path(f"topic/_chunks/{document_key(name)}-0.md")
        assert _RFC3986_PATH.match(href), href
        assert unquote(href) == f"topic/_chunks/{document_key(name)}-0.md"
    else:
        return "skipped-name"  # a build skips it with a warning (tests/test_hostile.py)
    markdown = name.endswith(".md")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            document = parse_markdown(text, name)
            validate(document, allow_unclosed_fences=not markdown)
            chunks = chunk_text(text, path=name, counter=counter, document_id=document_key(name))
    except PipelineError as exc:
        assert exc.path == name, f"error does not name the file: {exc}"
        return "refused"
    if not chunks:
        return "empty"
    problems = violations(document, chunks, max_tokens=None, counter=counter, coverage=markdown and _default(document), fences=markdown)
    if not markdown:  # a YAML/JSON entry's chunks follow the seed's section order, not the file's
        problems = [p for p in problems if "overlaps or precedes" not in p]
    assert not problems, "\n".join(problems[:5])
    for chunk in chunks:
        orjson.dumps(chunk.to_dict())  # raises on anything that is not JSON-safe
    return "chunked"


def _default(document) -> bool:
    """Coverage is promised by the markdown-like strategies, not by an entry (it drops fields)."""
    chunking = document.front_matter.get("chunking")
    return "type" not in document.front_matter and not (isinstance(chunking, dict) and chunking.get("strategy") in ("entry", "character"))
