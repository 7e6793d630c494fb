"""The build: a fixed sequence of stages, readable from one function (``build``).

1. plan: read and chunk every document of CONTENT, read its keyword tables and question files
   (bad input stops here; nothing written yet). When the cache holds nothing of the model (a
   cold build: every chunk will be embedded), the model loads meanwhile in a background thread
   (``embedding/warmup.py``), so the encode starts with it loaded.
2. sync: mirror CONTENT's files into SITE (sources, keyword tables, questions, assets); a first
   build (no previous site) copies the folders, keyword tables and questions first (what step 4
   reads to start its encoding) and the rest once the encoding runs
3. chunk: write ``_chunks/`` (ChunkingTool)
4. spec: embed with the cache, write ``topic-spec.md`` (TopicSpec). The encoding starts before
   step 3 and runs in a background thread (native code, GIL released) while the chunk files are
   written and the keywords extracted: the same vectors, the pipeline's own work hidden behind it.
   Another background thread writes each new cache entry as soon as its document's vectors
   are all encoded; the build waits for it before it publishes.
5. index: write ``index.json`` in every directory (IndexTool)
6. publish: the browser client in ``_assets/``, ``index.html``, each topic's ``_embeddings.bin``
   (from the vectors step 4 holds), the search index; ``_assets/`` and the query model
   (``_assets/model/``) are copied while step 4 encodes (they need no vector, the model only
   its name)

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
from typing import Callable

from pipeline.chunking.tool import ChunkReport, chunk_texts_by_dir, manifests_by_dir, plan_chunks, write_chunks
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache_admin import prune_by_budget
from pipeline.embedding.executor import make_executor
from pipeline.embedding.registry import make_embedder
from pipeline.embedding.warmup import start_warmup
from pipeline.fsutil import require_dir, write_bytes_atomic
from pipeline.index.hal import SCHEMA_DIR
from pipeline.index.tool import IndexReport, run_index
from pipeline.site.confine import check_separate, warn_link
from pipeline.site.exclude import Exclude
from pipeline.search.bodies import BodyTerms
from pipeline.search.index import SEARCH_DIR
from pipeline.search.topicpart import draft_parts
from pipeline.site.llms import LLMS_FILES
from pipeline.site.staging import SITE_MARKER, Staging, sibling
from pipeline.site import stamps
from pipeline.site.memo import Memo
from pipeline.site.state import BuildState, entry_is_valid, load_state, output_hash, save_state
from pipeline.site.browser_model import publish_model_files
from pipeline.site.vendor import check_vendored
from pipeline.site.publish import (
    ASSETS_DIR, EMBEDDINGS_FILE, INDEX_HTML, PublishReport, publish_assets, publish_site, topic_vectors,
)
from pipeline.site.tree import CHUNKS_DIR, INDEX_FILE, KEYWORDS_FILE, QUESTIONS_FILE, TOPIC_SPEC_FILE, SourceDoc, usable
from pipeline.spec.keywords import is_generated
from pipeline.spec.topicspec import (
    SpecReport, abandon_spec, check_topic_inputs, finish_spec, published_vectors, release_spec, spec_model, start_spec,
    wait_spec,
)

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
    content: Path, site: Path, exclude: Exclude | None = None, *, state: BuildState | None = None,
    only: Callable[[str], bool] | None = None,
) -> tuple[int, list[str]]:
    """Mirror CONTENT's files into SITE (unchanged files untouched); remove what CONTENT lost.
    What ``exclude`` names (the config's ``exclude`` globs) is not copied, as if CONTENT lacked it.

    With ``only`` (a predicate on relative POSIX paths), just the files it accepts are copied
    and nothing is removed (for a SITE with nothing to remove: a first build's), but every
    folder the whole sync would fill is made: SITE then has the folders of a whole sync, and a
    whole sync after it copies the rest (a first build copies the spec stage's inputs first, so
    its encoding starts before the sources are copied).

    Generated files (index.json, topic-spec.md, ``_chunks/``) are kept while the directory
    holding them still exists in CONTENT; their stages keep them current.

    With ``state`` (a build), a file whose stamp and whose copy's stamp are the ones the state
    recorded (state section ``sources``, ``site/stamps.py``) is neither read nor compared.
    """
    written = 0
    previous = state.old.get("sources", {}) if state is not None else {}
    # Relative POSIX paths as strings ("" is the root), not Paths: a rebuild walks every file of
    # CONTENT and of SITE here, and a Path per file cost more than the walk.
    wanted: set[str] = {""}
    made: set[str] = set()  # folders made for files ``only`` left out
    hidden_or_generated = lambda name: name.startswith(".") or name in GENERATED_DIRS  # noqa: E731
    for rel, is_dir, linked in sorted(_walk(content, lambda rel: hidden_or_generated(_name(rel))), key=_parts):
        name = _name(rel)
        if hidden_or_generated(name) or name in GENERATED_NAMES:
            continue
        if exclude is not None and exclude.excludes(rel, is_dir=is_dir):
            continue
        path = os.path.join(content, rel)
        if linked:  # never followed (site/confine.py): it could publish any file
            warn_link(Path(path), content)
            continue
        wanted.add(rel)
        if is_dir:
            continue
        target = os.path.join(site, rel)
        if only is not None and not only(rel):
            folder = os.path.dirname(target)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            continue
        if state is None:
            if os.path.isfile(path):
                written += write_bytes_atomic(target, _read(path))
            continue
        source = stamps.stat(path)  # both stats before any read (site/stamps.py)
        if source is None or not stat.S_ISREG(source.st_mode):
            continue
        copy = stamps.stat(target)
        source_stamp, copy_stamp = stamps.recordable(source), stamps.recordable(copy)
        known = previous.get(rel)
        if entry_is_valid(known) and stamps.matches(source, known.get("source")) and stamps.matches(copy, known.get("copy")):
            state.put("sources", rel, known["digest"], source=known["source"], copy=known["copy"])
            continue
        data = _read(path)
        changed = write_bytes_atomic(target, data)
        written += changed
        extra = {"source": source_stamp} if source_stamp else {}
        if copy_stamp and not changed:  # a copy written just now is stamped by the next build
            extra["copy"] = copy_stamp
        state.put("sources", rel, output_hash(data), **extra)
    if only is not None:
        return written, []
    removed = []
    # Folders that hold only what sync keeps are not entered: hidden ones at the root, the root's
    # generated folders, and ``_chunks`` of a directory CONTENT still has.
    skip = lambda rel: ("/" not in rel and (rel.startswith(".") or rel in ROOT_GENERATED)) or (  # noqa: E731
        _name(rel) in GENERATED_DIRS and _parent(rel) in wanted
    )
    for rel, _, _ in sorted(_walk(site, skip), key=_parts, reverse=True):  # children before parents
        if rel in wanted or rel.startswith(".") or _generated_and_owned(Path(rel), wanted, site):
            continue
        path = os.path.join(site, rel)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        removed.append(rel)
    return written, removed


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _name(rel: str) -> str:
    return rel.rpartition("/")[2]


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _parts(entry: tuple[str, bool, bool]) -> list[str]:
    """Sort key: by path components, as ``pathlib`` sorts."""
    return entry[0].split("/")


def _walk(root: Path, skip) -> list[tuple[str, bool, bool]]:
    """Every file and folder below ``root`` as ``(relative POSIX path, is a folder, is a link)``,
    except folders ``skip(rel)`` names and what they hold. Symbolic links to folders are listed
    (as folders), not entered."""
    out: list[tuple[str, bool, bool]] = []
    stack = [("", os.fspath(root))]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                try:
                    is_dir = entry.is_dir()  # follows a link, as os.walk sorts its names
                except OSError:
                    is_dir = False
                if is_dir:
                    if skip(rel) or not usable(folder, entry.name, is_file=False):
                        continue
                    linked = entry.is_symlink()
                    out.append((rel, True, linked))
                    if not linked:
                        stack.append((rel + "/", entry.path))
                elif usable(folder, entry.name):
                    out.append((rel, False, entry.is_symlink()))
    return out


def _generated_and_owned(rel: Path, wanted: set[str], site: Path) -> bool:
    """A stage's output whose directory still exists in CONTENT (or the root's generated folders).
    ``wanted``: what sync keeps, as relative POSIX paths ("" the root).

    A ``_keywords/words.md`` the spec stage generated (it starts with the generated marker)
    counts as output while CONTENT has no table of its own there.
    """
    parts = rel.parts
    if parts[0] in ROOT_GENERATED:
        return True
    if parts[-1] == "_keywords" or parts[-2:] == tuple(KEYWORDS_FILE.split("/")):
        topic = rel.parent if parts[-1] == "_keywords" else rel.parent.parent
        return _key(topic) in wanted and is_generated(site / topic / KEYWORDS_FILE)
    for i, part in enumerate(parts):
        if part in GENERATED_DIRS:
            return "/".join(parts[:i]) in wanted
    return rel.name in GENERATED_NAMES and _key(rel.parent) in wanted


def _key(rel: Path) -> str:
    """``rel`` as sync's relative POSIX path ("" for the root)."""
    posix = rel.as_posix()
    return "" if posix == "." else posix


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
         "swapping": sibling(out, "swapping"), "memo": sibling(out, "memo")}
    )
    check_vendored()  # the search page's libraries: a missing node_modules fails before any write
    embedder = embedder or make_embedder(config.embedder)
    executor = make_executor(config.executor, config.embedder, workers=config.workers, address=config.ray_address or None)
    # With nothing of the model cached, every planned chunk is embedded: its load starts now,
    # beside the planning, instead of after it (embedding/warmup.py).
    warmup = start_warmup(embedder, executor, config.cache_dir)
    try:
        return _build(content, site, out, config, embedder, executor, progress)
    finally:
        if warmup is not None:
            warmup.join()  # no load outlives its build (only a build that embeds nothing waits here)


def _build(content: Path, site: Path, out: Path, config: SiteConfig, embedder: Embedder, executor, progress: bool) -> BuildReport:
    """``build`` once the folders are checked and the embedder and executor made."""
    counter = embedder.counter()
    with _fewer_collections(), Staging(site, retire_removed=config.retire_removed_files) as staging:
        work = staging.dir
        # What the previous build recorded (site/state.py): unchanged inputs reuse its results.
        stamps_file = sibling(out, "stamps")  # beside the site: file stamps are of this machine (site/state.py)
        first = not (work / SITE_MARKER).is_file()  # no previous site: nothing in SITE to keep or remove
        state = BuildState() if first else load_state(work, stamps_file)
        # per-topic results too large for the state (site/memo.py): read only by stages that recompute
        state.memo = Memo(sibling(out, "memo"))
        plans = plan_chunks(content, config, counter, site=work, state=state)
        check_topic_inputs(content, Exclude(config.exclude))
        prepare_site(work)
        report = BuildReport()
        # A first build copies what the spec stage reads of SITE (the folders, keyword tables and
        # questions) first, the rest once the encoding runs: a cold build of 1,000 documents
        # copied its sources for 0.05-0.7 s between the model's load and the first vector.
        only = _spec_input if first else None
        report.synced, report.removed = sync_sources(content, work, Exclude(config.exclude), state=state, only=only)
        # a reused plan reads nothing more of its document (its chunks are already in SITE)
        plans = [plan if plan.reused else _rebase(plan, work) for plan in plans]
        # The encoding starts before the chunk files are written (its texts come from the
        # plans) and runs in the background while they are written and keywords extracted.
        chunk_texts = chunk_texts_by_dir(plans)
        spec = start_spec(work, config, embedder, progress=progress, state=state, executor=executor,
                          manifests=manifests_by_dir(plans), texts=chunk_texts)
        try:
            if only is not None:
                synced, report.removed = sync_sources(content, work, Exclude(config.exclude), state=state)
                report.synced += synced
            report.chunk = write_chunks(work, plans, state=state)
            del plans  # every chunk's text and record: the later stages read what they need
            _import_later_stages()
            # the search index's term counts of the chunk files written now, counted while the
            # vectors are encoded instead of after the last one (search/bodies.py)
            bodies = BodyTerms()
            bodies.add(text for texts in chunk_texts.values() for text in texts.values())
            del chunk_texts
            # publish's _assets/ (the browser client's files) and _assets/model/ (~60 MB copied),
            # which needs only the site's model name
            assets = publish_assets(work)
            model_files = publish_model_files(work, config, spec_model(spec), ASSETS_DIR)
            # while it encodes, each encoded topic's share of the search index as far as it needs
            # no vector (search/topicpart.py ``draft_parts``), completed from its index.json
            drafts: dict[str, tuple] = {}
            report.spec = finish_spec(spec, while_encoding=lambda specs: drafts.update(draft_parts(work, specs, bodies)))
            # ... its last cache entries are written in the background ...
            report.index = run_index(work, config, state=state)
            # ... while the topic pages, indexes and _embeddings.bin files are written from the
            # vectors the spec stage holds (the cache is read only for a topic it does not), which
            # it then drops (``release_spec``) before the search index, and the search index
            report.publish = publish_site(
                work, config, state=state, embedder=embedder,
                vectors_of=lambda dir_rel: published_vectors(
                    spec, dir_rel, lambda d: topic_vectors(work, d, config.cache_dir, embedder=embedder)),
                before_search=lambda: release_spec(spec), model_files=model_files, assets=assets,
                bodies=bodies, drafts=drafts,
            )
            wait_spec(spec)  # ... and waited for here: a cache that cannot be written fails the build
        except BaseException:
            abandon_spec(spec)  # stop the encoding (after its current block), let the cache writes end
            raise
        del spec
        prune_by_budget(config)  # only when the config sets a budget; never "not in this build"
        save_state(work, state, stamps_file)
        staging.publish()
    state.memo.prune()  # after a successful build only: the entries of content that is gone
    return report


def _spec_input(rel: str) -> bool:
    """Whether CONTENT's file ``rel`` is read by the spec stage's ``start_spec`` (an author's
    keyword table or question file)."""
    return rel == KEYWORDS_FILE or rel.endswith("/" + KEYWORDS_FILE) or _name(rel) == QUESTIONS_FILE


def _import_later_stages() -> None:
    """Import now, while the encoding runs, the modules that publish imports when it needs them
    (the search index's site reader): 30-70 ms here that would otherwise follow the encode. Lazy
    elsewhere, so a stage run alone imports only what it uses. Likewise the search page's
    template is compiled now (~10-20 ms), not when publish renders it."""
    import pipeline.client  # noqa: F401
    from pipeline.site.publish import index_template

    index_template()


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

    return replace(plan, doc=SourceDoc(site, plan.doc.rel))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
