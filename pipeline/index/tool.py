"""IndexTool: ``topic-spec.md`` data -> ``index.json`` in every directory of the site."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from pipeline.config import SiteConfig
from pipeline.fsutil import write_bytes_atomic
from pipeline.index.hal import directory_index
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
        )
        data = orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
        report.written += write_bytes_atomic(site / dir_rel / INDEX_FILE, data)
        report.directories += 1
    return report
