"""``entry`` (seed 004): knowledge-base entries, chunked by their type.

- ``definition`` and ``error``: one chunk, ``"<Type>: <title>"`` then the entry's fields.
- ``how_to`` and ``workflow``: one chunk per section present, in the seed's order for YAML/JSON
  (overview, prerequisites, steps, issues, tips) and in document order for markdown (sections
  start at headings named like them, matched case-insensitively; text before the first one
  belongs to it). Each chunk is ``"<Section> for <title>:"`` then the section's source, with the
  seed's context in ``metadata["context"]``: ``position`` ("2 of 5"), ``section_name``,
  ``previous_section``/``previous_summary``, ``next_section``/``next_summary`` (summaries at most
  100 characters, cut at a sentence end when there is one) and ``related_chunks`` (the ids of
  the other chunks of the entry, ``{document_id}_chunk_{i}``: all of them up to
  ``MAX_RELATED_CHUNKS``, else that many nearest by position).
- any other type, or a how-to without sections: one chunk.

Like every strategy, a chunk never exceeds ``max_tokens``: a section over it is split further
(``section_part`` in metadata) and context is given per chunk.

A YAML/JSON entry's chunk shows its fields as readable markdown (``entry_render.py``: a term in
bold and its text, ``**Code:**``/``**Cause:**``/``**Fix:**``, steps as a numbered list), not
the raw YAML/JSON; ``metadata["rendered_from"]`` says so (``yaml`` or ``json``). Its offsets stay
exact: ``source[start_offset:end_offset]`` is the source of the keys and values it shows. A
section over the limit is split on its rendering (items, lines, sentences), each part keeping
the source span it renders. A markdown entry's chunk shows its source span as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from pipeline.chunking.base import Piece
from pipeline.chunking.entry_source import Entry, EntrySection, read_entry
from pipeline.chunking.registry import register
from pipeline.chunking.sentences import sentence_ends
from pipeline.chunking.split import RegionSplitter
from pipeline.chunking.strategies.markdown import effective_max_tokens
from pipeline.chunking.tables import TableHeader
from pipeline.parsing.markdown import ParsedDocument, parse_markdown
from pipeline.parsing.tokens import TokenCounter

SINGLE_TYPES = {"definition": "Definition", "error": "Error"}
MULTI_TYPES = {"how_to", "workflow"}
SUMMARY_CHARS = 100
MAX_RELATED_CHUNKS = 10  # related ids per chunk: bounded, so output grows linearly with the entry


class _Part(NamedTuple):
    """One chunk of a section: ``source[start:end]``, shown as ``text`` when rendered."""

    section: EntrySection
    prefix: str
    start: int
    end: int
    text: str | None
    oversize: bool
    header: TableHeader | None
    part: int
    parts: int


def summarize(text: str, max_length: int = SUMMARY_CHARS) -> str:
    """``text`` on one line, at most ``max_length`` characters: whole if it fits, else up to the
    last sentence end that fits, else cut at a space with ``...``."""
    text = " ".join(text.split())
    if len(text) <= max_length:
        return text
    ends = [e for e in sentence_ends(text) if e <= max_length]
    if ends:
        return text[: ends[-1]]
    cut = text.rfind(" ", 0, max_length - 2)
    return text[: cut if cut > 0 else max_length - 3].rstrip() + "..."


@register("entry")
@dataclass
class EntryStrategy:
    counter: TokenCounter
    max_tokens: int = 256
    name: ClassVar[str] = "entry"

    def __post_init__(self) -> None:
        self.max_tokens = effective_max_tokens(self.max_tokens, self.counter, self.name)

    def cache_key(self) -> str:
        return f"{self.name}-{self.max_tokens}"

    def pieces(self, document: ParsedDocument) -> list[Piece]:
        entry = read_entry(document)
        kind = entry.type.lower().replace("-", "_").replace(" ", "_")
        title = entry.title
        if kind in MULTI_TYPES and entry.sections:
            units = [(s, f"{s.label} for {title}:\n\n" if title else f"{s.label}:\n\n") for s in entry.sections]
        else:
            start, end = entry.whole
            if start >= end:
                return []
            label = SINGLE_TYPES.get(kind, "Entry")
            body = entry.body
            full = EntrySection("full", label, start, end, body.text if body else document.text[start:end], body)
            units = [(full, f"{label}: {title}\n\n" if title else "")]

        splitter = RegionSplitter(document, self.counter.spans(document.text), self.counter)
        planned: list[_Part] = []
        for section, prefix in units:
            prefix = self.counter.truncate(prefix.rstrip(), self.max_tokens // 2) + "\n\n" if prefix else ""
            budget = self.max_tokens - (self.counter.count(prefix) - self.counter.specials if prefix else 0)
            if section.rendering is None:
                cuts = [(s.start, s.end, None, s.oversize, s.header) for s in splitter.split(section.start, section.end, budget)]
            else:
                cuts = self._rendered_cuts(section, budget, document.path)
            for part, (start, end, text, oversize, header) in enumerate(cuts):
                planned.append(_Part(section, prefix, start, end, text, oversize, header, part, len(cuts)))

        total = len(planned)
        pieces = []
        for i, (section, prefix, start, end, text, oversize, header, part, parts) in enumerate(planned):
            metadata: dict[str, Any] = {
                "entry_type": entry.type or "unknown",
                "parent_entry_id": entry.entry_id,
                "parent_title": title,
                **entry.metadata,
            }
            if text is not None:
                metadata["rendered_from"] = entry.source_format
            if section.name == "full":
                metadata["section_type"] = "full"
            else:
                metadata["section"] = section.name
            if parts > 1:
                metadata.update(section_part=part + 1, section_parts=parts)
            if total > 1:
                metadata["context"] = self._context(document, planned, i)
            pieces.append(
                Piece(
                    start=start,
                    end=end,
                    title=f"{section.label}: {title}" if title else section.label,
                    header_path=section.label if section.name != "full" else "",
                    heading=section.label if section.name != "full" else "",
                    prefix=prefix,
                    boundary_type="section" if parts == 1 else "paragraph",
                    oversize=oversize,
                    table_header=header,
                    text=text,
                    metadata=metadata,
                )
            )
        return pieces

    def _rendered_cuts(self, section: EntrySection, budget: int, path: str) -> list[tuple]:
        """A rendered section split like markdown within ``budget``: ``(start, end, text,
        oversize, None)`` per part, ``source[start:end]`` being what ``text`` renders (a part
        tracing to no source, only markers, joins the next part, or the last one)."""
        rendering = section.rendering
        shown = rendering.text
        splitter = RegionSplitter(parse_markdown(shown, path), self.counter.spans(shown), self.counter)
        parts: list[list] = []  # rendered start, end, repeated table header, oversize
        carry: list | None = None
        for span in splitter.split(0, len(shown), budget):
            header = shown[span.header.start : span.header.end] if span.header else ""
            part = [span.start, span.end, header, span.oversize]
            if carry is not None:
                part = [carry[0], span.end, carry[2], span.oversize]
                carry = None
            if rendering.source_span(part[0], part[1]) is None:
                carry = part
                continue
            parts.append(part)
        if carry is not None and parts:
            parts[-1][1] = carry[1]
        return [(*rendering.source_span(a, b), header + shown[a:b], oversize, None) for a, b, header, oversize in parts]

    def _context(self, document: ParsedDocument, planned: list[_Part], i: int) -> dict[str, Any]:
        def summary(j: int) -> str:
            part = planned[j]
            if part.parts == 1:
                return summarize(part.section.summary_text)
            return summarize(part.text if part.text is not None else document.text[part.start : part.end])

        total = len(planned)
        context: dict[str, Any] = {"position": f"{i + 1} of {total}", "section_name": planned[i].section.name}
        if i > 0:
            context.update(previous_section=planned[i - 1].section.name, previous_summary=summary(i - 1))
        if i + 1 < total:
            context.update(next_section=planned[i + 1].section.name, next_summary=summary(i + 1))
        # Indices; ``assemble`` turns them into chunk ids (only it knows the document id).
        # At most MAX_RELATED_CHUNKS, the nearest by position: listing every other chunk grows
        # with the square of the entry's chunk count (a 108 KB entry printed 63 MB).
        nearest = sorted((j for j in range(max(0, i - MAX_RELATED_CHUNKS), min(total, i + MAX_RELATED_CHUNKS + 1)) if j != i),
                         key=lambda j: (abs(j - i), j))
        context["related_chunks"] = sorted(nearest[:MAX_RELATED_CHUNKS])
        return context


__all__ = ["Entry", "EntryStrategy", "summarize"]
