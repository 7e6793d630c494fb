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
  for a path (``/repo/``) has none (one left by an earlier build is removed). Past the
  protocol's limits (``SITEMAP_URLS`` URLs or ``SITEMAP_BYTES`` a file) ``sitemap.xml`` is a
  sitemap index of ``sitemap-<n>.xml`` files at the root (a sitemap lists only URLs at or below
  its own folder), each holding the next run of URLs within both limits.

Everything is read from the site after the index stage: each directory's ``index.json`` gives
the topics, documents, titles and order (as readers see them), the copied sources the text.
All URLs are under ``base_url``. Output is a pure function of those files: a rebuild writes the
same bytes, and ``write_bytes_atomic`` leaves unchanged files untouched.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from html import escape as _html_escape

from pipeline.config import SiteConfig
from pipeline.fsutil import write_bytes_atomic
from pipeline.index.listing import read_listing
from pipeline.promotion import DEFAULT_LEVEL
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, Digest
from pipeline.site.llmspages import LLMS_DIR, LLMS_FULL_TXT, LLMS_TXT, in_folder
from pipeline.site.llmstext import Doc, Topic, full_text_file, render_llms_files, site_url
from pipeline.siteformat.hrefs import is_absolute_url
from pipeline.siteformat.tree import INDEX_FILE, site_dirs

SITEMAP_XML = "sitemap.xml"
SITEMAP_PAGE = re.compile(r"sitemap-[1-9][0-9]*\.xml")
"""The root files a sitemap index lists (``sitemap-1.xml``, ...)."""
SITEMAP_URLS = 50_000
SITEMAP_BYTES = 50 * 1024 * 1024
"""sitemaps.org's limits of one sitemap file: URLs, and bytes uncompressed."""
LLMS_FILES = (LLMS_TXT, LLMS_FULL_TXT, SITEMAP_XML)
"""The names this module writes at the root (``llms-full.txt``: the root topic's) beside ``_llms/``
and the pages of a sitemap index (``SITEMAP_PAGE``)."""

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n.*?\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def _xml_text(text: str) -> str:
    """``text`` as XML character data: ``&``, ``<`` and ``>`` escaped (``xml.sax.saxutils.escape``'s
    output, without its import of ``urllib.request`` and ``ssl``: 40 ms of every build)."""
    return _html_escape(text, quote=False)


def _topics(site: Path) -> list[Topic]:
    return [topic for topic in (_topic(site, dir_rel) for dir_rel in site_dirs(site)) if topic is not None]


def _topic(site: Path, dir_rel: str) -> Topic | None:
    """The topic of one directory, from its listing (``index.json`` and its later pages); None
    when it lists no documents."""
    listing = read_listing(site, dir_rel)
    if listing is None or not listing[1]:
        return None
    doc, entries = listing
    docs = tuple(
        Doc(
            path=f"{dir_rel}/{entry['source']}" if dir_rel else entry["source"],
            title=entry.get("title") or entry["key"],
            chunks=entry["count"],
            promotion_level=entry.get("promotion_level", DEFAULT_LEVEL),
        )
        for entry in entries
    )
    return Topic(dir_rel, doc.get("title") or dir_rel or "Home", docs)


LLMS_MEMO = "llms-topic"  # reuse/memo.py: each topic and its documents' texts for llms-full.txt


def _memo_topics(site: Path, state: BuildState) -> tuple[list[Topic], dict[str, str]]:
    """``_topics`` and each document's ``_full_text``, a topic at a time from the state's memo
    while the topic's ``index.json`` (its bytes' hash, recorded by the index stage) and the
    sources beside it (their bytes' hashes, recorded by sync) are those they were made from:
    one edit reads one topic's index and sources, not every one of the site."""
    memo = state.memo
    sources: dict[str, list] = {}
    for rel, digest in state.recorded_all("sources"):
        sources.setdefault(rel.rpartition("/")[0], []).append([rel, digest])
    topics: list[Topic] = []
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
        topics.append(Topic(topic_id, title, tuple(Doc(*d[:4]) for d in docs)))
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


def _full_text(site: Path, doc: Doc) -> str:
    """One document's text in ``llms-full.txt``: without front matter, ending in one newline."""
    text = (site / doc.path).read_bytes().decode("utf-8", errors="replace")
    if doc.path.endswith(".md"):
        text = _FRONT_MATTER.sub("", text, count=1)
    return text.replace("\r\n", "\n").strip("\n") + "\n"


_SITEMAP_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<{tag} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'


def _sitemap_file(tag: str, lines: list[str]) -> str:
    return _SITEMAP_HEAD.format(tag=tag) + "".join(lines) + f"</{tag}>\n"


def render_sitemaps(base_url: str, topics: list[Topic], dirs: list[str], *, max_urls: int = SITEMAP_URLS,
                    max_bytes: int = SITEMAP_BYTES) -> dict[str, str]:
    """{root file: text} of the sitemap: ``sitemap.xml`` listing the search page, ``llms.txt``,
    every ``llms-full.txt``, every ``index.json`` and every document, in that order; when those do
    not fit one file (``max_urls`` URLs, ``max_bytes`` bytes), ``sitemap.xml`` is an index of
    ``sitemap-<n>.xml`` files, each the next run of URLs within both limits."""
    locations = [base_url, site_url(base_url, LLMS_TXT)] + [site_url(base_url, full_text_file(t.id)) for t in topics]
    locations += [site_url(base_url, f"{d}/{INDEX_FILE}" if d else INDEX_FILE) for d in dirs]
    locations += [site_url(base_url, doc.path) for topic in topics for doc in topic.documents]
    lines = [f"  <url><loc>{_xml_text(loc)}</loc></url>\n" for loc in locations]
    room = max_bytes - len(_sitemap_file("urlset", []).encode())
    pages: list[list[str]] = [[]]
    size = 0
    for line in lines:
        length = len(line.encode())
        if pages[-1] and (len(pages[-1]) == max_urls or size + length > room):
            pages.append([])
            size = 0
        pages[-1].append(line)
        size += length
    if len(pages) == 1:
        return {SITEMAP_XML: _sitemap_file("urlset", pages[0])}
    files = {f"sitemap-{n}.xml": _sitemap_file("urlset", page) for n, page in enumerate(pages, 1)}
    index = [f"  <sitemap><loc>{_xml_text(site_url(base_url, name))}</loc></sitemap>\n" for name in files]
    return {SITEMAP_XML: _sitemap_file("sitemapindex", index), **files}


def write_llms_files(site: Path, config: SiteConfig, state: BuildState | None = None) -> int:
    """Write ``llms.txt``, ``sitemap.xml`` and every topic's text pages (``llms-full.txt`` and
    ``_llms/``) into ``site``; remove the llms files no topic has any more (a folder that holds
    no documents, a page past a topic's last). Returns how many files changed.

    With ``state`` (a build, after the index stage), the files are not read or rendered again
    when their inputs are unchanged since the previous build and each still hashes to what it
    wrote: they are a function of the site's title and base URL, every ``index.json`` (named by
    its ``index`` digest) and every source (named by its ``documents`` digest, which covers its
    bytes); the code is covered by the state's ``code_digest``; a file whose stamp is the one
    recorded is trusted unread (``reuse/stamps.py``). When they changed, the topics
    whose index and sources did not are taken from the state's memo (``_memo_topics``), and a
    page whose bytes did not change is left as it is (``write_bytes_atomic``)."""
    site = Path(site)
    base = config.normalized_base_url
    digest = None
    if state is not None:
        digest = Digest(config.title, base, state.recorded_all("index"), state.recorded_all("documents")).hex()
        kept = _unchanged(site, state, digest)
        if kept is not None:
            for name, (entry, stamp) in kept.items():
                state.keep("llms", name, entry, files=[stamp] if stamp else [])
            return 0
    if state is not None and state.memo is not None:
        topics, texts = _memo_topics(site, state)
    else:
        topics = _topics(site)
        texts = {doc.path: _full_text(site, doc) for topic in topics for doc in topic.documents}
    dirs = site_dirs(site)
    files = render_llms_files(config.title, base, topics, texts)
    if is_absolute_url(base):  # absolute URLs only (sitemaps.org): none for a path base URL
        files.update(render_sitemaps(base, topics, [d for d in dirs if (site / d / INDEX_FILE).is_file()]))
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
    for name in (SITEMAP_XML, *_sitemap_pages(site)):  # an earlier build's, for another base URL or more URLs
        if name not in files and (site / name).is_file():
            (site / name).unlink()
            written += 1
    return written


def _unchanged(site: Path, state: BuildState, digest: str) -> dict[str, tuple[dict, list | None]] | None:
    """Every llms file of the previous build with its entry and the stamp to record, when all
    were written for inputs with ``digest`` and each still holds what was written (its stamp,
    else its bytes: ``stamps.verify``); else None."""
    kept = {}
    for name in state.previous_keys("llms"):
        entry = state.previous("llms", name)
        if entry is None or entry.get("digest") != digest:
            return None
        recorded = entry.get("files") or [None]
        intact, stamp = stamps.verify(site / name, recorded[0], entry["output"])
        if not intact:
            return None
        kept[name] = (entry, stamp)
    return kept if LLMS_TXT in kept else None


def _sitemap_pages(site: Path) -> list[str]:
    """The pages of a sitemap index at the root of ``site``."""
    return sorted(entry.name for entry in os.scandir(site) if SITEMAP_PAGE.fullmatch(entry.name) and entry.is_file())


def _listed(site: Path, folder_rel: str) -> list[str]:
    """The site paths of the files in the folder ``folder_rel`` (none when it does not exist)."""
    try:
        return sorted(f"{folder_rel}/{entry.name}" for entry in os.scandir(site / folder_rel) if entry.is_file())
    except (FileNotFoundError, NotADirectoryError):
        return []
