"""``--executor ray``: embedding on Ray Data actors (a local Ray with 2 CPUs here) writes the same
cache and produces a byte-identical site to a local build."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.distributed import RayEmbedder, with_executor
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build
from test_build import FILES

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    yield
    if ray.is_initialized():
        ray.shutdown()


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_ray_embeds_in_input_order_like_the_embedder():
    texts = [f"chunk {i} about {'cats' if i % 3 else 'rockets'} and stripe order {i * 7}" for i in range(700)]
    got = RayEmbedder(HashingEmbedder(), workers=2, batch_size=64).embed(texts)
    assert np.array_equal(got, HashingEmbedder().embed(texts))


def test_ray_build_is_byte_identical_to_a_local_build_and_fills_the_same_cache(tmp_path):
    content = write_tree(tmp_path / "content", FILES)
    local = build(content, tmp_path / "local", SiteConfig(cache_dir=tmp_path / "cache-local"),
                  embedder=HashingEmbedder(), progress=False)
    distributed = build(content, tmp_path / "ray", SiteConfig(cache_dir=tmp_path / "cache-ray", executor="ray", ray_workers=2),
                        embedder=HashingEmbedder(), progress=False)
    assert distributed.spec.embedded == local.spec.embedded > 0
    assert tree_bytes(tmp_path / "ray") == tree_bytes(tmp_path / "local")
    assert tree_bytes(tmp_path / "cache-ray") == tree_bytes(tmp_path / "cache-local")
    # the cache Ray filled serves a local rebuild: nothing is embedded again
    again = HashingEmbedder()
    report = build(content, tmp_path / "again", SiteConfig(cache_dir=tmp_path / "cache-ray"), embedder=again, progress=False)
    assert again.calls == 0 and report.spec.embedded == 0
    assert tree_bytes(tmp_path / "again") == tree_bytes(tmp_path / "local")


def test_executors_are_checked():
    embedder = HashingEmbedder()
    assert with_executor(embedder, "local") is embedder
    with pytest.raises(PipelineError, match="unknown executor"):
        with_executor(embedder, "spark")
    with pytest.raises(PipelineError, match="worker"):
        RayEmbedder(embedder, workers=0)


def test_cli_rejects_an_unknown_executor(tmp_path):
    content = write_tree(tmp_path / "content", {"a.md": "# A\n\nText.\n"})
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "build", str(content), "--out", str(tmp_path / "site"), "--embedder", "hashing",
         "--cache-dir", str(tmp_path / "cache"), "--executor", "spark", "-q"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert done.returncode != 0 and "unknown executor 'spark'" in done.stderr
    assert not (tmp_path / "site" / "index.json").exists()
