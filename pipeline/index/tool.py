"""IndexTool: ``topic-spec.md`` data -> ``index.json`` in every directory of the site, plus the
JSON Schemas of those files in ``_schema/`` at the site root (``publish_schemas``)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orjson

from pipeline.config import SiteConfig
from pipeline.fsutil import require_dir, write_bytes_atomic
from pipeline.index.hal import SCHEMA_DIR, SCHEMA_FILES, directory_index
from pipeline.site.state import BuildState, Digest, file_hash, output_hash
from pipeline.site.tree import INDEX_FILE, TOPIC_SPEC_FILE, child_dirs, humanize, node_dirs, site_dirs
from pipeline.topicspec.specfile import read_topic_spec


@dataclass
class IndexReport:
    directories: int = 0
    written: int = 0


class _Specs:
    """Each directory's ``topic-spec.md``: hashed once, its data block parsed on demand and kept
    only until ``done`` (a site's parsed pages together: ~1 GB at 100,000 documents)."""

    def __init__(self, site: Path, dirs: list[str]):
        self.site = site
        self.hashes: dict[str, str | None] = {}
        for d in dirs:
            try:
                self.hashes[d] = output_hash((site / d / TOPIC_SPEC_FILE).read_bytes())
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                self.hashes[d] = None
        self._parsed: dict[str, dict | None] = {}
        self._documents: dict[str, int] = {}

    def get(self, dir_rel: str) -> dict | None:
        if dir_rel not in self._parsed:
            has = self.hashes.get(dir_rel) is not None
            spec = read_topic_spec(self.site / dir_rel / TOPIC_SPEC_FILE) if has else None
            self._parsed[dir_rel] = spec
            self._documents[dir_rel] = len(spec["documents"]) if spec else 0
        return self._parsed[dir_rel]

    def documents(self, dir_rel: str) -> int:
        """How many documents the directory's page lists (0 without a page)."""
        if dir_rel not in self._documents:
            self.get(dir_rel)
        return self._documents[dir_rel]

    def done(self, dir_rel: str) -> None:
        """The directory's index.json is written: its parsed page is not needed any more (its
        parent needs only the count)."""
        self._parsed.pop(dir_rel, None)

    def hash(self, dir_rel: str) -> str | None:
        return self.hashes.get(dir_rel)


def run_index(site: Path, config: SiteConfig, *, state: BuildState | None = None) -> IndexReport:
    """Write ``index.json`` in every node directory of ``site`` and publish the schemas.

    With ``state`` (a build), a directory whose inputs (its and its children's ``topic-spec.md``,
    the site's title and base URL) are unchanged since the previous build keeps its index.json
    unread and unparsed when that file is still what the build wrote."""
    report = IndexReport()
    dirs = node_dirs(require_dir(site, "site"))
    nodes = set(dirs)
    for dir_rel in site_dirs(site):  # a folder without documents below it is no node (any more)
        if dir_rel not in nodes and (site / dir_rel / INDEX_FILE).is_file():
            (site / dir_rel / INDEX_FILE).unlink()
    specs = _Specs(site, dirs)
    # children before their parent (``node_dirs`` sorts a parent first): a parent then needs
    # only their document counts, and one parsed page at a time is held
    for dir_rel in reversed(dirs):
        kids = [k for k in child_dirs(site, dir_rel) if k in nodes]
        target = site / dir_rel / INDEX_FILE
        digest = Digest(
            config.normalized_base_url, config.title, dir_rel, specs.hash(dir_rel), [[k, specs.hash(k)] for k in kids]
        ).hex()
        report.directories += 1
        entry = state.get("index", dir_rel, digest) if state is not None else None
        if entry is not None and file_hash(target) == entry.get("output"):
            state.put("index", dir_rel, digest, output=entry["output"])
            specs.done(dir_rel)
            continue
        spec = specs.get(dir_rel)
        children = [{"id": child, "title": humanize(child), "documents": specs.documents(child)} for child in kids]
        doc = directory_index(
            base_url=config.normalized_base_url,
            dir_rel=dir_rel,
            title=humanize(dir_rel) or config.title,
            children=children,
            specs=spec["documents"] if spec else [],
            model=spec["model"] if spec else None,
            prompt_matching=spec.get("prompt_matching") if spec else None,
        )
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
        del doc, spec
        specs.done(dir_rel)
        report.written += write_bytes_atomic(target, data)
        if state is not None:
            state.put("index", dir_rel, digest, output=output_hash(data))
    report.written += publish_schemas(site)
    return report


def schema_texts() -> dict[str, bytes]:
    """The shipped JSON Schemas (``pipeline/schemas/*.json``) by file name."""
    folder = resources.files("pipeline") / "schemas"
    return {entry.name: entry.read_bytes() for entry in sorted(folder.iterdir(), key=lambda e: e.name) if entry.name.endswith(".json")}


def publish_schemas(site: Path) -> int:
    """Copy the schemas to ``site/_schema/`` (unchanged files untouched, others removed).
    Returns how many files were written."""
    shipped = schema_texts()
    assert set(SCHEMA_FILES.values()) <= shipped.keys(), "pipeline/schemas/ lacks a schema index.json links to"
    folder = site / SCHEMA_DIR
    written = sum(write_bytes_atomic(folder / name, data) for name, data in shipped.items())
    for path in sorted(folder.iterdir()):
        if path.name not in shipped and path.is_file():
            path.unlink()
    return written
