"""What a vault note's own syntax gives its chunks (pure): its wikilinks and embeds written as
markdown a static host serves, the documents it links to, its tags and aliases.

A chunk file lives in ``<dir>/_chunks/`` (``parsing/links.py``), so each wikilink becomes a
markdown link relative to that folder: ``[[Note B#Part|see]]`` in ``a/x.md`` is
``[see](../../b/Note%20B.md#part)`` when ``Note B`` resolves to ``b/Note B.md``
(``vault/names.py``). The display text is Obsidian's: the alias, else ``Note B > Part`` (a heading
or ``^block`` reference), else the target as written. An embed of a note is a link to it; of a
published image, an image; of an attachment the site leaves out (the default), or a link that
names no file, the display text alone, never a link that would 404 (the latter reported, once
per note). The chunk record's ``content`` and the manifest's offsets keep the source as written.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import quote, unquote

from pipeline.parsing.links import Destination
from pipeline.parsing.markdown import ParsedDocument
from pipeline.parsing.wikilinks import WikiLink, vault_syntax
from pipeline.siteformat.tree import CHUNKS_DIR
from pipeline.vault.names import IMAGE_SUFFIXES, VaultNames

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_ESCAPE = re.compile(r"([\\`\[\]<])")  # what would end the link text or start code or HTML
_SIZE = re.compile(r"\d+(x\d+)?")
_SLUG_DROP = re.compile(r"[^\w\- ]")
_FRAGMENT_SAFE = "-._~!$&'()*+,;=:@/?"


@dataclass(frozen=True)
class Note:
    """A vault note's contribution to its chunk files, manifest and spec record."""

    edits: tuple[Destination, ...]  # each wikilink and embed as its chunk-file text
    links: tuple[str, ...]  # the documents it links to (site paths), in order of first link, itself excluded
    tags: tuple[str, ...]  # front matter ``tags`` and inline ``#tags``, lowercase, without ``#``
    aliases: tuple[str, ...]  # front matter ``aliases``
    unresolved: tuple[str, ...]  # wikilinks as written that name no file of the vault


def slug(heading: str) -> str:
    """A heading's fragment as markdown renderers write it (lowercase, punctuation dropped,
    spaces as hyphens)."""
    return _SLUG_DROP.sub("", heading.strip().lower()).replace(" ", "-")


def _escape(text: str) -> str:
    return _ESCAPE.sub(r"\\\1", text)


def _display(link: WikiLink) -> str:
    if link.alias and not (link.embed and _SIZE.fullmatch(link.alias)):
        return link.alias
    part = link.heading or (f"^{link.block}" if link.block else "")
    if not link.target:
        return part
    return f"{link.target} > {part}" if part else link.target


@lru_cache(maxsize=4096)
def _relative(target: str, folder: str) -> str:
    """``target`` (a site path) from the chunk folder of a document in ``folder``, percent-encoded."""
    return quote(posixpath.relpath(target, posixpath.join(folder, CHUNKS_DIR)))


def _href(target: str, source: str, link: WikiLink) -> str:
    """``target`` (a site path) as seen from ``source``'s chunk folder, with the link's fragment."""
    href = _relative(target, posixpath.dirname(source))
    fragment = slug(link.heading) if link.heading else (f"^{link.block}" if link.block else "")
    return f"{href}#{quote(fragment, safe=_FRAGMENT_SAFE)}" if fragment else href


def _names(value: Any) -> list[str]:
    """A front matter list, or one string (tags: split at commas and spaces)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return []


def front_matter_tags(front: dict) -> list[str]:
    out = []
    for value in (front.get("tags"), front.get("tag")):
        for item in _names(value):
            out += [t for t in re.split(r"[,\s]+", item) if t]
    return out


def read_note(document: ParsedDocument, source: str, names: VaultNames) -> tuple[Note, list[Destination]]:
    """The note ``source`` (a site path) parsed as ``document``, and its markdown link
    destinations (``parsing.links.link_destinations``'s, from the same parse), which count among
    its links."""
    wikilinks, inline_tags, destinations = vault_syntax(document)
    edits, unresolved = [], []
    linked: list[tuple[int, str]] = []
    for link in wikilinks:
        display = _display(link)
        target = names.resolve(link.target, source) if link.target else source
        if target is None:
            unresolved.append(document.text[link.start : link.end])
        elif target in names.published:
            if target in names.documents and target != source:
                linked.append((link.start, target))
            href = _href(target, source, link)
            image = link.embed and posixpath.splitext(target)[1].lower() in IMAGE_SUFFIXES
            edits.append(Destination(link.start, link.end, f"{'!' if image else ''}[{_escape(display)}]({href})"))
            continue
        edits.append(Destination(link.start, link.end, _escape(display)))  # nothing to link to: the text alone
    folder = posixpath.dirname(source)
    for d in destinations:
        raw = document.text[d.start : d.end].strip("<>")
        path = unquote(raw.split("#", 1)[0].split("?", 1)[0])
        if not path or raw.startswith("/") or _SCHEME.match(raw):
            continue
        target = posixpath.normpath(posixpath.join(folder, path))
        if target in names.documents and target != source:
            linked.append((d.start, target))
    front = document.front_matter if isinstance(document.front_matter, dict) else {}
    tags = dict.fromkeys(t.lstrip("#").strip().lower() for t in [*front_matter_tags(front), *inline_tags])
    aliases = dict.fromkeys(a.strip() for key in ("aliases", "alias") for a in _names(front.get(key)))
    return Note(
        edits=tuple(edits),
        links=tuple(dict.fromkeys(target for _, target in sorted(linked))),
        tags=tuple(t for t in tags if t),
        aliases=tuple(a for a in aliases if a),
        unresolved=tuple(unresolved),
    ), destinations
