"""A cold build loads its model beside the planning (embedding/warmup.py): only when nothing of
the model is cached, only for a local executor and an embedder that can load ahead (or a Ray
executor's connection), never twice,
and never past the build; the site is the one a build without the warm-up writes."""

from __future__ import annotations

import threading
import time

import numpy as np

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.cache import EmbeddingCache, holds_vectors_of
from pipeline.embedding.executor import LocalExecutor
from pipeline.embedding.ray_executor import RayExecutor
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.onnx import OnnxEmbedder
from pipeline.embedding.warmup import BYTES_PER_TOKEN, markdown_bytes, start_warmup
from pipeline.site.build import build
from test_build import FILES


class WarmHashing(HashingEmbedder):
    """The hashing embedder with a ``warm`` that records the thread it ran in."""

    def __init__(self):
        super().__init__()
        self.warmed: list[str] = []

    def warm(self) -> bool:
        time.sleep(0.05)  # a load that takes a while, so the planning runs beside it
        self.warmed.append(threading.current_thread().name)
        return True


def test_holds_vectors_of_is_false_only_without_an_entry_of_the_model(tmp_path):
    assert not holds_vectors_of(tmp_path / "missing", "m")
    cache = EmbeddingCache(tmp_path, "markdown-256", "m")
    assert not holds_vectors_of(tmp_path, "m")  # the folders alone (no entry yet)
    cache.store("a.md", "f" * 16, ["h"], [np.ones(3, dtype=np.float32)])
    assert holds_vectors_of(tmp_path, "m")
    assert not holds_vectors_of(tmp_path, "other-model")
    (tmp_path / "stray-file").write_text("x")  # a file beside the strategy folders is no entry
    assert holds_vectors_of(tmp_path, "m") and not holds_vectors_of(tmp_path, "other-model")


def test_start_warmup_only_for_an_empty_cache_and_a_warm_embedder_or_ray(tmp_path, monkeypatch):
    connected: list[str] = []
    monkeypatch.setattr(RayExecutor, "connect", lambda self: connected.append(threading.current_thread().name))
    task = start_warmup(HashingEmbedder(), RayExecutor("hashing"), tmp_path)  # Ray: its connection
    assert task is not None
    task.join()
    assert connected == ["pipeline-warmup"]
    task = start_warmup(WarmHashing(), LocalExecutor(), tmp_path)
    assert task is not None
    task.join()
    assert start_warmup(HashingEmbedder(), LocalExecutor(), tmp_path) is None  # nothing to load ahead
    EmbeddingCache(tmp_path, "markdown-256", HashingEmbedder().name).store("a.md", "f" * 16, ["h"], [np.ones(3, dtype=np.float32)])
    embedder = WarmHashing()
    assert holds_vectors_of(tmp_path, embedder.name)
    assert start_warmup(embedder, LocalExecutor(), tmp_path) is None  # the build may embed nothing
    assert start_warmup(embedder, RayExecutor("hashing"), tmp_path) is None


def test_ray_warms_the_local_model_instead_when_the_markdown_is_too_small_for_ray(tmp_path, monkeypatch):
    # Texts of fewer than min_tokens tokens are encoded in the build's process (RayExecutor):
    # a cold build whose markdown promises fewer loads that model ahead, not Ray.
    connected: list[str] = []
    monkeypatch.setattr(RayExecutor, "connect", lambda self: connected.append(threading.current_thread().name))
    content = write_tree(tmp_path / "content", {"a.md": "# A\n\n" + "word " * 200 + "\n"})  # 1,006 bytes
    small, cache = WarmHashing(), tmp_path / "cache"
    start_warmup(small, RayExecutor("hashing", min_tokens=1_006 // BYTES_PER_TOKEN + 1), cache, content=content).join()
    assert small.warmed == ["pipeline-warmup"] and connected == []
    enough = WarmHashing()
    start_warmup(enough, RayExecutor("hashing", min_tokens=1_006 // BYTES_PER_TOKEN), cache, content=content).join()
    assert enough.warmed == [] and connected == ["pipeline-warmup"]


def test_markdown_bytes_counts_markdown_outside_hidden_folders_until_enough(tmp_path):
    write_tree(tmp_path, {"a.md": "x" * 100, "b/c.md": "x" * 100, "b/d.md": "x" * 100, "e.txt": "x" * 500,
                          ".git/f.md": "x" * 500, "b/.hidden/g.md": "x" * 500})
    assert markdown_bytes(tmp_path, 10**6) == 300
    assert markdown_bytes(tmp_path, 150) == 200  # stops at the file that reaches enough
    assert markdown_bytes(tmp_path / "missing", 1) == 0


def test_a_cold_build_warms_in_another_thread_and_writes_the_same_site(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    warm = WarmHashing()
    build(content, tmp_path / "warm", SiteConfig(cache_dir=tmp_path / "cache-warm"), embedder=warm, progress=False)
    build(content, tmp_path / "plain", SiteConfig(cache_dir=tmp_path / "cache-plain"), embedder=HashingEmbedder(), progress=False)
    assert warm.warmed == ["pipeline-warmup"]
    assert not any(t.name == "pipeline-warmup" for t in threading.enumerate())  # joined by the build
    files = lambda root: {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != ".pipeline-state.json"}  # noqa: E731
    assert files(tmp_path / "warm") == files(tmp_path / "plain")
    assert files(tmp_path / "cache-warm") == files(tmp_path / "cache-plain")
    # a rebuild finds the model's vectors in the cache: it may embed nothing, so loads nothing ahead
    again = WarmHashing()
    build(content, tmp_path / "warm", SiteConfig(cache_dir=tmp_path / "cache-warm"), embedder=again, progress=False)
    assert again.warmed == []


def test_a_failed_build_does_not_leave_its_warm_up_running(tmp_path):
    content = write_tree(tmp_path / "content", {"bad.md": "# Bad\n\nnot utf-8 \xff\n"})
    (content / "bad.md").write_bytes(b"# Bad\n\nnot utf-8 \xff\n")
    warm = WarmHashing()
    try:
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=warm, progress=False)
    except Exception:  # noqa: BLE001 - the bad byte fails the planning
        pass
    else:
        raise AssertionError("the build should have failed")
    assert warm.warmed == ["pipeline-warmup"]  # it ran to its end before build returned
    assert not any(t.name == "pipeline-warmup" for t in threading.enumerate())


class SlowLoad(OnnxEmbedder):
    """An ONNX embedder whose session takes a while to make (no runtime, no export)."""

    def __init__(self):
        super().__init__(DEFAULT_MODEL)
        self.loads: list[str] = []

    def _load_session(self):
        self.loads.append(threading.current_thread().name)
        time.sleep(0.2)
        return object()


def test_a_session_asked_for_during_a_load_in_another_thread_waits_for_that_one():
    embedder = SlowLoad()
    loader = threading.Thread(target=embedder.session, name="loader")
    loader.start()
    time.sleep(0.05)  # the loader is inside its load
    session = embedder.session()
    loader.join()
    assert embedder.loads == ["loader"]  # made once, by the thread that asked first
    assert session is embedder.session() is embedder._session


def test_warm_does_not_export_a_model_whose_export_is_not_cached(monkeypatch):
    # The export imports torch: left to the encode's own load (one export at a time there).
    import pipeline.embedding.onnx_export as onnx_export

    monkeypatch.setattr(onnx_export, "cached_onnx", lambda model, variant="fp32": None)
    embedder = SlowLoad()
    assert embedder.warm() is False
    assert embedder.loads == [] and embedder._session is None
