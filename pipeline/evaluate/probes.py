"""Questions a site makes of itself when its author gave none: each section's heading.

One probe per section: its heading as a reader would type it (links reduced to their text,
markup and ``{ #id }`` dropped), the document's title for its overview; its target is that very
section. A section its own heading cannot bring into the first k is hard to find for anyone who
names its subject; two sections with one heading (``Example``, ``Run it``) compete for it.

Why headings (docs/DECISIONS.md "Evaluation: probes are section headings"): on the two held question
sets no probe made of a site's own text, headings, first sentences, every sentence, keywords,
tracks the real questions' score per document; headings order the two sets as their questions
do, are the cheapest to ask, and their failures read plainly. ``bench/site_eval.py`` measures
the tracking on every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.evaluate.questions import Question
from pipeline.evaluate.targets import plain_heading, section_target, split_path
from pipeline.simhash import words

KIND = "heading"


@dataclass(frozen=True)
class Section:
    """One section of the site: where it is and its document's title."""

    source: str
    header_path: str
    document_title: str


def body(chunk_text: str) -> str:
    """A chunk's text without its heading context (the heading lines before its first line of text)."""
    lines = chunk_text.split("\n")
    i = 0
    while i < len(lines) and (not lines[i].strip() or lines[i].lstrip().startswith("#")):
        i += 1
    return "\n".join(lines[i:])


def probe_text(section: Section) -> str:
    """The probe of ``section``: its heading, or its document's title for the overview."""
    return plain_heading(split_path(section.header_path)[-1]) if section.header_path else section.document_title


def make_probes(sections: Sequence[Section]) -> list[Question]:
    """One probe per section whose probe has a word, in site order."""
    out = []
    for section in sections:
        text = " ".join(probe_text(section).split())
        if words(text):
            target = section_target(section.source, section.header_path)
            out.append(Question(text, (target,), "probe", target.label, KIND))
    return out
