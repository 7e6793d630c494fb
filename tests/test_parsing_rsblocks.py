"""markdown-it-pyrs reads the same blocks as markdown-it-py, or declines (``rsblocks``)."""

import pytest
from hypothesis import example, given, settings, strategies as st

from parser_pair import FRAGMENTS, both
from pipeline.parsing import rsblocks
from pipeline.parsing.markdown import parse_markdown

pytest.importorskip("markdown_it_pyrs")


def _same(text):
    rust, python = both(text, "t.md")
    assert rust is None or rust == python, text
    return rust is not None


def test_a_typical_document_is_read_by_rust_and_matches():
    text = (
        "---\ntitle: T\ntags: [a]\n---\n# Title\n\nIntro *text*.\n\n## Part\n\n- a\n- b\n  - c\n\n  more\n\n"
        "| x | y |\n|---|:-:|\n| 1 | 2 |\n\n```py\ncode\n```\n\n    indented\n\n> quote\n> - item\n\n"
        "Setext\n------\n\n<div>\nhtml\n</div>\n\n[ref]: http://x\n\n1. one\n2. two\n\n\n"
    )
    assert rsblocks.read_blocks(text) is not None
    assert _same(text)
    assert parse_markdown(text).front_matter == {"title": "T", "tags": ["a"]}


@pytest.mark.parametrize(
    "text",
    [
        "> quote\n2) lazy list that cannot interrupt a paragraph\n",  # markdown-it-py ends the quote here
        "> - item\n-\n",
        "text\n| --- |\n",  # a header without a pipe: a table to the Rust rule only
        "x\n<custom-el>\n| --- |\n",  # the Rust table rule ends the paragraph as a terminator
        "> q\n| a | b |\n|---|---|\n",
        "* star\n   <script>\n\n    - deeper\n",  # the Rust rule ends this HTML block at the blank line
        "> " * 20 + "deep\n",  # markdown-it-py's maxNesting (20 levels) decides
        "- " * 12 + "deep\n",
    ],
)
def test_constructs_the_parsers_read_differently_go_to_markdown_it_py(text):
    assert rsblocks.read_blocks(text) is None
    assert not _same(text)  # parse_markdown reads them with markdown-it-py


@pytest.mark.parametrize(
    "text",
    [
        "---\na: 1\n---\nbody\n",
        "----\na: 1\n------  \nbody\n",  # a longer closing marker, trailing spaces
        "---\na: 1\n...\nbody\n",  # YAML's document end
        "---\na: 1\n    ---\n---\n",  # an indented marker does not close
        "---\na: 1\n",  # unclosed: no front matter (a rule and a paragraph)
        "--- x\na: 1\n---\n",
        "---\n---\n",
        "\ufeff---\r\na: 1\r\n---\r\n# T\r\n",
        "---\na: [\n---\n",  # YAML error: the same message and line
        "---\na: 1\n---\n   ",  # a final line of spaces is no line to markdown-it-py
    ],
)
def test_front_matter_rule_is_mdit_py_plugins(text):
    assert _same(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=25))
def test_random_documents_from_fragments(parts):
    _same("".join(parts))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab #`~-|:\n\r\t>*1.)<!", max_size=200))
@example("<!a")  # a declaration with a lowercase letter: an HTML block only for markdown-it-py
@example("- 1--\r1")  # a first list item's text is no front matter marker (it ended the list)
def test_random_text(text):
    _same(text)


def test_byte_offsets_of_multibyte_text_map_to_the_right_lines():
    text = "# Ünïcödé 日本\n\nçà et là 😀\n\n- é\n- 語\n\n```\n😀\n```\n"
    assert rsblocks.read_blocks(text) is not None
    assert _same(text)
    doc = parse_markdown(text)
    assert [(b.kind, b.start_line, b.end_line) for b in doc.blocks] == [
        ("heading", 0, 1), ("paragraph", 2, 3), ("bullet_list", 4, 6), ("fence", 7, 10)
    ]


def test_nesting_below_the_margin_is_read_by_rust():
    for text in ("> " * 12 + "deep\n", "- " * 7 + "deep\n"):
        assert rsblocks.read_blocks(text) is not None
        assert _same(text)


@pytest.mark.parametrize("text", ["- " * 30_000 + "x\n", ">" * 100_000 + " x\n", "1. " * 30_000 + "x\n"])
def test_documents_deep_enough_to_crash_the_rust_tree_never_reach_it(text):
    # markdown-it-pyrs frees a tree this deep recursively and overflows the stack (a segfault):
    # the line-prefix bound sends them to markdown-it-py before any Rust tree is built
    assert rsblocks.read_blocks(text) is None
    assert len(parse_markdown(text).blocks) == 1


@pytest.mark.parametrize("text", ["<!doctype html>\n", "<!a\n", "- <!x>\n", "> <!element b>\n"])
def test_a_lowercase_declaration_is_left_to_markdown_it_py(text):
    # the Rust rule reads a paragraph where markdown-it-py (CommonMark 0.31) opens an HTML block
    assert rsblocks.read_blocks(text) is None
    assert parse_markdown(text).blocks[0].kind in ("html_block", "bullet_list", "blockquote")
