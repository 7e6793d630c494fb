"""Do markdown-it-pyrs and markdown-it-py give the same parsed documents?

    .venv/bin/python -m bench.parser_identity [--random 20000] [--seed 1]

``parse_markdown`` reads its blocks from markdown-it-pyrs (``pipeline/parsing/rsblocks.py``) and
falls back to markdown-it-py where that reader declines. This compares, document by document,
the whole ``ParsedDocument`` (blocks with offsets, lines, headings and split points, code blocks,
front matter or its error, body start) of both readers on: ``content/``, ``bench/markdown_set``,
``bench/realdocs_set``, the real docs trees in shared/realdocs, the chunking bench's markdown
corpus, Chroma's corpora, and random documents glued from markdown fragments (lists, tables,
fences, quotes, front matter, HTML, tabs, CR line ends, non-ASCII). Prints the counts, the
documents where markdown-it-py decided (fallbacks) and the first differences; exits 1 on any.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import astuple
from pathlib import Path

from bench.speed import REPO_ROOT

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


def corpus() -> list[tuple[str, str]]:
    """(label, text) of every real document the comparison reads."""
    from bench.speed.chunking import chroma_corpus, markdown_corpus

    # the real docs trees beside the checkout (``../shared``), else where these machines keep them
    realdocs = next((p for p in (REPO_ROOT.parent / "shared" / "realdocs", Path("/work/shared/realdocs")) if p.is_dir()), None)
    roots = [REPO_ROOT / "content", REPO_ROOT / "bench" / "markdown_set", REPO_ROOT / "bench" / "realdocs_set",
             *([realdocs] if realdocs else [])]
    docs = []
    for root in roots:
        for path in sorted(root.rglob("*.md")) if root.is_dir() else []:
            label = path.relative_to(realdocs.parent).as_posix() if realdocs and path.is_relative_to(realdocs) else str(path)
            docs.append((label, path.read_text(encoding="utf-8", errors="surrogateescape")))
    docs += markdown_corpus()[0]
    docs += chroma_corpus()
    return docs


def random_documents(n: int, seed: int) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        parts = [rnd.choice(FRAGMENTS) for _ in range(rnd.randint(1, 30))]
        if rnd.random() < 0.25:  # front matter first: opened, maybe closed
            parts = ["---\n", *rnd.sample(["title: x\n", "a: 1\n", "---\n", "...\n", "  ---\n", "--- x\n"], rnd.randint(1, 3)), *parts]
        if rnd.random() < 0.3:  # indent some lines: laziness and container continuation
            parts = [(" " * rnd.randint(1, 5)) + p if rnd.random() < 0.3 else p for p in parts]
        out.append((f"random/{i}", "".join(parts)))
    return out


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


def compare(docs, log) -> tuple[int, int, list[str]]:
    """(documents compared, fallbacks, labels that differ)."""
    fallbacks, differ = 0, []
    for label, text in docs:
        rust, python = both(text, label)
        if rust is None:
            fallbacks += 1
            log(f"  fallback to markdown-it-py: {label}")
        elif rust != python:
            differ.append(label)
            if len(differ) <= 5:
                log(f"  DIFFER {label}: {text[:300]!r}")
    return len(docs), fallbacks, differ


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--random", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    from pipeline.parsing import rsblocks

    if not rsblocks.available():
        print("markdown-it-pyrs is not installed: nothing to compare", file=sys.stderr)
        return 1

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    bad = 0
    for name, docs in (("real documents", corpus()), (f"random documents (seed {args.seed})", random_documents(args.random, args.seed))):
        n, fallbacks, differ = compare(docs, log)
        bad += len(differ)
        print(f"{name}: {n} compared, {fallbacks} read by markdown-it-py (fallback), {len(differ)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
