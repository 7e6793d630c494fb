"""``llms.txt`` and ``sitemap.xml`` at the site root, and an ``llms-full.txt`` in every topic's
folder (written by publish). Every llms file fits a reader's budget (``llmspages.PAGE_BYTES``):
what would not continues on pages in the folder's ``_llms/``, each linked by the ``Next:`` line
that ends the page before it (``llmspages``).

* ``llms.txt`` follows llmstxt.org: ``# <site title>``, a ``> `` summary, a paragraph on how
  to read the site, then one ``## <topic>`` section per topic: first its ``llms-full.txt`` as
  ``- [<topic>: full text](url): note``, then its documents as ``- [title](url): note`` (the
  note: chunk count, and the promotion level when not standard). When those lines exceed a page,
  a topic's section lists instead its text and its document list (``_llms/documents-1.txt``,
  the same lines), and the topics continue on ``_llms/topics-<g>.txt`` (``TOPICS_GROUP`` a page).
* ``<topic>/llms-full.txt`` (the root's documents: ``/llms-full.txt``): a header naming the topic
  and pointing to ``llms.txt``, then each of the topic's documents' text (front matter removed)
  under a ``## <title>`` heading with its URL, in the topic's order. One file per topic while it
  fits a page; else pages of fixed groups of ``TEXT_GROUP`` documents (the documents of a page
  of the topic's listing), a group on as many pages as its bytes need (``_llms/full-<g>.txt``,
  ``_llms/full-<g>-<p>.txt``): an edit rewrites its group's pages, not its topic's text.
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

import os
import re
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from pipeline.config import SiteConfig
from pipeline.fsutil import write_bytes_atomic
from pipeline.index.listing import read_listing
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.reuse.state import BuildState, Digest
from pipeline.site.llmspages import (
    DOCUMENTS, FULL, LISTING_GROUP, LLMS_DIR, LLMS_FULL_TXT, LLMS_TXT, PAGE_BYTES, TEXT_GROUP, TOPICS, TOPICS_GROUP,
    Block, Page, byte_size, in_folder, page_file, paginate,
)
from pipeline.siteformat.hrefs import is_absolute_url, quote_path
from pipeline.siteformat.tree import INDEX_FILE, site_dirs

SITEMAP_XML = "sitemap.xml"
LLMS_FILES = (LLMS_TXT, LLMS_FULL_TXT, SITEMAP_XML)
"""The names this module writes at the root (``llms-full.txt``: the root topic's) beside ``_llms/``."""


def full_text_file(dir_rel: str) -> str:
    """The site path of the topic ``dir_rel``'s ``llms-full.txt``."""
    return in_folder(dir_rel, LLMS_FULL_TXT)

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


LLMS_MEMO = "llms-topic"  # reuse/memo.py: each topic and its documents' texts for llms-full.txt


def _memo_topics(site: Path, state: BuildState) -> tuple[list[_Topic], dict[str, str]]:
    """``_topics`` and each document's ``_full_text``, a topic at a time from the state's memo
    while the topic's ``index.json`` (its bytes' hash, recorded by the index stage) and the
    sources beside it (their bytes' hashes, recorded by sync) are those they were made from:
    one edit reads one topic's index and sources, not every one of the site."""
    memo = state.memo
    sources: dict[str, list] = {}
    for rel, digest in state.recorded_all("sources"):
        sources.setdefault(rel.rpartition("/")[0], []).append([rel, digest])
    topics: list[_Topic] = []
    texts: dict[str, str] = {}
    for dir_rel in site_dirs(site):
        output = state.recorded("index", dir_rel, "output")
        key = memo.key(LLMS_MEMO, dir_rel, output, sources.get(dir_rel, [])) if output else None
        value = memo.get(LLMS_MEMO, key) if key is not None else None
        if not _is_memo_topic(value):
            topic = _topic(site, dir_rel)
            value = (None,) if topic is None else (
                topic.id, topic.title,
                [[d.path, d.title, d.chunks, d.promotion_level, _full_text(site, d)] for d in topic.documents],
            )
            if key is not None:
                memo.put(LLMS_MEMO, key, value)
        if value[0] is None:
            continue
        topic_id, title, docs = value
        topics.append(_Topic(topic_id, title, tuple(_Doc(*d[:4]) for d in docs)))
        texts.update((d[0], d[4]) for d in docs)
    return topics, texts


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


def _summary(title: str, topics: list[_Topic], base_url: str) -> str:
    count = sum(len(t.documents) for t in topics)
    return (
        f"# {_site_title(title)}\n\n"
        f"> {_plural(count, 'document')} in {_plural(len(topics), 'topic')}, split into chunks "
        f"with heading context and published as a static HAL+JSON site for progressive reading.\n\n"
        f"Start at [{base_url}index.json]({base_url}index.json): each folder's `index.json` lists its documents (more "
        f"pages by `_links.next`), each with the first chunks (`_chunks/*.md`) of its stripe order and a link to its "
        f"resource, whose chunks come in reading order, so the first few give an overview of a whole document. "
    )


def _header(title: str, topics: list[_Topic], base_url: str) -> str:
    return _summary(title, topics, base_url) + (
        "Each topic's `llms-full.txt`, listed first in its section below, holds its documents' text: in one file, "
        f"or in files of at most {TEXT_GROUP} documents and {PAGE_BYTES // 1000} kB, each ending with a `Next:` link "
        "to the next.\n"
    )


def _topic_heading(topic: _Topic) -> str:
    return _link_text(topic.title) + (f" ({topic.id})" if topic.id and topic.id.lower() != topic.title.lower() else "")


def _files(count: int) -> str:
    return "in one file" if count == 1 else f"in {count} files"


def _full_link(base_url: str, topic: _Topic, files: int) -> str:
    return (f"- [{_link_text(topic.title)}: full text]({_url(base_url, full_text_file(topic.id))}): "
            f"{_plural(len(topic.documents), 'document')} {_files(files)}\n")


def _document_line(base_url: str, doc: _Doc) -> str:
    note = f"{doc.chunks} chunk{'s' * (doc.chunks != 1)}"
    if doc.promotion_level != DEFAULT_LEVEL:
        note += f", promotion level {doc.promotion_level}"
    return f"- [{_link_text(doc.title)}]({_url(base_url, doc.path)}): {note}\n"


def render_llms_txt(title: str, base_url: str, topics: list[_Topic], files: dict[str, int] | None = None) -> str:
    """The root ``llms.txt`` listing every document (``files``: each topic's count of text files)."""
    parts = [_header(title, topics, base_url)]
    for topic in topics:
        lines = [f"\n## {_topic_heading(topic)}\n\n", _full_link(base_url, topic, (files or {}).get(topic.id, 1))]
        lines += [_document_line(base_url, doc) for doc in topic.documents]
        parts.append("".join(lines))
    return "".join(parts)


def _next(base_url: str, label: str, dir_rel: str, kind: str, page: Page) -> str:
    return f"\nNext: [{label}]({_url(base_url, in_folder(dir_rel, page_file(kind, page.group, page.part)))})\n"


def _from(page: Page, word: str) -> str:
    return f"{word} {page.first + 1}" + (" (continued)" if page.continued else "")


def _paged(blocks: list[Block], group: int, dir_rel: str, kind: str, base_url: str,
           header, label) -> dict[str, str]:
    """The pages (``llmspages.paginate``) of ``blocks`` as site path -> text: ``header(page)``,
    the page's blocks, and a ``Next:`` line (``label(page)``) linking the page after it. The
    overhead is measured on the longest numbers a page could carry, so every page fits."""
    widest = Page(10 ** 7, 10 ** 7, 10 ** 8, True, "")
    overhead = max(byte_size(header(Page(1, 1, 0, False, ""))), byte_size(header(widest)))
    overhead += byte_size(_next(base_url, label(widest), dir_rel, kind, widest))
    pages = paginate(blocks, group, PAGE_BYTES - overhead)
    out = {}
    for page, after in zip(pages, [*pages[1:], None]):
        tail = _next(base_url, label(after), dir_rel, kind, after) if after is not None else ""
        out[in_folder(dir_rel, page_file(kind, page.group, page.part))] = header(page) + page.body + tail
    return out


def render_full_text(title: str, base_url: str, topic: _Topic, texts: dict[str, str]) -> dict[str, str]:
    """The topic's text files, site path -> text: ``llms-full.txt`` and, when its documents'
    text exceeds a page, its later pages in ``_llms/`` (``llmspages``); ``texts``: each
    document's text (``_full_text``) by path."""
    site_title, name = _site_title(title), _link_text(topic.title)
    index = _url(base_url, in_folder(topic.id, INDEX_FILE))
    first = _url(base_url, full_text_file(topic.id))
    blocks = [
        Block(f"\n## {_link_text(doc.title)}\n\nSource: {_url(base_url, doc.path)}\n\n", texts[doc.path],
              f"\n## {_link_text(doc.title)} (continued)\n\nSource: {_url(base_url, doc.path)}\n\n")
        for doc in topic.documents
    ]
    intro = (f"# {site_title}: {name}\n\n> The text of the {_plural(len(topic.documents), 'document')} of the topic "
             f"`{topic.id or '/'}` ([index.json]({index}))")
    outro = f"Each topic has its own `llms-full.txt`: [llms.txt]({_url(base_url, LLMS_TXT)}) lists them all.\n"
    whole = intro + f", in one file. {outro}" + "".join(b.head + b.body for b in blocks)
    if byte_size(whole) <= PAGE_BYTES:
        return {full_text_file(topic.id): whole}

    def header(page: Page) -> str:
        if page.first == 0 and not page.continued:
            return (intro + f", in files of at most {TEXT_GROUP} documents and {PAGE_BYTES // 1000} kB: this is the "
                    f"first, and each file with more after it ends with a `Next:` link. {outro}")
        return (f"# {site_title}: {name}, from {_from(page, 'document')}\n\n> Part of the text of the topic "
                f"`{topic.id or '/'}`, which starts at [llms-full.txt]({first}); each file with more after it ends "
                f"with a `Next:` link.\n")

    return _paged(blocks, TEXT_GROUP, topic.id, FULL, base_url, header,
                  lambda page: f"{name}: text from {_from(page, 'document')}")


def render_document_lists(title: str, base_url: str, topic: _Topic) -> dict[str, str]:
    """The topic's document list, site path -> text (``_llms/documents-1.txt`` and the pages
    after it): one line a document, as the root ``llms.txt`` of a smaller site has them."""
    site_title, name = _site_title(title), _link_text(topic.title)
    index = _url(base_url, in_folder(topic.id, INDEX_FILE))

    def header(page: Page) -> str:
        if page.first == 0:
            return (f"# {site_title}: {name}, documents\n\n> The {_plural(len(topic.documents), 'document')} of the "
                    f"topic `{topic.id or '/'}` ([index.json]({index})), in files of at most {LISTING_GROUP} "
                    f"documents, each file with more after it ending with a `Next:` link. Their text: "
                    f"[llms-full.txt]({_url(base_url, full_text_file(topic.id))}); every topic: "
                    f"[llms.txt]({_url(base_url, LLMS_TXT)}).\n\n## Documents\n\n")
        return (f"# {site_title}: {name}, from {_from(page, 'document')}\n\n> More of the documents of the topic "
                f"`{topic.id or '/'}`, listed from [{page_file(DOCUMENTS, 1)}]"
                f"({_url(base_url, in_folder(topic.id, page_file(DOCUMENTS, 1)))}).\n\n## Documents\n\n")

    blocks = [Block(_document_line(base_url, doc)) for doc in topic.documents]
    return _paged(blocks, LISTING_GROUP, topic.id, DOCUMENTS, base_url, header,
                  lambda page: f"{name}: documents from {page.first + 1}")


def render_topic_lists(title: str, base_url: str, topics: list[_Topic], files: dict[str, int],
                       lists: dict[str, int]) -> dict[str, str]:
    """The root ``llms.txt`` of a site whose document lines exceed a page, and its later pages:
    one section a topic, linking its text and its document list (``render_document_lists``);
    ``files`` and ``lists``: each topic's count of text and list files."""
    site_title = _site_title(title)
    blocks = [
        Block(f"\n## {_topic_heading(topic)}\n\n{_full_link(base_url, topic, files[topic.id])}"
              f"- [{_link_text(topic.title)}: documents]({_url(base_url, in_folder(topic.id, page_file(DOCUMENTS, 1)))}): "
              f"{_plural(len(topic.documents), 'document')} listed {_files(lists[topic.id])}\n")
        for topic in topics
    ]

    def header(page: Page) -> str:
        if page.first == 0:
            return _summary(title, topics, base_url) + (
                "The list of every document would not fit one file: each topic's section below links its text "
                f"(`llms-full.txt`: files of at most {TEXT_GROUP} documents and {PAGE_BYTES // 1000} kB) and the list "
                f"of its documents (files of at most {LISTING_GROUP}), each file with more after it ending with a "
                f"`Next:` link.\n")
        return (f"# {site_title}: topics from {page.first + 1}\n\n> More of the topics listed in "
                f"[llms.txt]({_url(base_url, LLMS_TXT)}).\n")

    return _paged(blocks, TOPICS_GROUP, "", TOPICS, base_url, header,
                  lambda page: f"{site_title}: topics from {page.first + 1}")


def render_llms_files(title: str, base_url: str, topics: list[_Topic], texts: dict[str, str]) -> dict[str, str]:
    """Every llms file but the sitemap, site path -> text: each topic's text pages, and the root
    ``llms.txt`` listing every document when that fits a page (``PAGE_BYTES``), else listing the
    topics, each linking its document list."""
    out: dict[str, str] = {}
    files: dict[str, int] = {}
    for topic in topics:
        pages = render_full_text(title, base_url, topic, texts)
        files[topic.id] = len(pages)
        out.update(pages)
    listing = render_llms_txt(title, base_url, topics, files)
    if byte_size(listing) <= PAGE_BYTES:
        out[LLMS_TXT] = listing
        return out
    lists: dict[str, int] = {}
    for topic in topics:
        pages = render_document_lists(title, base_url, topic)
        lists[topic.id] = len(pages)
        out.update(pages)
    out.update(render_topic_lists(title, base_url, topics, files, lists))
    return out


def _full_text(site: Path, doc: _Doc) -> str:
    """One document's text in ``llms-full.txt``: without front matter, ending in one newline."""
    text = (site / doc.path).read_bytes().decode("utf-8", errors="replace")
    if doc.path.endswith(".md"):
        text = _FRONT_MATTER.sub("", text, count=1)
    return text.replace("\r\n", "\n").strip("\n") + "\n"


def render_sitemap(base_url: str, topics: list[_Topic], dirs: list[str]) -> str:
    locations = [base_url, _url(base_url, LLMS_TXT)] + [_url(base_url, full_text_file(t.id)) for t in topics]
    locations += [_url(base_url, f"{d}/{INDEX_FILE}" if d else INDEX_FILE) for d in dirs]
    locations += [_url(base_url, doc.path) for topic in topics for doc in topic.documents]
    body = "".join(f"  <url><loc>{escape(loc)}</loc></url>\n" for loc in locations)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</urlset>\n'


def write_llms_files(site: Path, config: SiteConfig, state: BuildState | None = None) -> int:
    """Write ``llms.txt``, ``sitemap.xml`` and every topic's text pages (``llms-full.txt`` and
    ``_llms/``) into ``site``; remove the llms files no topic has any more (a folder that holds
    no documents, a page past a topic's last). Returns how many files changed.

    With ``state`` (a build, after the index stage), the files are not read or rendered again
    when their inputs are unchanged since the previous build and each still hashes to what it
    wrote: they are a function of the site's title and base URL, every ``index.json`` (named by
    its ``index`` digest) and every source (named by its ``documents`` digest, which covers its
    bytes); the code is covered by the state's ``code_digest``. When they changed, the topics
    whose index and sources did not are taken from the state's memo (``_memo_topics``), and a
    page whose bytes did not change is left as it is (``write_bytes_atomic``)."""
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
        topics, texts = _memo_topics(site, state)
    else:
        topics = _topics(site)
        texts = {doc.path: _full_text(site, doc) for topic in topics for doc in topic.documents}
    dirs = site_dirs(site)
    files = render_llms_files(config.title, base, topics, texts)
    if is_absolute_url(base):  # absolute URLs only (sitemaps.org): none for a path base URL
        files[SITEMAP_XML] = render_sitemap(base, topics, [d for d in dirs if (site / d / INDEX_FILE).is_file()])
    written = 0
    for name, text in files.items():
        data = text.encode("utf-8")
        if "/" in name:
            (site / name).parent.mkdir(exist_ok=True)
        written += write_bytes_atomic(site / name, data)
        if digest is not None:
            state.put("llms", name, digest, data=data)
    for dir_rel in dirs:  # what no topic has any more: a folder's text, pages past the last
        for name in (full_text_file(dir_rel), *_listed(site, in_folder(dir_rel, LLMS_DIR))):
            if name not in files and (site / name).is_file():
                (site / name).unlink()
                written += 1
        folder = site / in_folder(dir_rel, LLMS_DIR)
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    if SITEMAP_XML not in files and (site / SITEMAP_XML).is_file():  # an earlier build's, for another base URL
        (site / SITEMAP_XML).unlink()
        written += 1
    return written


def _listed(site: Path, folder_rel: str) -> list[str]:
    """The site paths of the files in the folder ``folder_rel`` (none when it does not exist)."""
    try:
        return sorted(f"{folder_rel}/{entry.name}" for entry in os.scandir(site / folder_rel) if entry.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
