"""Check that a built site's links resolve: every ``href`` (and ``source``) in every index file
(``index.json``, ``_index/``), every manifest page's ``_links`` and chunk ``href`` (``_chunks/``),
and every relative link or image inside every chunk file, resolved as a browser would from the file's own URL.

A chunk link whose target is missing is *missing in source* (reported, not an error) when the
same link, read from the source document's location, is missing as well: the author linked to
something the content tree does not hold (an image left out of a copy). Otherwise it is broken.
Pure reading; used by the tests on ``../shared/realdocs`` and by the benchmark.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import orjson

from pipeline.fsutil import read_text
from pipeline.parsing.links import link_destinations
from pipeline.parsing.markdown import parse_markdown
from pipeline.siteformat.hrefs import base_of, base_path, is_absolute_url, normalize_base_url, quote_path
from pipeline.siteformat.indexnames import INDEX_DIR
from pipeline.siteformat.tree import CHUNKS_DIR, INDEX_FILE, is_hidden

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass
class LinkReport:
    """What ``check_site`` found; ``ok`` when nothing is broken."""

    checked: int = 0
    broken: list[tuple[str, str]] = field(default_factory=list)  # (file relative to the site, link)
    missing_in_source: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.broken


def _target(site: Path, folder: str, link: str, base_url: str) -> Path | None:
    """The file ``link`` names, read from the site folder ``folder`` (POSIX, relative); None for
    a link that leaves the site (a scheme, or outside ``base_url``: ``/repo/`` or
    ``https://host/docs/``, whose links are checked like root-relative ones)."""
    if is_absolute_url(base_url) and link.startswith(base_url):
        link, base_url = "/" + link[len(base_url) :], "/"
    base_url = unquote(base_path(base_url))  # compared with a decoded path
    if _SCHEME.match(link) or link.startswith("//"):
        return None
    path = unquote(_path_of(link))
    if not path:
        return site / folder  # a bare #fragment or ?query: the file itself (always there)
    if path.startswith("/"):
        if not path.startswith(base_url):
            return None
        rel = path[len(base_url) :]
    else:
        rel = posixpath.normpath(posixpath.join(folder, path))
        if rel.startswith("../") or rel == "..":
            return Path("/nonexistent-outside-the-site")
    return site / rel if rel not in ("", ".") else site


def _path_of(link: str) -> str:
    """The path part of a relative reference: up to its first ``?`` or ``#``. Not ``urlsplit``,
    which drops tabs and newlines (WHATWG) and would name another file: a name with a tab is
    published percent-encoded (``siteformat/hrefs.py``), and a markdown link with one is encoded by the
    renderer, so decoding the path as it stands is the inverse of that encoding."""
    end = min((i for i in (link.find("?"), link.find("#")) if i >= 0), default=len(link))
    return link[:end]


def _hrefs(node: object):
    """Every ``href`` (a URL reference, percent-encoded) and ``source`` (a file name as stored,
    not encoded) string in a JSON document, as ``(key, value)`` (templated links skipped)."""
    if isinstance(node, dict):
        if node.get("templated"):
            return
        for key, value in node.items():
            if key in ("href", "source") and isinstance(value, str):
                yield key, value
            else:
                yield from _hrefs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _hrefs(value)


def _index_files(site: Path):
    """(an index file relative to the site, its folder's POSIX path): every node's ``index.json``
    and the files of its ``_index/`` (later listing pages, document resources), whose data hrefs
    are relative to that folder too."""
    for path in sorted(site.rglob(INDEX_FILE)):
        rel = path.relative_to(site)
        if not any(is_hidden(part) for part in rel.parts[:-1]):
            folder = rel.parent.as_posix() if rel.parent != Path(".") else ""
            yield rel, folder
            for extra in sorted((path.parent / INDEX_DIR).glob("*.json")):
                yield extra.relative_to(site), folder


def _check_chunk(site: Path, rel: str, in_source: set[str], source_folder: str, base_url: str, report: LinkReport) -> None:
    """Check the relative links of the chunk file ``rel``; ``in_source``: the destinations its
    source document holds (a missing target is excused only for a link the source has too)."""
    folder = posixpath.dirname(rel)
    text = read_text(site / rel)
    for d in link_destinations(parse_markdown(text, rel)):
        link = text[d.start : d.end]
        link = link[1:-1] if link.startswith("<") and link.endswith(">") else link
        if not link or link.startswith("/") or _SCHEME.match(link):
            continue  # only relative links move with the chunk
        report.checked += 1
        target = _target(site, folder, link, base_url)
        if target is None or target.exists():
            continue
        original = link.removeprefix("../")  # the link as the source document has it
        from_source = _target(site, source_folder, original, base_url)
        if link.startswith("../") and original in in_source and from_source is not None and not from_source.exists():
            report.missing_in_source.append((rel, link))
        else:
            report.broken.append((rel, link))


def site_base_url(site: Path) -> str:
    """The base URL ``site`` was built with, read from its root ``index.json`` (``_links.self``);
    ``/`` when it has none to say."""
    try:
        root = orjson.loads((Path(site) / INDEX_FILE).read_bytes())
        return base_of(root["_links"]["self"]["href"])
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return "/"


def check_site(site: Path, base_url: str | None = None) -> LinkReport:
    """Check every index file's href (the folders' listing pages and the documents' resources
    under ``_index/``), every manifest page's links and every relative link in every chunk file
    of ``site``, whose absolute links start with ``base_url`` (default: the one the site says it
    was built with, ``site_base_url``)."""
    site = Path(site)
    base_url = normalize_base_url(base_url) if base_url is not None else site_base_url(site)
    report = LinkReport()
    for rel, folder in _index_files(site):
        for key, href in _hrefs(orjson.loads((site / rel).read_bytes())):
            # a ``source`` is the file's name as stored: quoted here so it is read as that name
            target = _target(site, folder, quote_path(href) if key == "source" else href, base_url)
            report.checked += 1
            if target is not None and not target.exists():
                report.broken.append((rel.as_posix(), href))
    # the last source's destinations: a manifest's pages come one after another, so each source is parsed once
    last_source, in_source = None, set()
    for manifest_path in sorted(site.rglob(f"{CHUNKS_DIR}/*.json")):  # every page of every manifest
        rel_manifest = manifest_path.relative_to(site)
        if any(is_hidden(part) for part in rel_manifest.parts[:-2]):
            continue
        manifest = orjson.loads(manifest_path.read_bytes())
        source_folder = rel_manifest.parent.parent.as_posix() if rel_manifest.parent.parent != Path(".") else ""
        for _, href in _hrefs(manifest.get("_links") or {}):  # the page's own and its paging links
            report.checked += 1
            target = _target(site, source_folder, href, base_url)
            if target is not None and not target.exists():
                report.broken.append((rel_manifest.as_posix(), href))
        source_path = site / source_folder / manifest["source"]
        if source_path != last_source:
            source_text = read_text(source_path) if source_path.is_file() else ""
            in_source = {source_text[d.start : d.end].strip("<>") for d in link_destinations(parse_markdown(source_text))}
            last_source = source_path
        for record in manifest["chunks"]:
            rel = (rel_manifest.parent.parent / record["href"]).as_posix()
            report.checked += 1  # the record's own href: a missing chunk file is broken here, not a stop
            if not (site / rel).is_file():
                report.broken.append((rel_manifest.as_posix(), record["href"]))
                continue
            _check_chunk(site, rel, in_source, source_folder, base_url, report)
    return report
