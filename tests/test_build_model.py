"""The real default model: a build embeds with all-MiniLM-L6-v2 (on the backend chosen for this
CPU, torch-free once the ONNX export is cached), and a rebuild never imports torch."""

import subprocess
import sys
import textwrap

import orjson
import pytest

from conftest import ROOT, write_tree, document_resources

pytestmark = pytest.mark.model

BUILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pipeline.config import SiteConfig
    from pipeline.site.build import build
    content, site, cache = map(Path, sys.argv[1:4])
    report = build(content, site, SiteConfig(cache_dir=cache), progress=False)
    print(report.spec.embedded, "torch" in sys.modules, "sentence_transformers" in sys.modules)
    """
)


def run_build(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path / "content"), str(tmp_path / "site"), str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    embedded, torch, st = result.stdout.split()
    return int(embedded), torch == "True", st == "True"


def test_real_model_build_then_rebuild_without_torch(tmp_path, onnx_cache):
    write_tree(tmp_path / "content", {
        "kb/cats.md": "# Cats\n\nCats are small domestic felines.\n\n## Food\n\nCats eat fish and meat.\n\n"
                      "## Sleep\n\nCats sleep most of the day.\n\n## Databases\n\nPostgreSQL stores rows in tables.\n",
    })
    embedded, _, _ = run_build(tmp_path)
    assert embedded == 4
    items = document_resources(tmp_path / "site", "kb")["cats"]["items"]
    sims = {i["title"]: i["similarity_conceptual"] for i in items}
    # a real semantic model: the off-topic section is the least similar to the overview
    assert min(sims, key=sims.get) == "Databases"
    assert orjson.loads((tmp_path / "site/kb/index.json").read_bytes())["model"] == "all-MiniLM-L6-v2"

    assert run_build(tmp_path) == (0, False, False)
