"""The build: a fixed sequence of stages, readable from one function (``build``).

1. plan: read and chunk every document of CONTENT, read its keyword tables and question files
   (bad input stops here; nothing written yet)
2. sync: mirror CONTENT's files into SITE (sources, keyword tables, questions, assets)
3. chunk: write ``_chunks/`` (ChunkingTool)
4. spec: embed with the cache, write ``topic-spec.md`` (TopicSpec)
5. index: write ``index.json`` in every directory (IndexTool)
6. publish: the browser client in ``_assets/``, ``index.html``, each topic's ``_embeddings.bin``

SITE belongs to the pipeline: a marker file proves it, and files there that neither CONTENT
nor a stage accounts for are removed, so deleted documents disappear from the site.

The stages run in a staging copy of SITE that is swapped in as one step only when all of them
succeeded (``site/staging.py``): a build that fails or is killed leaves SITE as it was. CONTENT,
SITE and the cache never overlap (``site/confine.py``, checked before anything is written), and
symbolic links in CONTENT are skipped with a warning, never followed.
"""

from __future__ import annotations

import gc
import os
import shutil
import stat
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.chunking.tool import ChunkReport, manifests_by_dir, plan_chunks, write_chunks
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache_admin import prune_by_budget
from pipeline.embedding.executor import make_executor
from pipeline.embedding.registry import make_embedder
from pipeline.fsutil import require_dir, write_bytes_atomic
from pipeline.index.hal import SCHEMA_DIR
from pipeline.index.tool import IndexReport, run_index
from pipeline.site.confine import check_separate, is_link, warn_link
from pipeline.site.exclude import Exclude
from pipeline.search.index import SEARCH_DIR
from pipeline.site.llms import LLMS_FILES
from pipeline.site.staging import SITE_MARKER, Staging, sibling
from pipeline.site import stamps
from pipeline.site.state import BuildState, entry_is_valid, load_state, output_hash, save_state
from pipeline.site.vendor import check_vendored
from pipeline.site.publish import ASSETS_DIR, EMBEDDINGS_FILE, INDEX_HTML, PublishReport, publish_site
from pipeline.site.tree import CHUNKS_DIR, INDEX_FILE, KEYWORDS_FILE, TOPIC_SPEC_FILE, usable
from pipeline.spec.keywords import is_generated
from pipeline.spec.topicspec import SpecReport, check_topic_inputs, run_spec

# Written by stages into the site; never copied from content, never removed by sync.
GENERATED_NAMES = {INDEX_FILE, TOPIC_SPEC_FILE, SITE_MARKER, EMBEDDINGS_FILE}
GENERATED_DIRS = {CHUNKS_DIR}
ROOT_GENERATED = {ASSETS_DIR, SCHEMA_DIR, INDEX_HTML, SEARCH_DIR, *LLMS_FILES}  # browser client, schemas, search index, llms.txt


@dataclass
class BuildReport:
    synced: int = 0
    removed: list[str] = field(default_factory=list)
    chunk: ChunkReport | None = None
    spec: SpecReport | None = None
    index: IndexReport | None = None
    publish: PublishReport | None = None

    def summary(self) -> str:
        c, s, i, p = self.chunk, self.spec, self.index, self.publish or PublishReport()
        return (
            f"{c.documents} documents, {c.chunks} chunks ({s.embedded} embedded, {s.cached} from cache), "
            f"{s.topics} topics, {i.directories} index.json files; "
            f"{self.synced + c.written + s.written + i.written + p.written} files written, "
            f"{len(self.removed) + len(c.removed) + len(s.removed) + len(p.removed)} removed"
        )


def prepare_site(site: Path) -> None:
    """Mark SITE (a build's staging folder, checked by ``staging.check_output``) as the pipeline's."""
    write_bytes_atomic(site / SITE_MARKER, b"built by pipeline; files here are replaced on every build\n")


def sync_sources(
    content: Path, site: Path, exclude: Exclude | None = None, *, state: BuildState | None = None
) -> tuple[int, list[str]]:
    """Mirror CONTENT's files into SITE (unchanged files untouched); remove what CONTENT lost.
    What ``exclude`` names (the config's ``exclude`` globs) is not copied, as if CONTENT lacked it.

    Generated files (index.json, topic-spec.md, ``_chunks/``) are kept while the directory
    holding them still exists in CONTENT; their stages keep them current.

    With ``state`` (a build), a file whose stamp and whose copy's stamp are the ones the state
    recorded (state section ``sources``, ``site/stamps.py``) is neither read nor compared.
    """
    written = 0
    previous = state.old.get("sources", {}) if state is not None else {}
    wanted: set[Path] = {Path(".")}
    hidden_or_generated = lambda rel: rel.name.startswith(".") or rel.name in GENERATED_DIRS  # noqa: E731
    for rel in sorted(_walk(content, hidden_or_generated), key=lambda rel: rel.parts):
        if hidden_or_generated(rel) or rel.name in GENERATED_NAMES:
            continue
        if exclude is not None and exclude.excludes(rel.as_posix(), is_dir=(content / rel).is_dir()):
            continue
        path = content / rel
        if is_link(path):  # never followed (site/confine.py): it could publish any file
            warn_link(path, content)
            continue
        wanted.add(rel)
        if state is None:
            if path.is_file():
                written += write_bytes_atomic(site / rel, path.read_bytes())
            continue
        source = stamps.stat(path)  # both stats before any read (site/stamps.py)
        if source is None or not stat.S_ISREG(source.st_mode):
            continue
        key = rel.as_posix()
        copy = stamps.stat(site / rel)
        source_stamp, copy_stamp = stamps.recordable(source), stamps.recordable(copy)
        known = previous.get(key)
        if entry_is_valid(known) and stamps.matches(source, known.get("source")) and stamps.matches(copy, known.get("copy")):
            state.put("sources", key, known["digest"], source=known["source"], copy=known["copy"])
            continue
        data = path.read_bytes()
        changed = write_bytes_atomic(site / rel, data)
        written += changed
        extra = {"source": source_stamp} if source_stamp else {}
        if copy_stamp and not changed:  # a copy written just now is stamped by the next build
            extra["copy"] = copy_stamp
        state.put("sources", key, output_hash(data), **extra)
    removed = []
    # Folders that hold only what sync keeps are not entered: hidden ones at the root, the root's
    # generated folders, and ``_chunks`` of a directory CONTENT still has.
    skip = lambda rel: (len(rel.parts) == 1 and (rel.name.startswith(".") or rel.name in ROOT_GENERATED)) or (
        rel.name in GENERATED_DIRS and rel.parent in wanted
    )
    for rel in sorted(_walk(site, skip), key=lambda rel: rel.parts, reverse=True):  # children before parents
        path = site / rel
        if rel in wanted or rel.parts[0].startswith(".") or _generated_and_owned(rel, wanted, site):
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
        removed.append(rel.as_posix())
    return written, removed


def _walk(root: Path, skip) -> list[Path]:
    """Every file and folder below ``root`` as a relative path, except folders ``skip(rel)``
    names and what they hold. Symbolic links to folders are listed, not entered."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        kept = []
        for name in dirnames:
            rel = base / name
            if skip(rel) or not usable(dirpath, name, is_file=False):
                continue
            out.append(rel)
            if not os.path.islink(os.path.join(dirpath, name)):
                kept.append(name)
        dirnames[:] = kept
        out.extend(base / name for name in filenames if usable(dirpath, name))
    return out


def _generated_and_owned(rel: Path, wanted: set[Path], site: Path) -> bool:
    """A stage's output whose directory still exists in CONTENT (or the root's generated folders).

    A ``_keywords/words.md`` the spec stage generated (it starts with the generated marker)
    counts as output while CONTENT has no table of its own there.
    """
    parts = rel.parts
    if parts[0] in ROOT_GENERATED:
        return True
    if parts[-1] == "_keywords" or parts[-2:] == tuple(KEYWORDS_FILE.split("/")):
        topic = rel.parent if parts[-1] == "_keywords" else rel.parent.parent
        return topic in wanted and is_generated(site / topic / KEYWORDS_FILE)
    for i, part in enumerate(parts):
        if part in GENERATED_DIRS:
            return Path(*parts[:i]) in wanted
    return rel.name in GENERATED_NAMES and rel.parent in wanted


def build(
    content: Path,
    site: Path,
    config: SiteConfig,
    *,
    embedder: Embedder | None = None,
    progress: bool = True,
) -> BuildReport:
    """Build CONTENT into SITE, published as one switch when every stage succeeded.

    Raises PipelineError on bad input, overlapping folders or a concurrent build into SITE;
    SITE is then (as after any failure or kill) exactly what it was."""
    content, site = Path(content), Path(site)
    require_dir(content, "content")
    out = Path(os.path.realpath(site))
    check_separate(
        {"content": content, "output": out, "cache": Path(config.cache_dir),
         "staging": sibling(out, "staging"), "previous site": sibling(out, "previous"),
         "swapping": sibling(out, "swapping")}
    )
    check_vendored()  # the search page's libraries: a missing node_modules fails before any write
    embedder = embedder or make_embedder(config.embedder)
    executor = make_executor(config.executor, config.embedder, workers=config.workers, address=config.ray_address or None)
    counter = embedder.counter()
    with _fewer_collections(), Staging(site, retire_removed=config.retire_removed_files) as staging:
        work = staging.dir
        # What the previous build recorded (site/state.py): unchanged inputs reuse its results.
        state = load_state(work) if (work / SITE_MARKER).is_file() else BuildState()
        plans = plan_chunks(content, config, counter, site=work, state=state)
        check_topic_inputs(content, Exclude(config.exclude))
        prepare_site(work)
        report = BuildReport()
        report.synced, report.removed = sync_sources(content, work, Exclude(config.exclude), state=state)
        plans = [_rebase(plan, work) for plan in plans]
        report.chunk = write_chunks(work, plans, state=state)
        manifests = manifests_by_dir(plans)
        del plans  # every chunk's text and record: the later stages read what they need
        report.spec = run_spec(work, config, embedder, progress=progress, state=state, executor=executor, manifests=manifests)
        del manifests
        report.index = run_index(work, config, state=state)
        report.publish = publish_site(work, config, state=state, embedder=embedder)
        prune_by_budget(config)  # only when the config sets a budget; never "not in this build"
        save_state(work, state)
        staging.publish()
    return report


@contextmanager
def _fewer_collections(young: int = 100_000):
    """Run the cyclic garbage collector every ``young`` allocations instead of 700 (restored
    after). A build holds hundreds of thousands of long-lived containers (the build state, the
    manifests, the plans): at the default threshold the collector's full passes over them were a
    quarter of a no-op rebuild of 10k documents; little of what a build frees is cyclic
    (reference counting frees the rest at once), so the extra memory is a young generation."""
    before = gc.get_threshold()
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _rebase(plan, site: Path):
    """The same plan, its document now read from SITE (the synced copy)."""
    from dataclasses import replace

    return replace(plan, doc=replace(plan.doc, root=site))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
