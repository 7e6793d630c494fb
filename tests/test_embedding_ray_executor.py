"""The Ray executor: the local executor's blocks and vectors on Ray Data's actors, so a Ray build
writes the same site and cache bytes as a local one; Ray's output kept off the terminal, and Ray
stopped cleanly, early or late."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, write_tree
from pipeline.embedding.executor import LocalExecutor
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.embedding.ray_executor import RayExecutor, held_stderr
from pipeline.errors import PipelineError
from test_build import FILES


def test_ray_refuses_an_embedder_its_spec_does_not_rebuild():
    with pytest.raises(PipelineError, match="not hashing-384"):
        RayExecutor("minilm").embed(HashingEmbedder(), ["a"])


class _RayStarted(Exception):
    pass


def test_ray_executor_encodes_too_few_tokens_here_and_never_starts_ray(monkeypatch):
    # Ray's start costs more than the local model takes for a few texts (a one-edit rebuild: 9.0 s
    # against 1.2 s): below ``min_tokens`` the blocks are encoded in this process, the same
    # blocks and so the same vectors, handed on as the local executor hands them on.
    import pipeline.embedding.ray_executor as executor_module
    from pipeline.embedding.executor import text_lengths

    def no_ray(*args, **kwargs):
        raise _RayStarted()

    monkeypatch.setattr(RayExecutor, "connect", no_ray)
    monkeypatch.setattr(executor_module, "_import_ray", no_ray)
    texts = [f"text {'word ' * (i % 11)} number {i}" for i in range(40)]
    total = sum(text_lengths(HashingEmbedder(), texts))
    local_blocks: list[tuple[list[int], bytes]] = []
    local = LocalExecutor(block_size=7).embed(HashingEmbedder(), texts, on_block=lambda b, r: local_blocks.append((b, r.tobytes())))
    blocks: list[tuple[list[int], bytes]] = []
    here = RayExecutor("hashing", min_tokens=total + 1, block_size=7).embed(
        HashingEmbedder(), texts, on_block=lambda b, r: blocks.append((b, r.tobytes())))
    assert here.tobytes() == local.tobytes() and blocks == local_blocks and len(blocks) == 6
    # as many tokens as the threshold: enough for Ray
    with pytest.raises(_RayStarted):
        RayExecutor("hashing", min_tokens=total, block_size=7).embed(HashingEmbedder(), texts)


def test_a_small_ray_build_neither_starts_nor_warms_up_ray_and_writes_the_local_site(tmp_path, monkeypatch):
    from pipeline.config import SiteConfig
    from pipeline.site.build import build

    content = write_tree(tmp_path / "content", FILES)
    connected: list[str] = []

    def connect(self):
        connected.append("connect")
        raise _RayStarted()

    monkeypatch.setattr(RayExecutor, "connect", connect)
    build(content, tmp_path / "ray", SiteConfig(embedder="hashing", executor="ray", cache_dir=tmp_path / "cache-ray"), progress=False)
    build(content, tmp_path / "local", SiteConfig(embedder="hashing", cache_dir=tmp_path / "cache-local"), progress=False)
    assert connected == []  # not by the cold build's warm-up (the markdown is a few kB), nor by the encode
    assert _tree_bytes(tmp_path / "ray") == _tree_bytes(tmp_path / "local")
    assert _tree_bytes(tmp_path / "cache-ray") == _tree_bytes(tmp_path / "cache-local")
    with pytest.raises(_RayStarted):  # 0: Ray always, connected ahead by the warm-up and by the encode
        build(content, tmp_path / "ray0", SiteConfig(embedder="hashing", executor="ray", ray_min_tokens=0, cache_dir=tmp_path / "cache-0"),
              progress=False)
    assert connected == ["connect", "connect"]


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_ray_build_writes_the_same_site_and_cache_as_a_local_build(tmp_path):
    pytest.importorskip("ray.data")
    content = write_tree(tmp_path / "content", FILES)
    sites = {}
    for executor in ("local", "ray"):
        # A real process per build, as a user runs it: Ray starts and stops with it.
        cmd = [sys.executable, "-m", "pipeline", "build", str(content), "--out", str(tmp_path / executor),
               "--embedder", "hashing", "--cache-dir", str(tmp_path / f"cache-{executor}"), "--executor", executor,
               "--workers", "2", "--ray-min-tokens", "0", "-q"]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        # -q: nothing from Ray either (it printed a token-authentication notice and, from its
        # core worker, an error line per restartable actor).
        assert done.stderr == "" and done.stdout == "", done.stderr
        sites[executor] = _tree_bytes(tmp_path / executor)
    assert sites["local"] == sites["ray"]
    assert _tree_bytes(tmp_path / "cache-local") == _tree_bytes(tmp_path / "cache-ray")


def test_ray_build_shows_the_clis_progress_not_ray_datas_log(tmp_path):
    pytest.importorskip("ray.data")
    content = write_tree(tmp_path / "content", {f"doc{i}.md": f"# Doc {i}\n\n" + "Words in a paragraph. " * 40 for i in range(80)})
    cmd = [sys.executable, "-m", "pipeline", "build", str(content), "--out", str(tmp_path / "site"), "--embedder", "hashing",
           "--cache-dir", str(tmp_path / "cache"), "--executor", "ray", "--workers", "2", "--ray-min-tokens", "0"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    last = done.stderr.replace("\r", "\n").splitlines()
    assert any(line.startswith("embedding: 100%") for line in last), done.stderr
    assert "INFO" not in done.stderr and "Starting execution" not in done.stderr, done.stderr
    # Ray's C++ core wrote an error-looking line per actor into the middle of the bar
    assert "core_worker" not in done.stderr, done.stderr


def test_ray_executor_gives_the_local_rows_over_many_blocks_and_hands_each_block_on(monkeypatch):
    # Many small blocks, handed out one per free actor and finishing out of order: the rows
    # still come back in input order, as the local executor's, and a build's encoding thread
    # gets each block as it arrives, in plan order, as from the local executor.
    pytest.importorskip("ray.data")
    import threading

    import ray

    import pipeline.embedding.ray_executor as executor_module
    from pipeline.embedding.executor import Encoding, EncodingCancelled
    from pipeline.embedding.ray_executor import stop_ray

    texts = [f"text {'word ' * (i % 11)} number {i}" for i in range(90)]
    executor = RayExecutor("hashing", workers=2, min_tokens=0, block_size=7)
    arrived: list[tuple[str, list[int], bytes]] = []
    stop = threading.Event()

    def cancel_after_two(block, rows):
        if len(arrived) == 2:
            stop.set()
        arrived.append((threading.current_thread().name, block, rows.tobytes()))

    try:
        # Ray started from the encoding's thread, which then ends: Ray's local processes die with
        # the thread that starts them, so they are started from one that lasts (the calls after
        # this one would find no Ray)
        background = Encoding(executor, HashingEmbedder(), texts, on_block=lambda b, r: arrived.append(
            (threading.current_thread().name, b, r.tobytes()))).result()
        executor.connect()  # once per process: this call finds Ray running
        vectors = RayExecutor("hashing", workers=2, min_tokens=0, block_size=7).embed(HashingEmbedder(), texts)
        local_arrived = []
        LocalExecutor(block_size=7).embed(HashingEmbedder(), texts, on_block=lambda b, r: local_arrived.append((b, r.tobytes())))
        assert [(b, r) for _, b, r in arrived] == local_arrived
        assert {name for name, _, _ in arrived} == {"pipeline-encode"}
        arrived.clear()
        iterators = []
        real_rows = ray.data.Dataset.iter_rows
        monkeypatch.setattr(ray.data.Dataset, "iter_rows", lambda self: iterators.append(iter(real_rows(self))) or iterators[-1])
        with pytest.raises(EncodingCancelled):
            executor.embed(HashingEmbedder(), texts, on_block=cancel_after_two, stop=stop)
        assert len(arrived) == 3  # stopped at the block after the one that set ``stop``
        # and Ray Data's iteration is closed at once (its executor shut down), not left running
        # while the exception is kept: a thread of it that touched Ray after ``ray.shutdown``
        # made Ray end this process
        assert len(iterators) == 1 and iterators[0].gi_frame is None
        # A process that builds once: Ray stops in the background as soon as an encode ends well.
        monkeypatch.setattr(executor_module, "_STOP_WHEN_ENCODED", threading.Event())
        executor_module.stop_ray_when_encoded()
        last = executor.embed(HashingEmbedder(), texts)
        stopping = [t for t in threading.enumerate() if t.name == "pipeline-ray-stop"]
        assert len(stopping) == 1
        stopping[0].join()
        assert not ray.is_initialized()  # nobody called stop_ray
    finally:
        stop_ray()
    assert not ray.is_initialized()
    stop_ray()  # Ray stopped already: nothing to do
    # Ray Data left reference cycles holding Ray object references; freed after the stop, one
    # ended the process. The stop collects them first: none is left for the collector.
    gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds is kept, not freed (into a stopped Ray)
    try:
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, ray.ObjectRef)]
    finally:
        gc.set_debug(0)
    assert not left, f"{len(left)} Ray object references were left for the collector after Ray stopped"
    gc.garbage.clear()
    assert last.tobytes() == vectors.tobytes()
    assert np.array_equal(vectors, LocalExecutor(block_size=7).embed(HashingEmbedder(), texts))
    assert background.tobytes() == vectors.tobytes()


def test_held_stderr_drops_what_a_good_run_wrote_and_shows_a_failed_runs(capfd):
    import os

    with held_stderr():
        os.write(2, b"E core_worker.cc: noise from C++\n")  # below Python: the file descriptor itself
        print("embedding: 100%", file=sys.stderr)  # the CLI's bar writes through sys.stderr
    assert capfd.readouterr().err == "embedding: 100%\n"
    with pytest.raises(RuntimeError), held_stderr():
        os.write(2, b"E raylet died\n")
        raise RuntimeError("the run failed")
    assert capfd.readouterr().err == "E raylet died\n"
    os.write(2, b"shown at once\n")  # outside the block, fd 2 is the terminal again
    assert capfd.readouterr().err == "shown at once\n"
