"""IndexTool: ``topic-spec.md`` data -> ``index.json`` in every directory of the site, plus the
JSON Schemas of those files in ``_schema/`` at the site root (``publish_schemas``)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orjson

from pipeline.config import SiteConfig
from pipeline.fsutil import write_bytes_atomic
from pipeline.index.hal import SCHEMA_DIR, SCHEMA_FILES, directory_index
from pipeline.site.tree import INDEX_FILE, TOPIC_SPEC_FILE, child_dirs, humanize, site_dirs
from pipeline.spec.topicspec import read_topic_spec


@dataclass
class IndexReport:
    directories: int = 0
    written: int = 0


def _spec(site: Path, dir_rel: str) -> dict | None:
    path = site / dir_rel / TOPIC_SPEC_FILE
    return read_topic_spec(path) if path.is_file() else None


def run_index(site: Path, config: SiteConfig) -> IndexReport:
    """Write ``index.json`` in every node directory of ``site`` and publish the schemas."""
    report = IndexReport()
    specs = {d: _spec(site, d) for d in site_dirs(site)}
    for dir_rel, spec in specs.items():
        children = [
            {
                "id": child,
                "title": humanize(child),
                "documents": len(specs[child]["documents"]) if specs.get(child) else 0,
            }
            for child in child_dirs(site, dir_rel)
        ]
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
        report.written += write_bytes_atomic(site / dir_rel / INDEX_FILE, data)
        report.directories += 1
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
