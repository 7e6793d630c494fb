"""The build: a fixed sequence of stages, readable from one function (``build``).

1. plan: read and chunk every document of CONTENT, read its keyword tables and question files
   (bad input stops here; nothing written yet)
2. sync: mirror CONTENT's files into SITE (``site/sync.py``: sources, keyword tables, questions,
   assets)
3. chunk: write ``_chunks/`` (ChunkingTool)
4. spec: embed with the cache, write ``topic-spec.md`` (TopicSpec)
5. index: write ``index.json`` in every directory (IndexTool)
6. publish: the browser client in ``_assets/``, ``index.html``, each topic's ``_embeddings.bin``,
   then the search index ``_search/``

Each stage can run alone (the CLI's ``chunk-dir``, ``spec``, ``index``, ``publish``), reading
what the stages before it wrote. A build runs them in one process and hands a later stage what
it holds in memory instead (``handoff.py``: ``BuildHandoff``); the bytes are the same.

The overlap schedule. The model's encoding is most of a cold build; it and its neighbours run
in background threads (``pipeline/background.py``: native code and file writes, the GIL
released) while the main thread does the work that needs no vector:

- the model's load (``embedding/warmup.py``), when the cache holds nothing of the model (every
  chunk will be embedded): during step 1; the encode's first call waits for it.
- the encoding (``start_spec``, started before step 3 with the manifests and chunk texts the
  plans hold): during the rest of a first build's sync (a first build syncs first only what the
  spec stage reads: the folders, keyword tables and questions), step 3's chunk files, the search
  index's term counts of the new chunks (``search/bodies.py``), publish's ``_assets/``,
  ``_assets/model/`` and static query encoder (they need only the model's name), and step 4's
  keyword tables and each encoded topic's share of the search index as far as it needs no vector
  (``search.topicpart.draft_parts``); ``finish_spec`` waits for it. Step 5 hands the search
  index the drafted topics' prompt hashes as it writes them, so completing a draft reads none
  of their document resources back (``index.tool.written_prompts``).
- the cache writes (``topicspec/topicgather.py``): a document's new entry as soon as its vectors
  are all encoded, during the encoding and then steps 4 to 6; ``wait_spec`` waits for them after
  publish (a cache that cannot be written fails the build). Publish writes ``_embeddings.bin``
  from the vectors the spec stage holds (the cache is read only for a topic whose vectors it
  does not hold) and the spec stage drops them before the search index.

SITE belongs to the pipeline: a marker file proves it, and files there that neither CONTENT
nor a stage accounts for are removed, so deleted documents disappear from the site.

The stages run in a staging copy of SITE that is swapped in as one step only when all of them
succeeded (``site/staging.py``): a build that fails or is killed leaves SITE as it was. CONTENT,
SITE and the cache never overlap (``sources/confine.py``, checked before anything is written), and
symbolic links in CONTENT are skipped with a warning, never followed.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.chunking.tool import ChunkReport, chunk_texts_by_dir, manifests_by_dir, plan_chunks, write_chunks
from pipeline.config import SiteConfig
from pipeline.embedding.base import Embedder
from pipeline.embedding.cache_admin import prune_by_budget
from pipeline.embedding.executor import LocalExecutor, make_executor
from pipeline.embedding.registry import make_embedder
from pipeline.embedding.warmup import start_warmup
from pipeline.fsutil import require_dir, write_bytes_atomic
from pipeline.index.tool import IndexReport, run_index
from pipeline.sources.confine import check_separate
from pipeline.handoff import BuildHandoff
from pipeline.sources.exclude import Exclude
from pipeline.search.bodies import BodyTerms
from pipeline.siteformat.searchlayout import SEARCH_DIR
from pipeline.search.topicpart import draft_parts
from pipeline.site.staging import SITE_MARKER, Staging, sibling
from pipeline.reuse.memo import Memo
from pipeline.reuse.state import BuildState, load_state, save_state
from pipeline.site.browser_model import publish_model_files
from pipeline.site.static_encoder import site_encoder
from pipeline.site.vendor import check_vendored
from pipeline.site.publish import (
    ASSETS_DIR, PublishReport, publish_assets, publish_site, topic_vectors,
)
from pipeline.site.sync import spec_input, sync_sources
from pipeline.siteformat.tree import SourceDoc
from pipeline.vault.mode import vault_config
from pipeline.topicspec.topicspec import (
    SpecReport, abandon_spec, check_topic_inputs, finish_spec, published_vectors, release_spec, spec_model, start_spec,
    wait_spec,
)
from pipeline.wording import counted



@dataclass
class BuildReport:
    synced: int = 0
    removed: list[str] = field(default_factory=list)
    chunk: ChunkReport | None = None
    spec: SpecReport | None = None
    index: IndexReport | None = None
    publish: PublishReport | None = None
    retiring: bool = False  # removed files stay served until the next build (``site/retire.py``)
    retired: list[str] = field(default_factory=list)  # ... these did, this time
    expired: list[str] = field(default_factory=list)  # the previous build's retired files, removed now
    stage_seconds: dict[str, float] = field(default_factory=dict)  # wall seconds in each stage's call (``_timed``)

    def summary(self) -> str:
        """What the build did, truthfully: a file a stage removed is *retired* (still served
        until the next build) unless the build drops removed files; the next build *removes* it."""
        c, s, i, p = self.chunk, self.spec, self.index, self.publish or PublishReport()
        dropped = 0 if self.retiring else len(self.removed) + len(c.removed) + len(s.removed) + len(p.removed)
        gone = []
        if self.retired:
            gone.append(f"{counted(len(self.retired), 'file')} retired, served until the next build")
        if self.expired:
            gone.append(f"{counted(len(self.expired), 'retired file')} removed")
        if dropped or not gone:
            gone.insert(0, f"{dropped} removed")
        return (
            f"{counted(c.documents, 'document')}, {counted(c.chunks, 'chunk')} ({s.embedded} embedded, {s.cached} from cache), "
            f"{counted(s.topics, 'topic')}, {counted(i.directories, 'index.json file')}; "
            f"{counted(self.synced + c.written + s.written + i.written + p.written, 'file')} written, " + ", ".join(gone)
        )


def prepare_site(site: Path) -> None:
    """Mark SITE (a build's staging folder, checked by ``staging.check_output``) as the pipeline's."""
    write_bytes_atomic(site / SITE_MARKER, b"built by pipeline; files here are replaced on every build\n")


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
    config = vault_config(content, config)  # an Obsidian vault: attachments left out (vault/mode.py)
    out = Path(os.path.realpath(site))
    check_separate(
        {"content": content, "output": out, "cache": Path(config.cache_dir),
         "staging": sibling(out, "staging"), "previous site": sibling(out, "previous"),
         "swapping": sibling(out, "swapping"), "memo": sibling(out, "memo")}
    )
    check_vendored()  # the search page's libraries: a missing node_modules fails before any write
    embedder = embedder or make_embedder(config.embedder)
    executor = make_executor(config.executor, config.embedder, workers=config.workers, address=config.ray_address or None,
                             min_tokens=config.ray_min_tokens)
    # With nothing of the model cached, every planned chunk is embedded: its load starts now,
    # beside the planning, instead of after it (embedding/warmup.py).
    warmup = start_warmup(embedder, executor, config.cache_dir, content=content)
    try:
        return _build(content, site, out, config, embedder, executor, progress)
    finally:
        if warmup is not None:
            warmup.join()  # no load outlives its build (only a build that embeds nothing waits here)


def _build(content: Path, site: Path, out: Path, config: SiteConfig, embedder: Embedder, executor, progress: bool) -> BuildReport:
    """``build`` once the folders are checked and the embedder and executor made."""
    counter = embedder.counter()
    seconds: dict[str, float] = {}
    # nothing frozen beside Ray: its references must be collected before it stops (ray_executor ``_shutdown``)
    collector = _fewer_collections(freeze=isinstance(executor, LocalExecutor))
    with collector as settle, Staging(site, retire_removed=config.retire_removed_files) as staging:
        work = staging.dir
        # What the previous build recorded (reuse/state.py): unchanged inputs reuse its results.
        stamps_file = sibling(out, "stamps")  # beside the site: file stamps are of this machine (reuse/state.py)
        first = not (work / SITE_MARKER).is_file()  # no previous site: nothing in SITE to keep or remove
        state = BuildState() if first else load_state(work, stamps_file)
        settle()
        # per-topic results too large for the state (reuse/memo.py): read only by stages that recompute
        state.memo = Memo(sibling(out, "memo"))
        plans = _timed(seconds, plan_chunks, content, config, counter, site=work, state=state)
        settle()
        exclude = Exclude(config.exclude)
        check_topic_inputs(content, exclude)
        prepare_site(work)
        report = BuildReport(stage_seconds=seconds)
        # each document's copy must be the bytes its chunks were made from (site/sync.py)
        documents = {plan.doc.rel: plan.source_xxh64 for plan in plans if plan.source_xxh64}
        report.synced, report.removed = _timed(
            seconds, sync_sources, content, work, exclude, state=state, only=spec_input if first else None, documents=documents)
        # a reused plan reads nothing more of its document (its chunks are already in SITE)
        plans = [plan if plan.reused else _rebase(plan, work) for plan in plans]
        chunk_texts = chunk_texts_by_dir(plans)
        # from here to ``finish_spec`` the encoding runs in the background (module docstring)
        spec = _timed(seconds, start_spec, work, config, embedder, progress=progress, state=state, executor=executor,
                      handoff=BuildHandoff(manifests=manifests_by_dir(plans), texts=chunk_texts))
        settle()
        try:
            if first:
                synced, report.removed = _timed(seconds, sync_sources, content, work, exclude, state=state, documents=documents)
                report.synced += synced
            report.chunk = _timed(seconds, write_chunks, work, plans, state=state)
            del plans  # every chunk's text and record: the later stages read what they need
            settle()
            if spec.gathered.encoding is not None:  # only while an encode runs is this import time free
                _import_later_stages()
            bodies = BodyTerms()
            bodies.add(text for texts in chunk_texts.values() for text in texts.values())
            del chunk_texts
            assets = publish_assets(work)
            model_files = publish_model_files(work, config, spec_model(spec), ASSETS_DIR)
            encoder = site_encoder(config, spec_model(spec), state=state, search_dir=work / SEARCH_DIR)
            drafts: dict[str, tuple] = {}
            report.spec = _timed(seconds, finish_spec, spec, while_encoding=lambda specs: drafts.update(draft_parts(work, specs, bodies, memo=state.memo)))
            settle()
            report.index = _timed(seconds, run_index, work, config, state=state, prompts_of=drafts.keys())
            settle()
            report.publish = _timed(seconds, publish_site, work, config, state=state, handoff=BuildHandoff(
                assets=assets, model_files=model_files, encoder=encoder, bodies=bodies, drafts=drafts, prompts=report.index.prompts,
                vectors_of=lambda dir_rel: published_vectors(
                    spec, dir_rel, lambda d: topic_vectors(work, d, config.cache_dir, embedder=embedder)),
                release_vectors=lambda: release_spec(spec),
            ))
            wait_spec(spec)
        except BaseException:
            abandon_spec(spec)  # stop the encoding (after its current block), let the cache writes end
            raise
        del spec
        prune_by_budget(config)  # only when the config sets a budget; never "not in this build"
        save_state(work, state, stamps_file)
        staging.publish()
        report.retiring, report.retired, report.expired = config.retire_removed_files, staging.retired, staging.expired
    state.memo.prune()  # after a successful build only: the entries of content that is gone
    return report


def _timed(seconds: dict[str, float], stage, *args, **kwargs):
    """``stage(*args, **kwargs)``, its wall seconds added to ``seconds[stage.__name__]`` (the
    report's ``stage_seconds``: what a benchmark reads instead of wrapping the stages)."""
    start = time.perf_counter()
    try:
        return stage(*args, **kwargs)
    finally:
        seconds[stage.__name__] = seconds.get(stage.__name__, 0.0) + time.perf_counter() - start


def _import_later_stages() -> None:
    """Import now, while the encoding runs (module docstring), the modules that publish imports when it needs them
    (the search index's site reader): 30-70 ms here that would otherwise follow the encode. Lazy
    elsewhere, so a stage run alone imports only what it uses. Likewise the search page's
    template is compiled now (~10-20 ms), not when publish renders it."""
    import pipeline.client  # noqa: F401
    from pipeline.site.publish import index_template

    index_template()


@contextmanager
def _fewer_collections(young: int = 100_000, *, freeze: bool = True):
    """Run the cyclic garbage collector every ``young`` allocations instead of 700, and yield
    ``settle``, which a build calls between its stages; both are undone when the build ends.

    A build holds hundreds of thousands of long-lived containers (the build state, the manifests,
    the plans), and little of what it frees is cyclic: reference counting frees the rest at once.
    At the default threshold the collector's passes over them were a quarter of a no-op rebuild
    of 10k documents. ``settle`` moves what is alive between two stages out of the collector's
    reach (``gc.freeze``) until the build ends, so the older passes do not walk it again: at 100k
    documents they took 2.3 s of a 21 s no-op rebuild. Cyclic garbage still uncollected when
    ``settle`` runs waits for a collection after the build (cold builds of 24k documents left
    none). ``settle`` does nothing with ``freeze`` false, or in a process that froze objects itself
    (they stay frozen)."""
    before = gc.get_threshold()
    ours = freeze and gc.get_freeze_count() == 0
    gc.set_threshold(max(young, before[0]), *before[1:])
    try:
        yield gc.freeze if ours else (lambda: None)
    finally:
        gc.set_threshold(*before)
        if ours:
            gc.unfreeze()


def _rebase(plan, site: Path):
    """The same plan, its document now read from SITE (the synced copy)."""
    from dataclasses import replace

    return replace(plan, doc=SourceDoc(site, plan.doc.rel))


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
