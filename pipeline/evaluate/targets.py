"""Where a question's answer lies in a built site: a document, or a section of one (pure).

An ``expect`` string is ``path/doc.md`` (anywhere in that document) or ``path/doc.md#Heading``
(that section, its subsections included). The path is the document's source path below the
site root, as hits name it (``Hit.source``). The heading is compared by its words
(``heading_words``): case, markup, punctuation and ``{ #id }`` attributes do not matter, so the
heading's text, its slug (``#start-with-the-default``) and an explicit ``{ #id }`` all match.
A fragment may name a path of headings, ``#Parent > Child``, where one name is ambiguous. The
document's own title (its ``# H1``, or the title its overview's chunks carry) names its overview:
the chunks before its first section.

``Inventory`` is what a site holds (documents, their titles and header paths, read through the
Site client); ``resolve`` turns an ``expect`` into a ``Target`` checked against it, or says why it
points at nothing.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from pipeline.simhash import words

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_ATTRS = re.compile(r"\s*\{[^}]*\}\s*$")
_ID = re.compile(r"\{[^}]*#([^\s}]+)[^}]*\}\s*$")
_LEVEL = re.compile(r"^\s*#{1,6}\s+")
SEPARATOR = " > "
"""Between the headings of a header path (``## Setup > ### Linux``), and of a fragment."""


def heading_words(text: str) -> tuple[str, ...]:
    """The words of a heading as compared: links reduced to their text, ``{ ... }`` attributes
    and ``#`` markers dropped, normalised as SimHash normalises (NFKC, lower case); a slug
    (``start-with-the-default``) has the same words as its heading."""
    text = _ATTRS.sub("", _LEVEL.sub("", text))
    return tuple(words(_LINK.sub(r"\1", text)))


def heading_names(text: str) -> set[tuple[str, ...]]:
    """Every name a heading answers to: its words, and those of its explicit ``{ #id }``."""
    names = {heading_words(text)}
    explicit = _ID.search(text)
    if explicit:
        names.add(tuple(words(explicit.group(1))))
    names.discard(())
    return names


def split_path(header_path: str) -> list[str]:
    """The headings of a header path, outermost first (``[]`` for a document's overview)."""
    return [part for part in header_path.split(SEPARATOR) if part.strip()] if header_path else []


@dataclass(frozen=True)
class Target:
    """One place a question's answer is: a document (``heading`` empty, not ``overview``), a
    section (``heading``: the words of one or more consecutive headings), or the overview."""

    source: str
    heading: tuple[tuple[str, ...], ...] = ()
    overview: bool = False
    label: str = ""  # as the author wrote it, or as made: ``doc.md#Heading``

    def matches(self, source: str, header_path: str) -> bool:
        """Whether a chunk of ``source`` at ``header_path`` lies in this target."""
        if source != self.source:
            return False
        if self.overview:
            return not split_path(header_path)
        if not self.heading:
            return True
        names = [heading_names(h) for h in split_path(header_path)]
        n = len(self.heading)
        return any(all(self.heading[j] in names[i + j] for j in range(n)) for i in range(len(names) - n + 1))

    @property
    def document_level(self) -> bool:
        return not self.heading and not self.overview


def section_target(source: str, header_path: str) -> Target:
    """The target of exactly one section of the site (its header path from the top)."""
    parts = split_path(header_path)
    label = source + ("#" + " > ".join(plain_heading(p) for p in parts) if parts else "")
    if not parts:
        return Target(source, overview=True, label=f"{source} (overview)")
    return Target(source, tuple(heading_words(p) for p in parts), label=label)


def plain_heading(heading: str) -> str:
    return _ATTRS.sub("", _LEVEL.sub("", _LINK.sub(r"\1", heading))).strip()


@dataclass
class DocumentInfo:
    source: str
    topic: str
    title: str
    header_paths: list[str] = field(default_factory=list)  # in document order, each once
    overview_titles: tuple[str, ...] = ()  # what its overview's chunks are titled ("Overview" without a title)


@dataclass
class Inventory:
    """The documents of a site and their sections, as its index lists them."""

    documents: dict[str, DocumentInfo] = field(default_factory=dict)

    def add(self, source: str, topic: str, title: str, header_paths: list[str], overview_titles: tuple[str, ...] = ()) -> None:
        self.documents[source] = DocumentInfo(source, topic, title, list(dict.fromkeys(header_paths)), tuple(dict.fromkeys(overview_titles)))

    def sections(self) -> list[tuple[str, str]]:
        """Every (source, header path) of the site, in site order."""
        return [(d.source, h) for d in self.documents.values() for h in d.header_paths]

    def resolve(self, expect: str) -> Target:
        """The target ``expect`` names; ValueError saying why when it points at nothing."""
        if not isinstance(expect, str) or not expect.strip():
            raise ValueError("expect must be a non-empty string: 'path/doc.md' or 'path/doc.md#Heading'")
        path, _, fragment = expect.strip().partition("#")
        source = path.strip().lstrip("/")
        while source.startswith("./"):
            source = source[2:]
        doc = self.documents.get(source)
        if doc is None:
            close = difflib.get_close_matches(source, list(self.documents), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"no document {source!r} in the site{hint}")
        fragment = fragment.strip()
        if not fragment:
            return Target(source, label=expect.strip())
        heading = tuple(heading_words(part) for part in fragment.split(SEPARATOR.strip()))
        if any(not h for h in heading):
            raise ValueError(f"heading {fragment!r} has no words to match")
        target = Target(source, heading, label=expect.strip())
        if any(target.matches(source, h) for h in doc.header_paths):
            return target
        if len(heading) == 1 and heading[0] in {heading_words(t) for t in (doc.title, *doc.overview_titles)}:
            return Target(source, overview=True, label=expect.strip())
        known = [plain_heading(split_path(h)[-1]) for h in doc.header_paths if h]
        listed = ", ".join(repr(k) for k in dict.fromkeys(known)) if known else "none"
        raise ValueError(f"no heading {fragment!r} in {source} (its sections: {_clip(listed)})")


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
