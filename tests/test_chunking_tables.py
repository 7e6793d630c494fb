"""A split table repeats its header (``pipeline/chunking/tables.py``).

The exactness claim, checked against tables found by markdown-it-py's own tokens (not by the
code under test): for every chunk with span ``S = source[start_offset:end_offset]``,

- if ``S`` starts inside a table's body (after its delimiter row) and the header is not wider
  than half of the chunk's budget: ``metadata["repeated_header"]`` records that table's header
  and delimiter rows ``H = source[h0:h1]`` (line end included), and ``content == C + H + S``;
- otherwise there is no ``repeated_header`` and ``content == C + S``;

where ``C`` is the strategy's heading context: heading lines (``#``...) then a blank line for
``markdown``/``tokens``/``semantic``, an entry section label for ``entry``, '' for the
character-sized strategies. Offsets and lines stay those of ``S`` alone.
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from test_chunking_properties import EMBEDDER, SETTINGS, check
from pipeline.chunking import chunk_text
from pipeline.parsing.links import chunk_file_text, link_destinations
from pipeline.parsing.markdown import line_starts_of, parse_markdown, use_front_matter

TABLE_STRATEGIES = ["markdown", "tokens", "sentence", "paragraph", "semantic", "entry"]


def oracle_tables(text: str) -> list[tuple[int, int, int]]:
    """``(header_start, body_start, body_end)`` of each top-level table with body rows, from
    markdown-it-py's ``table_open`` maps (line ``a`` the header, ``a + 1`` the delimiter)."""
    starts = line_starts_of(text)
    bom = 1 if text.startswith("\ufeff") else 0

    def offset(line: int) -> int:
        return starts[line] if line < len(starts) else len(text)

    out = []
    for token in use_front_matter(MarkdownIt("commonmark").enable("table")).parse(text[bom:]):
        if token.type == "table_open" and token.level == 0 and token.map[1] - token.map[0] > 2:
            a, b = token.map
            end = offset(b)
            while text[end - 1].isspace():
                end -= 1
            out.append((max(offset(a), bom), offset(a + 2), end))
    return out


def context_of(chunk, text: str) -> tuple[str, str]:
    """``(C, H)``: what precedes the span in ``content``, split at the recorded header."""
    before = chunk.content[: len(chunk.content) - (chunk.end_offset - chunk.start_offset)]
    header = chunk.metadata.get("repeated_header")
    if header is None:
        return before, ""
    h = text[header["start_offset"] : header["end_offset"]]
    assert before.endswith(h)
    return before[: len(before) - len(h)], h


def assert_context_is_headings(strategy: str, context: str) -> None:
    if strategy in ("sentence", "paragraph", "character"):
        assert context == ""
    elif context:
        assert context.endswith("\n\n")
        lines = context[:-2].split("\n")
        if strategy == "entry":
            assert len(lines) == 1 and lines[0].endswith(":") or lines[0].startswith(("Entry: ", "Definition: ", "Error: "))
        else:
            assert all(line.startswith("#") for line in lines), context


def chunks_of(text: str, strategy: str, counter, **options):
    if strategy == "semantic":
        options.setdefault("embedder", EMBEDDER)
    return check(text, strategy, counter, **options)


def assert_header_claim(text: str, strategy: str, chunks, counter, *, max_tokens: int, max_chars: int | None = None) -> int:
    """The module docstring's claim for every chunk; returns how many repeat a header."""
    tables = oracle_tables(text)
    repeated = 0
    for c in chunks:
        context, shown = context_of(c, text)
        assert c.content == context + shown + text[c.start_offset : c.end_offset]
        assert_context_is_headings(strategy, context)
        inside = [t for t in tables if t[1] <= c.start_offset < t[2]]
        if not inside:
            assert "repeated_header" not in c.metadata, (c.start_offset, tables)
            continue
        h0, h1, _ = inside[0]
        header = text[h0:h1]
        if "repeated_header" in c.metadata:
            repeated += 1
            assert shown == header and c.metadata["repeated_header"]["start_offset"] == h0
            assert c.metadata["repeated_header"]["end_line"] == c.metadata["repeated_header"]["start_line"] + 1
            assert c.start_line > c.metadata["repeated_header"]["end_line"]  # lines: the span's own
        else:  # left out only when wider than half of the smallest budget the strategy can have
            tokens = counter.count(header) - counter.specials
            budget = max_tokens if max_chars else max_tokens - max_tokens // 2
            assert 2 * tokens > budget or (max_chars is not None and 2 * len(header) > max_chars), (tokens, header)
    return repeated


def long_table(rows: int, cols: int = 3) -> str:
    head = "| " + " | ".join(["n", "name", "description", "unit"][:cols]) + " |"
    delimiter = "|" + "---|" * cols
    body = [f"| {i} | item{i} | " + " | ".join(f"the description of item number {i}" for _ in range(cols - 2)) + " |" for i in range(rows)]
    return "\n".join([head, delimiter, *body])


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
def test_every_piece_of_a_split_table_starts_with_its_header(counter, strategy):
    text = f"# Table doc\n\nSome intro.\n\n{long_table(300)}\n\nAfter the table.\n"
    options = {"max_tokens": 128} if strategy in ("sentence", "paragraph") else {}
    chunks = chunks_of(text, strategy, counter, **options)
    rows = [c for c in chunks if "| item" in c.content]
    assert len(rows) > 5
    for c in rows:  # the chunk's table part starts with the header and delimiter rows
        lines = c.content.split("\n")
        first = next(i for i, line in enumerate(lines) if line.startswith("|"))
        assert lines[first : first + 3][:2] == ["| n | name | description |", "|---|---|---|"], lines[first]
        assert lines[first + 2].startswith("| ")
    assert_header_claim(text, strategy, chunks, counter, max_tokens=128 if options else 256)


def test_the_header_is_counted_in_the_token_limit(counter):
    text = long_table(120)
    for max_tokens in (48, 64, 100):  # the header is 20 tokens: repeated under budgets of 40 and more
        chunks = chunks_of(text, "markdown", counter, max_tokens=max_tokens)
        assert all(c.token_count <= max_tokens for c in chunks)
        assert all(c.token_count == counter.count(c.content) for c in chunks)
        assert sum("repeated_header" in c.metadata for c in chunks) == len(chunks) - 1


def test_a_header_wider_than_half_the_budget_is_not_repeated(counter):
    wide = "| " + " | ".join(f"column number {i} of a very wide table" for i in range(12)) + " |"
    text = "\n".join([wide, "|" + "---|" * 12, *("| " + " | ".join(["x"] * 12) + " |" for _ in range(80))])
    chunks = chunks_of(text, "markdown", counter, max_tokens=64)
    assert len(chunks) > 1 and not any("repeated_header" in c.metadata for c in chunks)


def test_character_cuts_anywhere_and_repeats_nothing(counter):
    text = long_table(100)
    chunks = chunks_of(text, "character", counter, max_chunk_size=300)
    assert len(chunks) > 1 and all(c.content == text[c.start_offset : c.end_offset] for c in chunks)


def test_a_table_in_a_list_item_is_not_a_top_level_table(counter):
    text = "- a list item holding a table:\n\n  " + long_table(60).replace("\n", "\n  ") + "\n"
    chunks = chunks_of(text, "markdown", counter, max_tokens=64)
    assert len(chunks) > 1 and not any("repeated_header" in c.metadata for c in chunks)


def test_the_chunk_file_relocates_links_in_the_repeated_header(counter):
    text = "| [name](other.md) | value |\n|---|---|\n" + "\n".join(f"| row {i} | some value {i} here |" for i in range(60)) + "\n"
    document = parse_markdown(text, "doc.md")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = chunk_text(text, path="doc.md", strategy="markdown", counter=counter, max_tokens=48)
    later = [c for c in chunks if "repeated_header" in c.metadata]
    assert later
    header = later[0].metadata["repeated_header"]
    file_text = chunk_file_text(
        later[0].content, text, later[0].start_offset, later[0].end_offset, link_destinations(document), "doc.md",
        (header["start_offset"], header["end_offset"]),
    )
    assert file_text.startswith("| [name](../other.md) | value |\n|---|---|\n| row ")


# -- generated documents with long tables --------------------------------------------------------

cell = st.sampled_from(["a", "b", "x1", "name", "value", "the cell", "über", "`code`", "[l](x.md)", "1.5", "**b**"])


@st.composite
def table_document(draw):
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        cols = draw(st.integers(1, 4))
        rows = draw(st.integers(1, 40))
        indent = " " * draw(st.integers(0, 3))
        head = indent + "| " + " | ".join(draw(st.lists(cell, min_size=cols, max_size=cols))) + " |"
        delimiter = indent + "|" + "".join(draw(st.sampled_from(["---|", ":--|", "--:|", ":-:|"])) for _ in range(cols))
        body = [
            draw(st.sampled_from(["", " ", "  "])) + "| " + " | ".join(draw(st.lists(cell, min_size=cols, max_size=cols))) + " |"
            for _ in range(rows)
        ]
        before = draw(st.sampled_from(["", "Intro paragraph.\n\n", "## Section\n\n", "# Title\n\n## A\n\n### B\n\n"]))
        parts.append(before + "\n".join([head, delimiter, *body]))
        parts.append(draw(st.sampled_from(["", "After the table.", "```\n| not | a table |\n|---|---|\n```"])))
    text = "\n\n".join(p for p in parts if p) + "\n"
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("\n", "\r\n")
    if draw(st.integers(0, 5)) == 0:
        text = "\ufeff" + text
    return text


@pytest.mark.parametrize("strategy", ["markdown", "tokens", "entry", "semantic"])
@SETTINGS
@given(text=table_document(), max_tokens=st.sampled_from([16, 24, 48, 128]))
def test_split_tables_keep_the_header_claim(counter, strategy, text, max_tokens):
    options = {"max_tokens": max_tokens}
    if strategy == "semantic":
        options["min_tokens"] = max(1, max_tokens // 3)
    chunks = chunks_of(text, strategy, counter, **options)
    assert_header_claim(text, strategy, chunks, counter, max_tokens=max_tokens)


@pytest.mark.parametrize("strategy", ["sentence", "paragraph"])
@SETTINGS
@given(text=table_document(), max_chunk_size=st.sampled_from([100, 150, 400]), max_tokens=st.sampled_from([None, 24, 64]))
def test_split_tables_keep_the_header_claim_by_characters(counter, strategy, text, max_chunk_size, max_tokens):
    chunks = chunks_of(text, strategy, counter, max_chunk_size=max_chunk_size, min_chunk_size=10, max_tokens=max_tokens)
    limit = max_tokens or counter.model_max_tokens
    assert_header_claim(text, strategy, chunks, counter, max_tokens=limit, max_chars=max_chunk_size)
