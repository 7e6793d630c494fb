"""``llms.txt`` and ``sitemap.xml`` at the site root, and an ``llms-full.txt`` in every topic's
folder (written by publish).

* ``llms.txt`` follows llmstxt.org: ``# <site title>``, a ``> `` summary, a paragraph on how
  to read the site, then one ``## <topic>`` section per topic: first its ``llms-full.txt`` as
  ``- [<topic>: full text](url): note``, then its documents as ``- [title](url): note`` (the
  note: chunk count, and the promotion level when not standard).
* ``<topic>/llms-full.txt`` (the root's documents: ``/llms-full.txt``): a header naming the topic
  and pointing to ``llms.txt``, then each of the topic's documents' text (front matter removed)
  under a ``## <title>`` heading with its URL, in the topic's order. One file per topic, not one
  for the site: a reader fetches the topic it wants, and an edit rewrites its topic's file only.
* ``sitemap.xml`` (sitemaps.org 0.9): the search page, ``llms.txt``, every ``llms-full.txt``,
  every ``index.json`` and every document. The protocol allows only absolute ``<loc>`` URLs, so it
  is written only for an absolute ``base_url`` (``--base-url https://host/repo/``); a site built
  for a path (``/repo/``) has none (one left by an earlier build is removed).

Everything is read from the site after the index stage: each directory's ``index.json`` gives
the topics, documents, titles and order (as readers see them), the copied sources the text.
All URLs are under ``base_url``. Output is a pure function of those files: a rebuild writes the
same bytes, and ``write_bytes_atomic`` leaves unchanged files untouched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from pipeline.config import SiteConfig
from pipeline.fsutil import write_text_atomic
from pipeline.index.listing import read_listing
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.reuse.state import BuildState, Digest
from pipeline.siteformat.hrefs import is_absolute_url, quote_path
from pipeline.siteformat.tree import INDEX_FILE, site_dirs

LLMS_TXT = "llms.txt"
LLMS_FULL_TXT = "llms-full.txt"
SITEMAP_XML = "sitemap.xml"
LLMS_FILES = (LLMS_TXT, LLMS_FULL_TXT, SITEMAP_XML)
"""The names this module writes at the root (``llms-full.txt``: the root topic's)."""


def full_text_file(dir_rel: str) -> str:
    """The site path of the topic ``dir_rel``'s ``llms-full.txt``."""
    return f"{dir_rel}/{LLMS_FULL_TXT}" if dir_rel else LLMS_FULL_TXT

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


@dataclass(frozen=True)
class _Doc:
    path: str  # relative to the site root
    title: str
    chunks: int
    promotion_level: str


@dataclass(frozen=True)
class _Topic:
    id: str
    title: str
    documents: tuple[_Doc, ...]


def _topics(site: Path) -> list[_Topic]:
    return [topic for topic in (_topic(site, dir_rel) for dir_rel in site_dirs(site)) if topic is not None]


def _topic(site: Path, dir_rel: str) -> _Topic | None:
    """The topic of one directory, from its listing (``index.json`` and its later pages); None
    when it lists no documents."""
    listing = read_listing(site, dir_rel)
    if listing is None or not listing[1]:
        return None
    doc, entries = listing
    docs = tuple(
        _Doc(
            path=f"{dir_rel}/{entry['source']}" if dir_rel else entry["source"],
            title=entry.get("title") or entry["key"],
            chunks=entry["count"],
            promotion_level=entry.get("promotion_level", DEFAULT_LEVEL),
        )
        for entry in entries
    )
    return _Topic(dir_rel, doc.get("title") or dir_rel or "Home", docs)


LLMS_MEMO = "llms-topic"  # reuse/memo.py: each topic and its documents' llms-full.txt sections


def _memo_topics(site: Path, base_url: str, state: BuildState) -> tuple[list[_Topic], dict[str, str]]:
    """``_topics`` and each document's ``_full_section``, a topic at a time from the state's memo
    while the topic's ``index.json`` (its bytes' hash, recorded by the index stage) and the
    sources beside it (their bytes' hashes, recorded by sync) are those they were made from:
    one edit reads one topic's index and sources, not every one of the site."""
    memo = state.memo
    sources: dict[str, list] = {}
    for rel, digest in state.recorded_all("sources"):
        sources.setdefault(rel.rpartition("/")[0], []).append([rel, digest])
    topics: list[_Topic] = []
    sections: dict[str, str] = {}
    for dir_rel in site_dirs(site):
        output = state.recorded("index", dir_rel, "output")
        key = memo.key(LLMS_MEMO, dir_rel, base_url, output, sources.get(dir_rel, [])) if output else None
        value = memo.get(LLMS_MEMO, key) if key is not None else None
        if not _is_memo_topic(value):
            topic = _topic(site, dir_rel)
            value = (None,) if topic is None else (
                topic.id, topic.title,
                [[d.path, d.title, d.chunks, d.promotion_level, _full_section(site, base_url, d)] for d in topic.documents],
            )
            if key is not None:
                memo.put(LLMS_MEMO, key, value)
        if value[0] is None:
            continue
        topic_id, title, docs = value
        topics.append(_Topic(topic_id, title, tuple(_Doc(*d[:4]) for d in docs)))
        sections.update((d[0], d[4]) for d in docs)
    return topics, sections


def _is_memo_topic(value: object) -> bool:
    if value == (None,):
        return True
    return (
        isinstance(value, tuple) and len(value) == 3 and isinstance(value[0], str) and isinstance(value[1], str)
        and isinstance(value[2], list)
        and all(isinstance(d, list) and len(d) == 5 and isinstance(d[2], int) for d in value[2])
    )


def _link_text(text: str) -> str:
    """Text safe inside ``[...]`` of a markdown link, on one line."""
    return " ".join(text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").split())


def _url(base_url: str, rel: str) -> str:
    return base_url + quote_path(rel)  # the one href encoder (RFC 3986): also #, %, ? and non-ASCII


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _site_title(title: str) -> str:
    return " ".join(title.split()) or "Documentation"


def _header(title: str, topics: list[_Topic], base_url: str) -> str:
    count = sum(len(t.documents) for t in topics)
    return (
        f"# {_site_title(title)}\n\n"
        f"> {_plural(count, 'document')} in {_plural(len(topics), 'topic')}, split into chunks "
        f"with heading context and published as a static HAL+JSON site for progressive reading.\n\n"
        f"Start at [{base_url}index.json]({base_url}index.json): each folder's `index.json` lists its documents (more "
        f"pages by `_links.next`), each with the first chunks (`_chunks/*.md`) of its stripe order and a link to its "
        f"resource, whose chunks come in reading order, so the first few give an overview of a whole document. "
        f"Each topic's `llms-full.txt`, listed first in its section below, holds its documents' text in one file.\n"
    )


def _topic_heading(topic: _Topic) -> str:
    return _link_text(topic.title) + (f" ({topic.id})" if topic.id and topic.id.lower() != topic.title.lower() else "")


def render_llms_txt(title: str, base_url: str, topics: list[_Topic]) -> str:
    parts = [_header(title, topics, base_url)]
    for topic in topics:
        lines = [f"\n## {_topic_heading(topic)}\n\n",
                 f"- [{_link_text(topic.title)}: full text]({_url(base_url, full_text_file(topic.id))}): "
                 f"{_plural(len(topic.documents), 'document')} in one file\n"]
        for doc in topic.documents:
            note = f"{doc.chunks} chunk{'s' * (doc.chunks != 1)}"
            if doc.promotion_level != DEFAULT_LEVEL:
                note += f", promotion level {doc.promotion_level}"
            lines.append(f"- [{_link_text(doc.title)}]({_url(base_url, doc.path)}): {note}\n")
        parts.append("".join(lines))
    return "".join(parts)


def render_llms_full_txt(site: Path, title: str, base_url: str, topic: _Topic,
                         sections: dict[str, str] | None = None) -> str:
    """The topic's ``llms-full.txt``; ``sections``: each document's ``_full_section`` by path,
    when the caller has them."""
    index = _url(base_url, f"{topic.id}/{INDEX_FILE}" if topic.id else INDEX_FILE)
    parts = [
        f"# {_site_title(title)}: {_link_text(topic.title)}\n\n"
        f"> The text of the {_plural(len(topic.documents), 'document')} of the topic "
        f"`{topic.id or '/'}` ([index.json]({index})), in one file. Each topic has its own `llms-full.txt`: "
        f"[llms.txt]({_url(base_url, LLMS_TXT)}) lists them all.\n"
    ]
    for doc in topic.documents:
        parts.append(sections[doc.path] if sections is not None else _full_section(site, base_url, doc))
    return "".join(parts)


def _full_section(site: Path, base_url: str, doc: _Doc) -> str:
    """One document's part of ``llms-full.txt``: its title, URL and text without front matter."""
    text = (site / doc.path).read_bytes().decode("utf-8", errors="replace")
    if doc.path.endswith(".md"):
        text = _FRONT_MATTER.sub("", text, count=1)
    text = text.replace("\r\n", "\n").strip("\n")
    return f"\n## {_link_text(doc.title)}\n\nSource: {_url(base_url, doc.path)}\n\n{text}\n"


def render_sitemap(base_url: str, topics: list[_Topic], dirs: list[str]) -> str:
    locations = [base_url, _url(base_url, LLMS_TXT)] + [_url(base_url, full_text_file(t.id)) for t in topics]
    locations += [_url(base_url, f"{d}/{INDEX_FILE}" if d else INDEX_FILE) for d in dirs]
    locations += [_url(base_url, doc.path) for topic in topics for doc in topic.documents]
    body = "".join(f"  <url><loc>{escape(loc)}</loc></url>\n" for loc in locations)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</urlset>\n'


def write_llms_files(site: Path, config: SiteConfig, state: BuildState | None = None) -> int:
    """Write ``llms.txt``, ``sitemap.xml`` and every topic's ``llms-full.txt`` into ``site``;
    remove the ``llms-full.txt`` of a folder that holds no documents any more. Returns how many
    files changed.

    With ``state`` (a build, after the index stage), the files are not read or rendered again
    when their inputs are unchanged since the previous build and each still hashes to what it
    wrote: they are a function of the site's title and base URL, every ``index.json`` (named by
    its ``index`` digest) and every source (named by its ``documents`` digest, which covers its
    bytes); the code is covered by the state's ``code_digest``. When they changed, the topics
    whose index and sources did not are taken from the state's memo (``_memo_topics``)."""
    site = Path(site)
    base = config.normalized_base_url
    digest = None
    if state is not None:
        digest = Digest(config.title, base, state.recorded_all("index"), state.recorded_all("documents")).hex()
        entries = {name: state.get("llms", name, digest, output=site / name) for name in state.previous_keys("llms")}
        if LLMS_TXT in entries and all(e is not None for e in entries.values()):
            for name, e in entries.items():
                state.keep("llms", name, e)
            return 0
    if state is not None and state.memo is not None:
        topics, sections = _memo_topics(site, base, state)
    else:
        topics, sections = _topics(site), None
    dirs = [d for d in site_dirs(site) if (site / d / INDEX_FILE).is_file()]
    texts = {
        LLMS_TXT: render_llms_txt(config.title, base, topics),
    }
    if is_absolute_url(base):  # absolute URLs only (sitemaps.org): none for a path base URL
        texts[SITEMAP_XML] = render_sitemap(base, topics, dirs)
    for topic in topics:
        texts[full_text_file(topic.id)] = render_llms_full_txt(site, config.title, base, topic, sections)
    written = 0
    for name, text in texts.items():
        written += write_text_atomic(site / name, text)
        if digest is not None:
            state.put("llms", name, digest, data=text.encode("utf-8"))
    for dir_rel in site_dirs(site):  # a folder whose documents are gone loses its full text
        name = full_text_file(dir_rel)
        if name not in texts and (site / name).is_file():
            (site / name).unlink()
            written += 1
    if SITEMAP_XML not in texts and (site / SITEMAP_XML).is_file():  # an earlier build's, for another base URL
        (site / SITEMAP_XML).unlink()
        written += 1
    return written
