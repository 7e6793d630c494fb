"""Hostile or careless content trees end in a clear error or a warning, never a traceback or a
half-written site (issue 15, points 4-7). Module-level tests live beside their modules; these
run whole builds."""

import orjson
import pytest

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build


def run_build(tmp_path, files, **config):
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    report = build(content, site, SiteConfig(cache_dir=tmp_path / "cache", **config), embedder=HashingEmbedder(), progress=False)
    return content, site, report


def test_a_document_over_the_size_limit_is_refused_before_anything_is_written(tmp_path):
    big = "# Big\n\n" + "A line of prose about the pipeline.\n" * 3000  # ~100 KB
    with pytest.raises(PipelineError) as info:
        run_build(tmp_path, {"t/big.md": big, "t/ok.md": "# Ok\n\nfine\n"}, max_document_bytes=50_000)
    assert info.value.path.endswith("big.md") and "max_document_bytes" in info.value.message
    assert not (tmp_path / "site").exists()
    _, site, _ = run_build(tmp_path, {"t/big.md": big}, max_document_bytes=200_000)  # within the limit: builds
    assert orjson.loads((site / "t" / "index.json").read_bytes())["_embedded"]["chunks"]["big"]["count"] > 1
