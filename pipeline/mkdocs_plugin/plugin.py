"""``plugins: [pipeline]`` in ``mkdocs.yml``: ``mkdocs build`` (and every rebuild of ``mkdocs
serve``) also builds the agent-ready site of ``docs_dir`` into ``site_dir/<prefix>/``.

The agent site is a ``pipeline build`` of the pages MkDocs rendered (documents MkDocs leaves out,
``exclude_docs`` and drafts, are left out too) into a work folder kept between builds (so a
rebuild reuses what did not change, and the embedding cache holds the vectors), then copied, less
its hidden bookkeeping files, into ``site_dir/<prefix>/`` (MkDocs empties ``site_dir`` on every
build). Each chunk record, index.json item and search hit carries ``page_url``: the URL of the
MkDocs page and the anchor MkDocs gave the heading the chunk lies under (``anchors.py``,
``pipeline/sources/pages.py``).

Messages: the pipeline's notes about the content (an oversize chunk) are logged at INFO, so
``mkdocs build --strict`` fails on none of them; bad input fails the build (``PluginError``).
"""

from __future__ import annotations

import logging
import os
import shutil
import warnings
from pathlib import Path
from urllib.parse import urlsplit

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin

from pipeline.mkdocs_plugin.anchors import Heading, match_anchors, page_headings, source_headings
from pipeline.sources.pages import PageLocation

log = logging.getLogger("mkdocs.plugins.pipeline")


class PipelineConfig(base.Config):
    enabled = c.Type(bool, default=True)
    prefix = c.Type(str, default="agents")  # the agent site's folder in site_dir
    config = c.Optional(c.File(exists=True))  # a pipeline site.toml (chunking, related_k, ...)
    embedder = c.Optional(c.Type(str))  # default: the site.toml's, else the real model
    cache_dir = c.Type(str, default=".embedding-cache")  # relative to mkdocs.yml
    work_dir = c.Type(str, default=".pipeline-mkdocs")  # the kept build, relative to mkdocs.yml


class PipelinePlugin(BasePlugin[PipelineConfig]):
    """The MkDocs entry point ``pipeline`` (pyproject.toml ``mkdocs.plugins``)."""

    def on_startup(self, *, command, dirty) -> None:  # noqa: ARG002 - MkDocs' hook signature
        # Defined so that MkDocs keeps this instance across the rebuilds of ``mkdocs serve``.
        self._pages: dict[str, tuple[str, list[Heading]]] = {}

    def on_config(self, config):
        prefix = self.config.prefix.strip("/")
        if not prefix or prefix in (".", "..") or "/" in prefix:
            raise PluginError(f"pipeline: prefix must be one folder name, got {self.config.prefix!r}")
        self._prefix = prefix
        return config

    def on_files(self, files, *, config):  # noqa: ARG002
        # A page rendered by an earlier build of this process (``mkdocs serve --dirty`` renders
        # only what changed) stays known while its file does.
        current = {f.src_uri for f in files if f.is_documentation_page()}
        self._pages = {rel: page for rel, page in getattr(self, "_pages", {}).items() if rel in current}
        return files

    def on_page_content(self, html, *, page, config, files):  # noqa: ARG002
        if self.config.enabled:
            self._pages[page.file.src_uri] = (page.url, page_headings(html))
        return html

    def on_post_build(self, *, config) -> None:
        if not self.config.enabled:
            return
        from pipeline.errors import PipelineError
        from pipeline.quiet import set_quiet
        from pipeline.site.build import build

        set_quiet()  # no progress bars inside MkDocs' output
        root = Path(config.config_file_path).parent if config.config_file_path else Path.cwd()
        docs = Path(config.docs_dir)
        work = (root / self.config.work_dir).resolve()
        agent_site = work / "site"
        site_config = self._site_config(config, root, docs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                report = build(docs, agent_site, site_config, progress=False)
            except PipelineError as error:
                raise PluginError(f"pipeline: {error}") from None
        for w in caught:
            if issubclass(w.category, UserWarning):
                log.info("pipeline: %s", w.message)
        target = Path(config.site_dir) / self._prefix
        copied = publish_copy(agent_site, target)
        log.info("pipeline: agent site in %s (%s; %d files)", target, report.summary(), copied)

    def _site_config(self, config, root: Path, docs: Path):
        from pipeline.config import load_config

        site_config = load_config(Path(self.config.config) if self.config.config else None)
        site_url = config.site_url or ""
        base_path = urlsplit(site_url).path if site_url else "/"
        base_path = base_path if base_path.endswith("/") else base_path + "/"
        return site_config.with_overrides(
            title=config.site_name,
            base_url=f"{base_path}{self._prefix}/",
            embedder=self.config.embedder,
            cache_dir=(root / self.config.cache_dir).resolve(),
            exclude=(*site_config.exclude, *self._unpublished(docs)),
            pages=self._locations(docs, site_url or "/"),
        )

    def _unpublished(self, docs: Path) -> list[str]:
        """Anchored ``exclude`` patterns (``sources/exclude.py``) of the markdown files MkDocs did not
        render (``exclude_docs``, drafts, a README beside an index): no page, no agent document."""
        out = []
        for folder, dirs, names in os.walk(docs):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                rel = Path(folder, name).relative_to(docs).as_posix()
                if name.endswith(".md") and not name.startswith(".") and rel not in self._pages:
                    out.append("/" + _escape_glob(rel))
        return out

    def _locations(self, docs: Path, site_url: str) -> dict[str, PageLocation]:
        from pipeline.fsutil import read_text
        from pipeline.parsing.markdown import parse_markdown

        base_url = site_url if site_url.endswith("/") else site_url + "/"
        out = {}
        for rel, (url, headings) in sorted(self._pages.items()):
            try:
                document = parse_markdown(read_text(docs / rel), str(docs / rel))
            except Exception:  # the build reads it again and reports what is wrong, naming it
                continue
            out[rel] = PageLocation(base_url + url, match_anchors(source_headings(document), headings))
        return out


def _escape_glob(rel: str) -> str:
    """``rel`` as a pattern matching itself only (gitignore escapes)."""
    return "".join("\\" + ch if ch in "*?[]\\!#" else ch for ch in rel)


def publish_copy(source: Path, target: Path) -> int:
    """Copy the built agent site into ``target`` (emptied first), hard-linking where the two share
    a filesystem; hidden files (the build's bookkeeping) stay behind. Returns the file count."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    count = 0
    for folder, dirs, names in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(folder).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(names):
            if name.startswith("."):
                continue
            src, dst = Path(folder, name), target / rel / name
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
            count += 1
    return count
