"""``markdown``: sections at ``##`` and ``###`` (seed 000), split further to fit the model.

Chunk 0 is the overview (title and text before the first split heading). An H1 after the
title also starts a section (READMEs with several H1s); the title never heads a section.
A section over the token limit splits at block boundaries, then list items, lines, sentences,
words; a fenced code block is never cut. The pieces of a block that had to be cut are packed
among themselves, never with the blocks around it (``RegionSplitter(nested=True)``), and a full
stop before a lowercase word ends a sentence (lowercased text). The limit counts the heading
context prepended to every chunk. docs/decisions/chunking.md has the measurements behind each rule.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable, ClassVar

from pipeline.chunking.base import Piece
from pipeline.chunking.registry import register
from pipeline.chunking.sections import Section, atx, context_prefix, heading_sections
from pipeline.chunking.split import BLOCKS, LINES, SENTENCES, SUBBLOCKS, TOKENS, WORDS, RegionSplitter
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.tokens import TokenCounter

BOUNDARY_NAMES = {BLOCKS: "paragraph", SUBBLOCKS: "paragraph", LINES: "line", SENTENCES: "sentence", WORDS: "word", TOKENS: "token"}


MIN_MAX_TOKENS = 16  # below this a heading prefix leaves no room for text


def effective_max_tokens(requested: int, counter: TokenCounter, strategy: str, *, asked: bool = True) -> int:
    """``requested`` clipped to what the embedding model reads, with a warning when clipped and
    ``asked`` (the user chose the value; a strategy's own default above the model, such as the
    seeds' 500 and 750, is clipped without one: nothing the user did is undone).

    Raises PipelineError unless ``requested`` is an integer of at least ``MIN_MAX_TOKENS``.
    """
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < MIN_MAX_TOKENS:
        raise PipelineError(f"{strategy}: max_tokens must be an integer >= {MIN_MAX_TOKENS}, not {requested!r}")
    limit = counter.model_max_tokens
    if limit is not None and requested > limit and not asked:
        return limit
    if limit is not None and requested > limit:
        warnings.warn(
            f"{strategy}: max_tokens {requested} is above what the embedding model reads ({limit}); using {limit}",
            stacklevel=3,
        )
        return limit
    return requested


# Heading context for a piece of ``section`` starting at an offset.
ContextFor = Callable[[Section, int], str]


def split_sections(
    document: ParsedDocument,
    sections: list[Section],
    *,
    counter: TokenCounter,
    max_tokens: int,
    context: ContextFor | None = None,
    nested: bool = False,
    lowercase_sentences: bool = False,
) -> list[Piece]:
    """Pieces for ``sections``, each within ``max_tokens`` including its heading context.

    ``context(section, span_start)`` gives that context; by default the title and the headings
    above the span (``context_prefix``). ``nested`` and ``lowercase_sentences`` are the
    ``RegionSplitter`` options for cutting a section over the budget.
    """
    splitter = RegionSplitter(document, counter.spans(document.text), counter, nested=nested, lowercase_sentences=lowercase_sentences)
    title = document.title or "Overview"

    title_block = document.first_h1
    contexts: dict[tuple, str] = {}

    def default_context(section: Section, span_start: int) -> str:
        headings = [*section.ancestors, section.heading] if section.heading else []
        # ``context_prefix`` depends on the span's start only through which of these headings
        # start before it and whether the title heading does: asked for every candidate start
        # of every section, so remembered by that.
        key = (
            title_block is not None and title_block.start >= span_start,
            *[h.start for h in headings if h.start < span_start],
        )
        prefix = contexts.get(key)
        if prefix is None:
            prefix = contexts[key] = context_prefix(
                document, headings, span_start, counter=counter, max_prefix_tokens=max_tokens // 2
            )
        return prefix

    def most_context_tokens(headings: list) -> int:
        """At least the tokens of any prefix ``default_context`` gives a piece of a section under
        ``headings``: that prefix is some of these lines (title, headings), joined by newlines,
        and a word piece never spans a newline, so its count is at most all of theirs."""
        lines = [f"# {title_text}"] if title_text else []
        lines.extend(atx(h) for h in headings)
        return tokens_of("\n".join(lines) + "\n\n") if lines else 0

    title_text = document.title
    # The bound holds for the default context, and where pieces never span a newline.
    bounded = context is None and getattr(counter, "by_runs", False)
    context = context or default_context
    prefix_tokens: dict[str, int] = {"": 0}  # a section's candidate prefixes repeat across sections

    def tokens_of(prefix: str) -> int:
        n = prefix_tokens.get(prefix)
        if n is None:
            n = prefix_tokens[prefix] = counter.count(prefix) - counter.specials
        return n

    pieces: list[Piece] = []
    for section in sections:
        # Budget for the longest prefix a piece of this section can get. The prefix holds the
        # headings above the piece, oldest dropped first when too long, so each heading's start
        # gives a different one: try them all.
        headings = [*section.ancestors, section.heading] if section.heading else []
        # A section that fits beside every heading line it could carry is one span, whatever
        # its exact prefix: ``split`` would find that it fits and return it whole.
        spans = splitter.whole(section.start, section.end, max_tokens - most_context_tokens(headings)) if bounded else None
        if spans is None:
            marks = [*headings, *([document.first_h1] if document.first_h1 else [])]
            points = {section.start, section.end, *(h.start for h in marks), *(h.start + 1 for h in marks)}
            longest = max(tokens_of(context(section, o)) for o in points)
            budget = max_tokens - longest
            spans = splitter.split(section.start, section.end, budget)
        for part, span in enumerate(spans):
            prefix = context(section, span.start)
            metadata = {"section_part": part + 1, "section_parts": len(spans)} if len(spans) > 1 else {}
            pieces.append(
                Piece(
                    start=span.start,
                    end=span.end,
                    title=section.heading.heading if section.heading else title,
                    header_path=section.header_path,
                    heading=atx(section.heading) if section.heading else "",
                    prefix=prefix,
                    boundary_type="section" if len(spans) == 1 else BOUNDARY_NAMES[span.level],
                    oversize=span.oversize,
                    table_header=span.header,
                    metadata=metadata,
                )
            )
    return pieces


@register("markdown")
@dataclass
class MarkdownStrategy:
    """Split at ``#`` (after the title), ``##``, ``###``; ``min_lines``: documents of at most this
    many lines stay one section."""

    counter: TokenCounter
    # Below the model's 256: chunks filled to the model's limit retrieve no better and are
    # larger than they need to be (docs/decisions/chunking.md: IoU +0.7 on both sets, recall unchanged).
    max_tokens: int = 224
    min_lines: int = 0
    name: ClassVar[str] = "markdown"
    # ``#`` too: an H1 after the title starts a top-level section (READMEs with several H1s);
    # the title H1 itself splits but is never a section heading (see ``heading_sections``).
    levels: ClassVar[tuple[int, ...]] = (1, 2, 3)

    def __post_init__(self) -> None:
        self.max_tokens = effective_max_tokens(self.max_tokens, self.counter, self.name)

    def cache_key(self) -> str:
        return f"markdown-{self.max_tokens}" + (f"-l{self.min_lines}" if self.min_lines else "")

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        levels = () if len(document.line_starts) <= self.min_lines else self.levels
        title = document.first_h1 if document.first_h1 and document.first_h1.heading == document.title else None
        sections = heading_sections(document, levels, title=title)
        return split_sections(
            document, sections, counter=self.counter, max_tokens=self.max_tokens, nested=True, lowercase_sentences=True
        )
