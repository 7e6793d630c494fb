"""The Ray executor: Ray Data's ``map_batches`` over the blocks ``executor.plan_blocks`` makes,
one embedder per worker actor, and the lifetime of the Ray it starts or joins (``connect``,
``stop_ray``). Ray is imported only here, and only when a Ray encode or connection is asked for.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from pipeline.embedding.base import Embedder, progress_bar
from pipeline.embedding.executor import (
    BLOCK_SIZE, RAY_MIN_TOKENS, BlockDone, assemble, check_rows, check_stop, encode_blocks, plan_blocks, text_lengths,
)
from pipeline.errors import PipelineError
from pipeline.quiet import info, is_quiet


_CONNECTING = threading.Lock()  # one ray.init per process, whichever thread asks first
_STOP_WHEN_ENCODED = threading.Event()  # set by ``stop_ray_when_encoded``
_STOPPING: list[threading.Thread] = []  # the stops an encode's end started, for ``stop_ray`` to join


@dataclass(frozen=True)
class RayExecutor:
    """Encodes blocks with Ray Data's ``map_batches``: one embedder per worker actor, loaded once.

    ``address`` None starts a local Ray with ``workers`` CPUs; otherwise it joins that cluster
    (``ray://host:10001`` or ``auto``), as ``ray.init(address=...)`` does. ``spec`` is the
    embedder's spec string (embedding/registry.py), rebuilt inside each actor. Texts of fewer
    than ``min_tokens`` model tokens in all are encoded in this process, as the local executor
    does (the same blocks, so the same vectors), and Ray is not started for them. The last three
    fields are tuning (docs/decisions/embedding.md, "Distributed embedding"): the plan's block
    size (the local executor must use the same for the same bytes), compute threads per actor
    (None: the runtime's default) and blocks in flight per actor (None: Ray Data's default).
    """

    spec: str
    workers: int = 2
    address: str | None = None
    min_tokens: int = RAY_MIN_TOKENS
    block_size: int = BLOCK_SIZE
    # One per actor: it reserves one CPU. (2 actors on 2 idle cores encoded 35 texts/s against
    # the local executor's 70 while OpenVINO pinned every process's thread to the first core;
    # unpinned, 65: docs/decisions/embedding.md.)
    threads: int | None = 1
    in_flight: int | None = 2

    def connect(self):
        """The ``ray`` module, imported and joined (or a local Ray started), once per process: a
        build calls it ahead of its encode, beside the planning (embedding/warmup.py), and
        ``embed`` calls it again, which waits for a connection under way. Thread-safe."""
        ray = _import_ray()
        with _CONNECTING:
            _wait_stopped()  # an earlier encode's Ray, still stopping: then start another
            if ray.is_initialized():
                return ray
            _quiet_ray()
            local = {"num_cpus": self.workers, "object_store_memory": 256 * 1024 * 1024} if self.address is None else {}

            def init() -> None:
                with held_stderr():
                    ray.init(address=self.address, include_dashboard=False, log_to_driver=False, configure_logging=False, **local)

            _in_a_lasting_thread(init)
        return ray

    def embed(self, embedder: Embedder, texts: list[str], *, progress: bool = False,
              on_block: BlockDone | None = None, stop: threading.Event | None = None) -> np.ndarray:
        """``Executor.embed``: a set ``stop`` ends it within one block's arrival (Ray Data then
        stops its actors)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        from pipeline.embedding.registry import make_embedder

        if make_embedder(self.spec).name != embedder.name:  # models load lazily: this is cheap
            raise PipelineError(f"the ray executor rebuilds the embedder from {self.spec!r}, which is not {embedder.name}")
        lengths = text_lengths(embedder, texts)
        blocks = plan_blocks(lengths, self.block_size)
        tokens = sum(lengths)
        if tokens < self.min_tokens:
            info(f"embedding them in this process, not on Ray: {tokens:,} tokens, fewer than the "
                 f"{self.min_tokens:,} that pay for Ray's start (ray_min_tokens)")
            vectors = encode_blocks(embedder, texts, blocks, progress=progress, on_block=on_block, stop=stop)
        else:
            ray = self.connect()
            with held_stderr():
                vectors = self._run(ray, texts, blocks, progress, on_block, stop)
        ray = sys.modules.get("ray")  # also a Ray that a warm-up expecting more to embed started
        if _STOP_WHEN_ENCODED.is_set() and ray is not None and ray.is_initialized():
            _stop_in_background(ray)
        return vectors

    def _run(self, ray, texts: list[str], blocks: list[list[int]], progress: bool,
             on_block: BlockDone | None, stop: threading.Event | None) -> np.ndarray:
        context = ray.data.DataContext.get_current()
        # The CLI's own bar (as the local executor's), not Ray Data's: off a terminal Ray Data
        # logs its progress as INFO lines instead.
        context.enable_progress_bars = False
        # blocks arrive in plan order, so ``on_block`` sees them as the local executor calls it
        context.execution_options.preserve_order = True
        items = [{"block": b, "texts": [texts[i] for i in block]} for b, block in enumerate(blocks)]
        dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _EmbedActor,
            fn_constructor_kwargs={"spec": self.spec, "threads": self.threads},
            batch_size=1,  # one plan block per call: the same embed() inputs as a local build
            # Two blocks per actor, one running and one queued: with one, an actor waited for the
            # driver (one more process on busy cores) to hand it each next block; the most a
            # queued block can hold the run up at the end is one short block (longest go first).
            compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(items)), max_tasks_in_flight_per_actor=self.in_flight),
            num_cpus=1,
            batch_format="numpy",
        )
        vectors: list[np.ndarray | None] = [None] * len(blocks)
        bar = progress_bar(len(texts)) if progress else None
        arriving = iter(dataset.iter_rows())
        try:
            for row in arriving:
                check_stop(stop)
                b, rows, dimension = int(row["block"]), int(row["rows"]), int(row["dimension"])
                vectors[b] = np.frombuffer(row["vectors"], dtype="<f4").reshape(rows, dimension)
                if on_block is not None:
                    check_rows(blocks[b], vectors[b])
                    on_block(blocks[b], vectors[b])
                if bar is not None:
                    bar.update(rows)
        finally:
            # Left early (stopped, or an error), the iterator would stop Ray Data's executor only
            # when collected, and an exception's traceback keeps it: its threads went on, and one
            # that touched Ray after ``ray.shutdown`` made Ray end the process (exit 1, no message).
            close = getattr(arriving, "close", None)
            if close is not None:
                close()
            _join_stopped_iteration_threads()
        if bar is not None:
            bar.close()
        if any(v is None for v in vectors):
            raise PipelineError("the Ray executor lost a block of texts; no vectors were cached")
        return assemble(blocks, vectors, len(texts))  # type: ignore[arg-type]


def _join_stopped_iteration_threads(timeout: float = 5.0) -> None:
    """Wait for the threads Ray Data formats an iteration's blocks in (named ``iter_threaded``),
    told to stop when the iteration closed but not joined by it: one still holding a block while
    ``ray.shutdown`` ran made Ray end the process as it let go of the block."""
    for thread in threading.enumerate():
        if thread.name == "iter_threaded" and thread is not threading.current_thread():
            thread.join(timeout)


def stop_ray() -> None:
    """Disconnect from Ray, and stop the local Ray this process started, if Ray was used: what
    Ray's exit hook does, less the half second it first sleeps to show its workers' last log
    lines, which a build never shows (``log_to_driver=False``). For a process that builds once.
    A stop ``stop_ray_when_encoded`` started is waited for: Ray is stopped when this returns."""
    _wait_stopped()
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        _shutdown(ray)


def stop_ray_when_encoded() -> None:
    """For a process that builds once (the CLI): from now on, a Ray encode that ends well stops
    Ray at once in a thread of its own, so Ray's stop (mostly waiting for its processes to exit,
    1.1-1.4 s here) overlaps the build's last writes instead of following them. ``stop_ray``
    waits for that stop; an encode after it would start or join Ray again."""
    _STOP_WHEN_ENCODED.set()


def _stop_in_background(ray) -> None:
    # Not a daemon: the interpreter waits for it at exit rather than leave Ray half stopped
    # (Ray's own exit hook would then find it stopped: a second shutdown does nothing).
    thread = threading.Thread(target=_shutdown, args=(ray,), name="pipeline-ray-stop")
    _STOPPING.append(thread)
    thread.start()


def _shutdown(ray) -> None:
    # A Ray Data run leaves reference cycles that hold Ray object references (its executor, its
    # plan, its metrics: ~700 objects). Collected after ``ray.shutdown``, by whichever thread's
    # allocation sets the collector off, a reference's release reached the stopped core worker,
    # and Ray ended the process ("The core worker has already been shutdown", exit 1; 4 builds in
    # 12 when Ray stopped beside the build's last writes). Collected first, they release into Ray.
    gc.collect()
    ray.shutdown()


def _wait_stopped() -> None:
    while _STOPPING:
        _STOPPING.pop().join()


class _EmbedActor:
    """A Ray worker: builds the embedder once, then encodes one plan block per call."""

    def __init__(self, spec: str, threads: int | None = 1):
        from pipeline.embedding.registry import make_embedder

        _one_thread_per_worker()
        # A set number of compute threads (``RayExecutor.threads``): the runtimes' default, one
        # thread per core of the machine, would have every actor of a big node fight over every core.
        self.embedder = make_embedder(spec, threads=threads)

    def __call__(self, batch: dict) -> dict:
        out = {"block": [], "vectors": [], "rows": [], "dimension": []}
        for block, texts in zip(batch["block"], batch["texts"]):
            vectors = np.ascontiguousarray(self.embedder.embed(list(texts)), dtype="<f4")
            out["block"].append(int(block))
            out["vectors"].append(vectors.tobytes())
            out["rows"].append(vectors.shape[0])
            out["dimension"].append(vectors.shape[1])
        return {"block": np.array(out["block"]), "vectors": np.array(out["vectors"], dtype=object),
                "rows": np.array(out["rows"]), "dimension": np.array(out["dimension"])}


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise PipelineError("the ray executor needs Ray Data: pip install 'pipeline[ray]' (ray[data])") from None
    return ray


def _one_thread_per_worker() -> None:
    """Each actor owns one CPU: torch's default of one thread per core would oversubscribe."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    else:
        os.environ.setdefault("OMP_NUM_THREADS", "1")


@contextlib.contextmanager
def held_stderr():
    """What is written to file descriptor 2 inside the block (C++ code) is held back and shown
    only if the block raises; ``sys.stderr`` (the CLI's progress bar, Python's warnings) still
    reaches the terminal. Ray's C++ core writes its error lines to the driver's stderr besides its
    log files, and Ray Data's actor pool makes it write one per actor that is no error of ours
    ("has constructor arguments in the object store and max_restarts > 0"; Ray Data itself sets
    max_restarts, and passing another is deprecated): shown, it broke the progress bar's line.
    A failed run still shows everything. File descriptor 2 is the process's: what other threads
    write to it directly meanwhile is held too (the build's own messages go through
    ``sys.stderr``, looked up when written, so they still show)."""
    sys.stderr.flush()
    terminal = sys.stderr
    saved = os.dup(2)
    visible = os.fdopen(os.dup(saved), "w", encoding=terminal.encoding or "utf-8", errors="backslashreplace", buffering=1)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        sys.stderr = visible
        failed = True
        try:
            yield
            failed = False
        finally:
            visible.flush()
            sys.stderr = terminal
            visible.close()
            os.dup2(saved, 2)
            os.close(saved)
            if failed:
                held.seek(0)
                sys.stderr.write(held.read().decode("utf-8", errors="replace"))
                sys.stderr.flush()


def _in_a_lasting_thread(init: Callable[[], None]) -> None:
    """``init()`` in a daemon thread that then lives as long as the process, its error raised
    here. A local Ray's processes get a parent-death signal, which Linux sends when the *thread*
    that started them ends: started in a build's warm-up thread, Ray's GCS died with it."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            init()
        except BaseException as exc:  # raised by the caller, in its thread
            failed.append(exc)
            return
        finally:
            done.set()
        threading.Event().wait()

    threading.Thread(target=run, name="pipeline-ray", daemon=True).start()
    done.wait()
    if failed:
        raise failed[0]


def _not_the_sigterm_notice(record) -> bool:
    # ray.init outside the main thread says it set no SIGTERM handler (one that exits through
    # sys.exit); without it SIGTERM ends the build at once, as it would a local build.
    return "SIGTERM handler is not set" not in record.getMessage()


def _quiet_ray() -> None:
    """Ray's own log lines: none of Ray Data's INFO (its plan, its progress: the CLI shows its
    own bar), and none at all below errors with ``-q`` (Ray's notice that a local cluster
    enables token authentication is a WARNING)."""
    import logging

    logging.getLogger("ray.data").setLevel(logging.ERROR)
    worker = logging.getLogger("ray._private.worker")
    if _not_the_sigterm_notice not in worker.filters:
        worker.addFilter(_not_the_sigterm_notice)
    if is_quiet():
        logging.getLogger("ray").setLevel(logging.ERROR)
