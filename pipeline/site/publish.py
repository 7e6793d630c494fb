"""Publish: what browsers and embedding readers need beside the index (the build's last stage).

* ``_assets/``: the browser client (``client.js``, ``simhash.js``), the search page's script
  and stylesheet, copied from ``pipeline/assets``, plus markdown-it and DOMPurify from
  ``node_modules`` (``site/vendor.py``), plus the page's script bundled into one content-named
  file, ``app-<hash>.js`` (``site/bundle.py``); files there that are not shipped are removed.
* ``index.html``: the search page (``templates/index.html.j2``), at the site root.
* ``<topic>/_embeddings.bin`` and ``<topic>/_index/embeddings-<p>.bin``: every chunk embedding
  of a topic, 32 documents a page (format: ``siteformat/vectors.py``; ``site/vectorpages.py``),
  read from the embedding cache that the spec stage has just filled, by the manifests'
  ``source_sha256`` and ``content_xxh64``: no model is loaded and no embedding recomputed.
  A directory that no longer holds documents loses its pages.
* ``_search/``: the static lexical index, chunk records and topic centroids
  (``pipeline/search/index.py``), written last because it reads the files above.

The directory is ``_assets``, not ``assets``: every directory not starting with ``_`` or ``.``
is a node of the site and would get an index.json and a place in the topic tree.
Unchanged files are not rewritten (``write_bytes_atomic``), so a rebuild keeps their ETags.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from pipeline import __version__
from pipeline.chunking.tool import read_manifests
from pipeline.config import SiteConfig
from pipeline.embedding.cache import EmbeddingCache
from pipeline.errors import PipelineError
from pipeline.fsutil import require_dir, write_bytes_atomic, write_text_atomic
from pipeline.handoff import BuildHandoff
from pipeline.reuse.state import BuildState
from pipeline.search.index import SearchReport, build_search_index
from pipeline.site.bundle import page_bundle
from pipeline.site.llms import write_llms_files
from pipeline.site.vectorpages import publish_topic_vectors
from pipeline.site.vendor import vendored_assets
from pipeline.siteformat import vectors
from pipeline.siteformat.searchlayout import SEARCH_DIR
from pipeline.siteformat.tree import TOPIC_SPEC_FILE, document_key, site_dirs
from pipeline.topicspec.specfile import read_topic_summary

ASSETS_DIR = "_assets"
INDEX_HTML = "index.html"
EMBEDDINGS_FILE = vectors.FILE_NAME
ASSET_SUFFIXES = (".js", ".css")


@dataclass
class PublishReport:
    written: int = 0
    topics_with_embeddings: int = 0
    embedding_bytes: int = 0
    removed: list[str] = field(default_factory=list)
    search: SearchReport | None = None


def publish_site(
    site: Path, config: SiteConfig, *, dtype: str = vectors.DEFAULT_DTYPE, state: BuildState | None = None,
    handoff: BuildHandoff | None = None,
) -> PublishReport:
    """Write ``_assets/``, ``index.html`` and every topic's vector pages into ``site``, then
    the search index.

    With ``state`` (a build), a topic whose spec inputs this build recorded (chunks, model and
    exact vectors: the ``topics`` digest) are those its pages were written from keeps them,
    unread from the cache, when the files still hold what was written; in a topic that changed,
    a page whose documents and rows are unchanged is neither encoded nor written
    (``site/vectorpages.py``).
    ``handoff`` (a build, ``handoff.py``): the assets, query model, static encoder, vectors,
    term counts and index drafts the build holds already; the same bytes as without."""
    handoff = handoff or BuildHandoff()
    site = require_dir(Path(site), "site")
    report = PublishReport()
    written, removed = handoff.assets if handoff.assets is not None else publish_assets(site)
    report.written += written
    report.removed += removed
    from pipeline.site.browser_model import MODEL_DIR, publish_browser_model

    # _assets/model/, when search_model allows
    written, removed = (handoff.model_files if handoff.model_files is not None
                        else publish_browser_model(site, config, ASSETS_DIR))
    report.written += written
    report.removed += removed
    # The page offers the query model only when the config allows it and the model is shipped.
    model = config.search_model and (site / ASSETS_DIR / MODEL_DIR / "model.json").is_file()
    report.written += write_text_atomic(site / INDEX_HTML, render_index_html(title=config.title, model=model))
    report.written += write_llms_files(site, config, state)  # llms.txt, llms-full.txt, sitemap.xml (site/llms.py)
    read = handoff.vectors_of or (lambda dir_rel: topic_vectors(site, dir_rel, config.cache_dir))
    for dir_rel in site_dirs(site):
        pages = publish_topic_vectors(site, dir_rel, read, dtype=dtype, state=state)
        report.written += pages.written
        report.removed += pages.removed
        if pages.pages:
            report.topics_with_embeddings += 1
            report.embedding_bytes += pages.size
    if handoff.release_vectors is not None:
        handoff.release_vectors()
    encoder = handoff.encoder
    if encoder is None:
        from pipeline.site.browser_model import site_model_name
        from pipeline.site.static_encoder import site_encoder

        encoder = site_encoder(config, site_model_name(site), state=state, search_dir=site / SEARCH_DIR)
    report.search = build_search_index(site, encoder=encoder, state=state, handoff=handoff)
    report.written += report.search.written
    return report


def shipped_assets() -> dict[str, bytes]:
    """The files of ``pipeline/assets`` that the site serves, by name."""
    folder = resources.files("pipeline") / "assets"
    return {
        entry.name: entry.read_bytes()
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(ASSET_SUFFIXES) and not entry.name.startswith(".")
    }


def publish_assets(site: Path) -> tuple[int, list[str]]:
    """Copy the shipped assets into ``site/_assets/``; remove what is not shipped. (written, removed)

    Also copies the vendored browser libraries (``site/vendor.py``: markdown-it, DOMPurify) and
    writes the page's bundle (``site/bundle.py``); an older bundle is removed as not shipped."""
    bundle_name, bundle = page_bundle()  # needs node_modules: a missing esbuild fails before a write
    shipped = shipped_assets() | vendored_assets() | {bundle_name: bundle}
    folder = site / ASSETS_DIR
    written = sum(write_bytes_atomic(folder / name, data) for name, data in shipped.items())
    removed = []
    for path in sorted(folder.iterdir()):
        if path.name not in shipped and not path.name.startswith("."):
            if path.is_dir():
                continue  # never ours: leave it
            path.unlink()
            removed.append(path.relative_to(site).as_posix())
    return written, removed


@lru_cache(maxsize=1)
def _templates() -> Environment:
    return Environment(
        loader=PackageLoader("pipeline", "templates"),
        undefined=StrictUndefined,
        autoescape=select_autoescape(["html", "j2"], default=True),
        keep_trailing_newline=True,
        auto_reload=False,  # a file of the installed package: compiled once, never re-checked
    )


def index_template():
    """The search page's compiled template (compiled once per process: a build does it while it
    encodes, not after its last vector)."""
    return _templates().get_template("index.html.j2")


def render_index_html(*, title: str, model: bool = True) -> str:
    """The search page; ``title`` is HTML-escaped. Scripts and styles load from ``_assets/``, its
    own script as one bundle (``site/bundle.py``).
    ``model`` (site config ``[search] model``) lets the page load the query model to re-rank."""
    return index_template().render(
        title=title, assets=ASSETS_DIR, script=page_bundle()[0], version=__version__, model="on" if model else "off"
    )


def topic_vectors(
    site: Path, dir_rel: str, cache_dir: Path, *, embedder=None
) -> tuple[str, list[tuple[str, np.ndarray]]] | None:
    """(model, [(document stem, its chunk vectors in index order)]) of one directory, or None
    when it has no chunked documents. The model is the one ``topic-spec.md`` names.

    Raises PipelineError when the directory has chunks but no topic-spec.md, or the cache
    lacks a chunk's vector (the spec stage ran with another cache directory or model).
    """
    manifests = read_manifests(site, dir_rel)
    if not manifests:
        return None

    spec_path = site / dir_rel / TOPIC_SPEC_FILE
    if not spec_path.is_file():
        raise PipelineError("chunked documents but no topic-spec.md; run `pipeline spec` first", path=spec_path)
    model = read_topic_summary(spec_path).get("model")
    if not isinstance(model, str) or not model:
        raise PipelineError("topic-spec.md names no model", path=spec_path)
    documents = []
    caches: dict[str, EmbeddingCache] = {}
    for manifest in manifests:
        if manifest["strategy_key"] not in caches:  # read each cache's index.json once
            caches[manifest["strategy_key"]] = EmbeddingCache(cache_dir, manifest["strategy_key"], model)
        cache = caches[manifest["strategy_key"]]
        source = f"{dir_rel}/{manifest['source']}" if dir_rel else manifest["source"]
        hashes = [c["content_xxh64"] for c in manifest["chunks"]]
        found = cache.lookup(source, manifest["source_sha256"][:16], hashes)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing and embedder is not None and embedder.name == model:
            # The spec stage trusted the cache's metadata; reading showed vectors lost or corrupt
            # (the cache warned): embed those chunks again and store the entry whole.
            folder = site / dir_rel
            texts = [(folder / manifest["chunks"][i]["href"]).read_bytes().decode("utf-8") for i in missing]
            for i, vector in zip(missing, embedder.embed(texts, progress=False)):
                found[i] = vector
            cache.store(source, manifest["source_sha256"][:16], hashes, found)
            cache.save()
            missing = []
        if missing:
            raise PipelineError(
                f"{len(missing)} of {len(found)} chunk embeddings (model {model}) are not in the cache {cache_dir}; "
                "run `pipeline spec` with the same --cache-dir first",
                path=site / source,
            )
        documents.append((document_key(manifest["source"]), np.vstack(found) if found else np.zeros((0, 0), np.float32)))
    return model, documents
