"""Markdown fragments that exercise the places markdown-it-pyrs and markdown-it-py could disagree,
and ``both``: one document read by each (the comparison ``tests/test_parsing_rsblocks.py`` runs)."""

from __future__ import annotations

from dataclasses import astuple

# Fragments of markdown that exercise the block rules and the places the two parsers could
# disagree: container nesting and laziness, fences closed or not, indented code, tables,
# setext headings, reference definitions, HTML blocks, front matter markers, tabs, CR, BOM,
# NUL, multi-byte characters (byte offsets).
FRAGMENTS = [
    "# H\n", "## H2 ##\n", "### H3 { #id .cls }\n", "#\n", "####### seven\n", "text line\n", "more *text* `code`\n", "\n", "\n\n",
    "- item\n", "  - nested\n", "    - deeper\n", "1. one\n", "2) two\n", "10. ten\n", "   para in item\n", "-\n", "- \n",
    "> quote\n", "> - q item\n", ">> deep\n", "> > > deeper\n", "> ```\n", ">\n",
    "```\n", "~~~py\n", "````\n", "```js title\n", "    indented code\n", "\tcode tab\n", "\t- tab item\n", " \t- mixed\n",
    "| a | b |\n", "|---|---|\n", "| 1 | 2 |\n", "a | b\n", "--- | ---\n", "|:-:|--:|\n", "| x |\n", "| --- |\n",
    "---\n", "----\n", "...\n", "title: t\n", "tags: [a, b]\n", "bad: [\n", "- - -\n", "***\n", "___\n",
    "Setext\n===\n", "Two\n---\n", "[ref]: http://x\n", "[ref2]:\n  /url 'title'\n", "<div>\n", "</div>\n", "<!-- c -->\n",
    "<pre>\n", "</pre>\n", "<script>\n", "<?php ?>\n", "<![CDATA[\n", "]]>\n", "<custom-el>\n",
    "* star\n", "+ plus\n", "\r\n", "\r", "x\ry\r\n", "\ufeff", "é accent ü\n", "日本語の文\n", "emoji 😀 ok\n", "\0nul\n",
    "  \n", "   ", "\\# escaped\n", "    - code not list\n", "1.\n", " 1. one\n", "- [ ] task\n", "term\n: def\n",
]



def both(text: str, label: str):
    """(markdown-it-pyrs reading or None when it declines, markdown-it-py reading), each a
    comparable tuple or an error string."""
    from pipeline.errors import PipelineError
    from pipeline.parsing import markdown, rsblocks

    def key(document):
        return ([astuple(b) for b in document.blocks], [astuple(c) for c in document.code],
                document.front_matter, document.body_start, document.line_starts)

    def parse():
        try:
            return key(markdown.parse_markdown(text, label))
        except PipelineError as exc:
            return f"error: {exc}"

    rust_raw = rsblocks.read_blocks(text.removeprefix(markdown.BOM))
    rust = parse() if rust_raw is not None else None
    original = rsblocks.read_blocks
    rsblocks.read_blocks = lambda src: None
    try:
        python = parse()
    finally:
        rsblocks.read_blocks = original
    return rust, python

