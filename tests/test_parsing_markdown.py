import pytest
from hypothesis import example, given, strategies as st

from pipeline.errors import PipelineError
from pipeline.parsing.markdown import line_starts_of, parse_markdown


def test_blocks_point_into_the_text():
    text = "# Title\n\nIntro para.\n\n## A\n\n- one\n- two\n\n```py\n# not a heading\n```\n"
    doc = parse_markdown(text)
    kinds = [b.kind for b in doc.blocks]
    assert kinds == ["heading", "paragraph", "heading", "bullet_list", "fence"]
    assert [text[b.start : b.end] for b in doc.blocks][2] == "## A"
    assert doc.title == "Title"
    assert all(b.heading != "not a heading" for b in doc.blocks)


def test_lines_count_only_newlines():
    # \x0c and U+2028 are not line breaks for the parser, so not for us either
    text = "a\x0cb\u2028c\nd\r\ne"
    assert line_starts_of(text) == (0, 6, 9)
    doc = parse_markdown(text)
    assert doc.line_number(text.index("d")) == 2
    assert doc.line_number(text.index("e")) == 3


def test_crlf_bom_and_front_matter():
    text = "\ufeff---\r\ntitle: Hello\r\n---\r\n# Other\r\n\r\n## Part\r\nbody\r\n"
    doc = parse_markdown(text)
    assert doc.front_matter == {"title": "Hello"}
    assert doc.title == "Hello"
    headings = [b for b in doc.blocks if b.kind == "heading"]
    assert [h.heading for h in headings] == ["Other", "Part"]
    assert text[headings[1].start : headings[1].end] == "## Part"
    assert doc.body_start == text.index("# Other")


def test_setext_heading_and_unclosed_fence():
    text = "Title\n=====\n\nPart\n----\n\n~~~~\ncode\n"
    doc = parse_markdown(text)
    assert [(b.level, b.heading) for b in doc.blocks if b.kind == "heading"] == [(1, "Title"), (2, "Part")]
    assert len(doc.code) == 1 and not doc.code[0].closed


def test_longer_closing_fence_closes():
    doc = parse_markdown("```\ncode\n``````\n\nafter\n")
    assert doc.code[0].closed and doc.code[0].end_line == 3


@given(st.text(alphabet="ab #`-\n\r>*1.~", max_size=300))
def test_blocks_are_ordered_slices_of_any_text(text):
    doc = parse_markdown(text)
    previous = 0
    for block in doc.blocks:
        assert previous <= block.start <= block.end <= len(text)
        assert text[block.start : block.end] == text[block.start : block.end].rstrip()
        previous = block.start


# -- lone CR line ends: the chunker sees the blocks CommonMark sees (issue 15) ----------------


def _commonmark_blocks(text):
    """Top-level block kinds and line maps of a plain CommonMark parse (no help from us but front
    matter at the document's start), less the blank lines a map may run over after its block
    (``Block.end_line``)."""
    import re

    from markdown_it import MarkdownIt

    from pipeline.parsing.markdown import use_front_matter

    lines = re.split(r"\r\n?|\n", text)

    def trimmed(start, end):
        while end > start + 1 and not lines[end - 1].strip():
            end -= 1
        return start, end

    return [
        (t.type.removesuffix("_open"), trimmed(*t.map))
        for t in use_front_matter(MarkdownIt("commonmark").enable("table")).parse(text.removeprefix("\ufeff"))
        if t.level == 0 and t.nesting >= 0 and t.map and t.type != "front_matter"
    ]


def test_lone_cr_ends_lines_like_commonmark():
    text = "# T\r\rpara\r\r    code line\r\r```\rfenced\r```\rafter\r"
    doc = parse_markdown(text)
    assert [(b.kind, (b.start_line, b.end_line)) for b in doc.blocks] == _commonmark_blocks(text)
    assert [(c.start_line, c.fenced) for c in doc.code] == [(4, False), (6, True)]
    code = doc.blocks[2]
    assert text[code.start : code.end] == "    code line"  # offsets into the text as read
    assert doc.line_number(text.index("after")) == 10


@given(st.text(alphabet="ab #`-\n\r>*1.~ ", max_size=300))
@example("- 1--\r1")  # a first list item's dashes: no front matter marker
def test_blocks_and_line_maps_agree_with_commonmark_for_any_line_ends(text):
    from pipeline.errors import PipelineError

    try:
        doc = parse_markdown(text)
    except PipelineError:  # front matter that is no YAML mapping
        return
    assert [(b.kind, (b.start_line, b.end_line)) for b in doc.blocks] == _commonmark_blocks(text)


def test_heading_attribute_lists_leave_titles_and_header_paths():
    from pipeline.chunking import chunk_text

    text = (
        "# Python Types Intro { #python-types-intro }\n\nIntro.\n\n"
        "## Motivation {#motivation}\n\nWhy.\n\n### Edit it { #edit-it .tab data-x=\"a b\" }\n\nHow.\n\n"
        "## The {x} syntax\n\nBraces that are no attribute list stay.\n"
    )
    doc = parse_markdown(text)
    assert [b.heading for b in doc.blocks if b.kind == "heading"] == ["Python Types Intro", "Motivation", "Edit it", "The {x} syntax"]
    assert doc.title == "Python Types Intro"
    chunks = chunk_text(text, strategy="markdown")
    assert [c.header_path for c in chunks] == ["", "## Motivation", "## Motivation > ### Edit it", "## The {x} syntax"]
    assert all("{ #" not in c.title and "{#" not in c.title for c in chunks)
    for c in chunks:  # the span is still the exact source, attribute list included
        assert c.content.endswith(text[c.start_offset : c.end_offset])


def test_sublines_are_the_item_row_and_paragraph_starts_inside_each_block():
    """A block's inner split points (``sublines``): list items at any depth, table rows (the
    header's too), paragraphs inside a container; none for a heading, a rule or a fence."""
    text = "# T\n\n- a\n- b\n  - c\n\n| x | y |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n> p1\n>\n> p2\n\npara\n\n---\n\n```\ncode\n```\n"
    blocks = parse_markdown(text).blocks
    assert [(b.kind, b.sublines) for b in blocks] == [
        ("heading", ()),
        ("bullet_list", (2, 3, 4)),
        ("table", (6, 8, 9)),
        ("blockquote", (11, 13)),
        ("paragraph", (15,)),
        ("hr", ()),
        ("fence", ()),
    ]


def test_blocks_are_the_dataclass_its_constructor_makes():
    # parse_markdown builds blocks without Block.__init__ (speed): they must be the same objects
    import dataclasses

    import pytest

    from pipeline.parsing.markdown import Block

    doc = parse_markdown("# Title\n\ntext\n\n- a\n- b\n\n## Sub {#s}\n")
    for block in doc.blocks:
        made = Block(*dataclasses.astuple(block))
        assert made == block and hash(made) == hash(block) and repr(made) == repr(block)
        assert list(vars(made).items()) == list(vars(block).items())
        with pytest.raises(dataclasses.FrozenInstanceError):
            block.kind = "paragraph"


def test_a_first_list_items_dashes_are_no_front_matter_marker():
    # mdit_py_plugins' rule took "a--" of a document's first list item for "---", ending the list
    from pipeline.parsing.markdown import _parser

    tokens = [t for t in _parser().parse("- a--\nb\n") if t.level == 0 and t.nesting >= 0]
    assert [(t.type, t.map) for t in tokens] == [("bullet_list_open", [0, 2])]
    front = [t for t in _parser().parse("---\na: 1\n---\nb\n") if t.type == "front_matter"]
    assert [t.map for t in front] == [[0, 3]]


# -- fences closed by their container, and the build's check of unclosed ones (issue 13) --------------


@pytest.mark.parametrize(
    "text",
    ["> ```yaml\n> a: 1\n", "- item\n\n  ```\n  code\n", "```\ncode\n", "> quoted\n>\n> ```\n> x\n>\n"],
)
def test_a_fence_running_to_the_end_of_the_file_is_an_error(text):
    from pipeline.chunking.document import validate

    parsed = parse_markdown(text, "doc.md")
    assert not parsed.code[0].closed
    with pytest.raises(PipelineError) as info:
        validate(parsed, allow_unclosed_fences=False)
    assert "never closed" in str(info.value) and info.value.line == parsed.code[0].start_line + 1


def test_a_fence_its_quote_ends_is_accepted():
    from pipeline.chunking.document import validate

    text = "> ```yaml\n> a: 1\n\nAfter the quote, outside the fence.\n"
    parsed = parse_markdown(text, "doc.md")
    assert not parsed.code[0].closed and parsed.code[0].end_line == 2
    validate(parsed, allow_unclosed_fences=False)


def test_mkdocs_release_notes_fence_in_quote_is_closed():
    text = "> WARNING: x\n>\n> ```yaml\n> extra_javascript:\n>   - https://x.js\n> ```\n>\n> Or better.\n"
    parsed = parse_markdown(text)
    assert [(f.start_line, f.end_line, f.closed) for f in parsed.code] == [(2, 6, True)]
