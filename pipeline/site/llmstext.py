"""The text of the llms files (``site/llms.py`` writes them): ``llms.txt``, each topic's text
pages and, on a site whose document lines exceed a page, the topics' and documents' lists, all
paged by ``llmspages`` (no I/O: a function of the topics read from the site and their texts)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.promotion import DEFAULT_LEVEL
from pipeline.site.llmspages import (
    DOCUMENTS, FULL, LISTING_GROUP, LLMS_TXT, PAGE_BYTES, TEXT_GROUP, TOPICS, TOPICS_GROUP,
    LLMS_FULL_TXT, Block, Page, byte_size, in_folder, page_file, paginate,
)
from pipeline.siteformat.hrefs import quote_path
from pipeline.siteformat.tree import INDEX_FILE


def full_text_file(dir_rel: str) -> str:
    """The site path of the topic ``dir_rel``'s ``llms-full.txt``."""
    return in_folder(dir_rel, LLMS_FULL_TXT)


@dataclass(frozen=True)
class Doc:
    path: str  # relative to the site root
    title: str
    chunks: int
    promotion_level: str


@dataclass(frozen=True)
class Topic:
    id: str
    title: str
    documents: tuple[Doc, ...]


def _link_text(text: str) -> str:
    """Text safe inside ``[...]`` of a markdown link, on one line."""
    return " ".join(text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]").split())


def site_url(base_url: str, rel: str) -> str:
    return base_url + quote_path(rel)  # the one href encoder (RFC 3986): also #, %, ? and non-ASCII


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _site_title(title: str) -> str:
    return " ".join(title.split()) or "Documentation"


def _summary(title: str, topics: list[Topic], base_url: str) -> str:
    count = sum(len(t.documents) for t in topics)
    return (
        f"# {_site_title(title)}\n\n"
        f"> {_plural(count, 'document')} in {_plural(len(topics), 'topic')}, split into chunks "
        f"with heading context and published as a static HAL+JSON site for progressive reading.\n\n"
        f"Start at [{base_url}index.json]({base_url}index.json): each folder's `index.json` lists its documents (more "
        f"pages by `_links.next`), each with the first chunks (`_chunks/*.md`) of its stripe order and a link to its "
        f"resource, whose chunks come in reading order, so the first few give an overview of a whole document. "
    )


def _header(title: str, topics: list[Topic], base_url: str) -> str:
    return _summary(title, topics, base_url) + (
        "Each topic's `llms-full.txt`, listed first in its section below, holds its documents' text: in one file, "
        f"or in files of at most {TEXT_GROUP} documents and {PAGE_BYTES // 1000} kB, each ending with a `Next:` link "
        "to the next.\n"
    )


def _topic_heading(topic: Topic) -> str:
    return _link_text(topic.title) + (f" ({topic.id})" if topic.id and topic.id.lower() != topic.title.lower() else "")


def _files(count: int) -> str:
    return "in one file" if count == 1 else f"in {count} files"


def _full_link(base_url: str, topic: Topic, files: int) -> str:
    return (f"- [{_link_text(topic.title)}: full text]({site_url(base_url, full_text_file(topic.id))}): "
            f"{_plural(len(topic.documents), 'document')} {_files(files)}\n")


def _document_line(base_url: str, doc: Doc) -> str:
    note = f"{doc.chunks} chunk{'s' * (doc.chunks != 1)}"
    if doc.promotion_level != DEFAULT_LEVEL:
        note += f", promotion level {doc.promotion_level}"
    return f"- [{_link_text(doc.title)}]({site_url(base_url, doc.path)}): {note}\n"


def render_llms_txt(title: str, base_url: str, topics: list[Topic], files: dict[str, int] | None = None) -> str:
    """The root ``llms.txt`` listing every document (``files``: each topic's count of text files)."""
    parts = [_header(title, topics, base_url)]
    for topic in topics:
        lines = [f"\n## {_topic_heading(topic)}\n\n", _full_link(base_url, topic, (files or {}).get(topic.id, 1))]
        lines += [_document_line(base_url, doc) for doc in topic.documents]
        parts.append("".join(lines))
    return "".join(parts)


def _next(base_url: str, label: str, dir_rel: str, kind: str, page: Page) -> str:
    return f"\nNext: [{label}]({site_url(base_url, in_folder(dir_rel, page_file(kind, page.group, page.part)))})\n"


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


def render_full_text(title: str, base_url: str, topic: Topic, texts: dict[str, str]) -> dict[str, str]:
    """The topic's text files, site path -> text: ``llms-full.txt`` and, when its documents'
    text exceeds a page, its later pages in ``_llms/`` (``llmspages``); ``texts``: each
    document's text (``_full_text``) by path."""
    site_title, name = _site_title(title), _link_text(topic.title)
    index = site_url(base_url, in_folder(topic.id, INDEX_FILE))
    first = site_url(base_url, full_text_file(topic.id))
    blocks = [
        Block(f"\n## {_link_text(doc.title)}\n\nSource: {site_url(base_url, doc.path)}\n\n", texts[doc.path],
              f"\n## {_link_text(doc.title)} (continued)\n\nSource: {site_url(base_url, doc.path)}\n\n")
        for doc in topic.documents
    ]
    intro = (f"# {site_title}: {name}\n\n> The text of the {_plural(len(topic.documents), 'document')} of the topic "
             f"`{topic.id or '/'}` ([index.json]({index}))")
    outro = f"Each topic has its own `llms-full.txt`: [llms.txt]({site_url(base_url, LLMS_TXT)}) lists them all.\n"
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


def render_document_lists(title: str, base_url: str, topic: Topic) -> dict[str, str]:
    """The topic's document list, site path -> text (``_llms/documents-1.txt`` and the pages
    after it): one line a document, as the root ``llms.txt`` of a smaller site has them."""
    site_title, name = _site_title(title), _link_text(topic.title)
    index = site_url(base_url, in_folder(topic.id, INDEX_FILE))

    def header(page: Page) -> str:
        if page.first == 0:
            return (f"# {site_title}: {name}, documents\n\n> The {_plural(len(topic.documents), 'document')} of the "
                    f"topic `{topic.id or '/'}` ([index.json]({index})), in files of at most {LISTING_GROUP} "
                    f"documents, each file with more after it ending with a `Next:` link. Their text: "
                    f"[llms-full.txt]({site_url(base_url, full_text_file(topic.id))}); every topic: "
                    f"[llms.txt]({site_url(base_url, LLMS_TXT)}).\n\n## Documents\n\n")
        return (f"# {site_title}: {name}, from {_from(page, 'document')}\n\n> More of the documents of the topic "
                f"`{topic.id or '/'}`, listed from [{page_file(DOCUMENTS, 1)}]"
                f"({site_url(base_url, in_folder(topic.id, page_file(DOCUMENTS, 1)))}).\n\n## Documents\n\n")

    blocks = [Block(_document_line(base_url, doc)) for doc in topic.documents]
    return _paged(blocks, LISTING_GROUP, topic.id, DOCUMENTS, base_url, header,
                  lambda page: f"{name}: documents from {page.first + 1}")


def render_topic_lists(title: str, base_url: str, topics: list[Topic], files: dict[str, int],
                       lists: dict[str, int]) -> dict[str, str]:
    """The root ``llms.txt`` of a site whose document lines exceed a page, and its later pages:
    one section a topic, linking its text and its document list (``render_document_lists``);
    ``files`` and ``lists``: each topic's count of text and list files."""
    site_title = _site_title(title)
    blocks = [
        Block(f"\n## {_topic_heading(topic)}\n\n{_full_link(base_url, topic, files[topic.id])}"
              f"- [{_link_text(topic.title)}: documents]({site_url(base_url, in_folder(topic.id, page_file(DOCUMENTS, 1)))}): "
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
                f"[llms.txt]({site_url(base_url, LLMS_TXT)}).\n")

    return _paged(blocks, TOPICS_GROUP, "", TOPICS, base_url, header,
                  lambda page: f"{site_title}: topics from {page.first + 1}")


def render_llms_files(title: str, base_url: str, topics: list[Topic], texts: dict[str, str]) -> dict[str, str]:
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
