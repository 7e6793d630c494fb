"""A reusable site consistency checker for tests: is this folder a whole, readable site?

``site_problems(site)`` lists every way a reader could be let down, as strings (empty: consistent):

* the marker is there; no temp file of an atomic write anywhere in the site;
* every ``index.json`` parses, and every link it holds, its later pages' and its documents'
  resources' (``_links`` and entry links: absolute under ``base_url``; chunk ``href``s: relative
  to the topic's folder) names an existing file;
* every chunk item: its file exists, a manifest in that ``_chunks/`` folder records the same href
  with the file's ``content_xxh64`` and the same line span, and the file ends with exactly the
  source text between the record's offsets (the source is published beside the index), its
  relative link destinations moved one folder up as a chunk file needs them
  (``parsing/links.py``; a vault note's wikilink rewrites are not modelled).

``assert_consistent(site)`` raises with the whole list. ``built_files(site)`` is what a build
published, without the files it keeps one build longer for readers of the previous index
(``site/retire.py``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote

import orjson

from pipeline.embedding.cache import content_hash
from pipeline.fsutil import is_temp_name
from pipeline.parsing.links import link_destinations, rewrite_span
from pipeline.parsing.markdown import parse_markdown
from pipeline.reuse.state import STATE_FILE
from pipeline.site.retire import RETIRED_FILE, read_retired
from pipeline.site.staging import SITE_MARKER


def _links(doc: dict):
    """Every href in ``_links`` (values may be a link or a list of links), at any depth; a
    templated link (RFC 6570) names no one file."""
    links = doc.get("_links") or {}
    for value in links.values():
        for link in value if isinstance(value, list) else [value]:
            if isinstance(link, dict) and isinstance(link.get("href"), str) and not link.get("templated"):
                yield link["href"]


def _resolve(site: Path, index: Path, href: str, base_url: str) -> Path:
    href = unquote(href.split("#", 1)[0])
    if href.startswith("/"):
        return site / href[len(base_url) :] if href.startswith(base_url) else site / href.lstrip("/")
    return index.parent / href


def _manifests(folder: Path) -> dict[str, dict]:
    """href (relative to the topic folder) -> chunk record, from every manifest in ``_chunks``."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        try:
            manifest = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError:
            continue  # reported when an item needs it
        for record in manifest.get("chunks", []) if isinstance(manifest, dict) else []:
            if isinstance(record, dict) and "href" in record:
                out[unquote(record["href"])] = {**record, "_source": manifest.get("source")}
    return out


def site_problems(site: Path, base_url: str = "/") -> list[str]:
    site = Path(site)
    problems: list[str] = []
    if not (site / SITE_MARKER).is_file():
        problems.append(f"no {SITE_MARKER}")
    indexes = []
    for dirpath, _dirnames, filenames in os.walk(site):
        for name in filenames:
            if is_temp_name(name):
                problems.append(f"temp file {os.path.join(dirpath, name)}")
            if name == "index.json" and not os.path.basename(dirpath).startswith(("_", ".")):
                indexes.append(Path(dirpath) / name)
    for index in sorted(indexes):
        rel = index.relative_to(site)
        try:
            doc = orjson.loads(index.read_bytes())
        except orjson.JSONDecodeError as exc:
            problems.append(f"{rel}: does not parse ({exc})")
            continue
        problems += _listing_problems(site, index, rel, doc, base_url)
        for page in sorted((index.parent / "_index").glob("page-*.json")):
            try:
                problems += _listing_problems(site, index, page.relative_to(site), orjson.loads(page.read_bytes()), base_url)
            except orjson.JSONDecodeError as exc:
                problems.append(f"{page.relative_to(site)}: does not parse ({exc})")
        records = _manifests(index.parent / "_chunks")
        for first in sorted((index.parent / "_index").glob("*.doc.json")):
            problems += _document_problems(site, index, first, records, base_url)
    return problems


def _listing_problems(site: Path, index: Path, rel: Path, doc: dict, base_url: str) -> list[str]:
    """The links of a listing page (``index.json`` or a later page) and of its entries."""
    problems = []
    for href in _links(doc):
        if not _resolve(site, index, href, base_url).is_file():
            problems.append(f"{rel}: link {href} names no file")
    embedded = doc.get("_embedded", {})
    for entry in [*embedded.get("topics", []), *embedded.get("documents", [])]:
        for href in _links(entry):
            if not _resolve(site, index, href, base_url).is_file():
                problems.append(f"{rel}: entry link {href} names no file")
        for sample in entry.get("sample", []):
            if not _resolve(site, index, sample["href"], base_url).is_file():
                problems.append(f"{rel}: sample {sample['href']} names no file")
    return problems


def _document_problems(site: Path, index: Path, first: Path, records: dict, base_url: str) -> list[str]:
    """Every page of the document resource whose first page is ``first``: links and items."""
    rel = first.relative_to(site)
    try:
        pages = [orjson.loads(first.read_bytes())]
        key = pages[0]["key"]
        pages += [orjson.loads((first.parent / f"{key}.doc-{n}.json").read_bytes()) for n in range(2, pages[0]["pages"] + 1)]
        source = (index.parent / pages[0]["source"]).read_text(encoding="utf-8")
    except (OSError, orjson.JSONDecodeError, KeyError) as exc:
        return [f"{rel}: unreadable resource ({exc!r})"]
    problems = []
    # what a chunk file's relative links are moved by (parsed only when the source has a link)
    destinations = link_destinations(parse_markdown(source)) if "](" in source or "]:" in source else []
    moved = (source, destinations, Path(pages[0]["source"]).name)
    for page in pages:
        problems += [f"{rel}: link {href} names no file" for href in _links(page) if not _resolve(site, index, href, base_url).is_file()]
        for item in page.get("items", []):
            problems += _item_problems(site, index, item, records, moved, base_url)
    if sum(len(page.get("items", [])) for page in pages) != pages[0].get("count"):
        problems.append(f"{rel}: its pages list another number of chunks than its count")
    return problems


def _item_problems(site: Path, index: Path, item: dict, records: dict, moved: tuple, base_url: str) -> list[str]:
    """``moved``: (the document's source, its link destinations, its file name)."""
    where = f"{index.relative_to(site)}: {item.get('href')}"
    path = _resolve(site, index, item["href"], base_url)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return [f"{where}: chunk file missing"]
    record = records.get(unquote(item["href"]))
    if record is None:
        return [f"{where}: no manifest records it"]
    problems = []
    if content_hash(text) != record.get("content_xxh64"):
        problems.append(f"{where}: text does not match the manifest's content_xxh64")
    source, destinations, name = moved
    if not text.endswith(rewrite_span(source, record["start_offset"], record["end_offset"], destinations, name)):
        problems.append(f"{where}: text does not end with its source span")
    if (item.get("start_line"), item.get("end_line")) != (record.get("start_line"), record.get("end_line")):
        problems.append(f"{where}: lines differ from the manifest's")
    for href in _links(item):
        if not _resolve(site, index, href, base_url).is_file():
            problems.append(f"{where}: link {href} names no file")
    return problems


def assert_consistent(site: Path, base_url: str = "/") -> None:
    problems = site_problems(site, base_url)
    assert not problems, "inconsistent site:\n" + "\n".join(problems[:30])


def built_files(site: Path) -> dict[str, bytes]:
    """Every file of ``site`` by relative path, except those retired for one build and the list
    naming them: what this build made, comparable with a build that had nothing to retire. The
    build's state is in (its stamps, which depend on the clock, are in a file beside the site)."""
    retired = read_retired(site) | {RETIRED_FILE}
    return {
        rel: p.read_bytes()
        for p in sorted(Path(site).rglob("*"))
        if p.is_file() and (rel := p.relative_to(site).as_posix()) not in retired
    }
