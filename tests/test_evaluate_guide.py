"""The user guide's page on `pipeline eval` (content/guide/evaluation/) holds for this project's own site."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from pipeline.cli import app
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build

GUIDE = ROOT / "content" / "guide" / "evaluation" / "findability.md"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("own-site")
    build(ROOT / "content", root / "site", SiteConfig(title="guide", cache_dir=root / "cache", embedder="hashing"),
          embedder=HashingEmbedder(), progress=False)
    return root / "site"


def test_the_guides_example_questions_file_resolves_on_the_projects_own_site(site, tmp_path):
    block = re.search(r"```json\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S).group(1)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(block, encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", str(site), "--questions", str(questions), "--json", "--no-html"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)["questions"]) == 3


def test_the_guides_own_qa_pairs_are_tied_by_their_links(site):
    out = json.loads(CliRunner().invoke(app, ["eval", str(site), "--json", "--no-html"]).stdout)
    assert out["questions_from"] == "qa-pairs"
    ours = [q for q in out["questions"] if "guide/evaluation" in q["where"]]
    assert len(ours) == 5 and all(q["tie"] == "link" for q in ours)
    assert all(q["expect"].startswith("guide/evaluation/findability.md#") for q in ours)
