"""With the real model: questions land on the chunk that answers them, and a rebuild with
unchanged questions and documents never imports torch (questions are cached like chunks)."""

import subprocess
import sys
import textwrap

import orjson
import pytest

from conftest import ROOT, write_tree, document_resources
from pipeline.simhash import simhash64

pytestmark = pytest.mark.model

BUILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pipeline.config import SiteConfig
    from pipeline.site.build import build
    content, site, cache = map(Path, sys.argv[1:4])
    report = build(content, site, SiteConfig(cache_dir=cache), progress=False)
    print(report.spec.embedded, report.spec.questions_embedded, "torch" in sys.modules)
    """
)
FILES = {
    "kb/cats.md": "# Cats\n\nCats are small domestic felines.\n\n## Food\n\nCats eat fish and meat twice a day.\n\n"
                  "## Sleep\n\nCats sleep most of the day, often sixteen hours.\n\n"
                  "## Databases\n\nPostgreSQL stores rows in tables and answers SQL queries.\n",
    "kb/qa-pairs.md": "# Questions\n\n## Q: What do cats eat?\nFish.\n\n## Q: How long do cats sleep?\nLong.\n\n"
                      "**Q:** Where does PostgreSQL keep rows?\nIn tables.\n",
}


def run_build(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path / "content"), str(tmp_path / "site"), str(tmp_path / "cache")],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    chunks, questions, torch = result.stdout.split()
    return int(chunks), int(questions), torch == "True"


def test_questions_find_their_chunks_and_a_rebuild_needs_no_model(tmp_path, onnx_cache):
    write_tree(tmp_path / "content", FILES)
    # the first build embeds (torch-free when the ONNX export is cached, as it is here)
    assert run_build(tmp_path)[:2] == (4, 3)
    items = document_resources(tmp_path / "site", "kb")["cats"]["items"]
    holders = {q: [i["title"] for i in items if simhash64(q) in i["prompt_hashes"]]
               for q in ("What do cats eat?", "How long do cats sleep?", "Where does PostgreSQL keep rows?")}
    assert "Food" in holders["What do cats eat?"]
    assert "Sleep" in holders["How long do cats sleep?"]
    assert "Databases" in holders["Where does PostgreSQL keep rows?"]
    assert run_build(tmp_path) == (0, 0, False)
