"""``bench/site_eval.py``: question sets turned into `pipeline eval` files, and the bench's site
figures are the numbers `pipeline eval` prints (one implementation). No model: hashing embedder.

Run: .venv/bin/python -m pytest tests/test_bench_site_eval.py -q
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import chroma_eval as ce  # noqa: E402
from bench import site_eval  # noqa: E402
from pipeline.cli import app  # noqa: E402

SETUP = ("# Widget setup\n\nInstalling the widget daemon.\n\n## Linux\n\nUse apt to install widgetd.\n\n"
         "### Service\n\nEnable it with systemctl enable widgetd.\n\n## Windows\n\nRun the MSI installer as administrator.\n")
CONFIG = "Options live in widget.toml.\n\n## Port\n\nThe port option sets the TCP port, 8080 by default.\n"


def toy() -> ce.Dataset:
    def q(text: str, cid: str, corpus: str, quote: str) -> ce.Question:
        start = corpus.index(quote)
        return ce.Question(text, cid, ((start, start + len(quote)),))

    corpora = {"guide__setup": SETUP, "config": CONFIG}
    questions = [q("how do I enable the service", "guide__setup", SETUP, "systemctl enable widgetd"),
                 q("what is the widget daemon", "guide__setup", SETUP, "Installing the widget daemon."),
                 q("windows installer", "guide__setup", SETUP, "MSI installer"),
                 q("where do options live", "config", CONFIG, "Options live in widget.toml."),
                 q("default TCP port", "config", CONFIG, "8080 by default")]
    return ce.Dataset(corpora, questions, "toy")


def test_each_question_expects_the_section_of_its_gold_span():
    expects = [row["expect"] for row in site_eval.expectations(toy())]
    assert expects == ["guide/setup.md#Linux > Service", "guide/setup.md#Widget setup", "guide/setup.md#Windows",
                       "config.md#Overview", "config.md#Port"]  # a document without a title: its overview's chunks' title


def test_the_bench_figures_are_what_pipeline_eval_prints(tmp_path):
    figures = site_eval.site_figures("toy", toy(), folder=tmp_path / "toy", embedder="hashing")
    site, questions = tmp_path / "toy" / "site", tmp_path / "toy" / "questions.jsonl"
    assert figures["command"] == f"pipeline eval {site} --questions {questions}"
    result = CliRunner().invoke(app, ["eval", str(site), "--questions", str(questions), "--json", "--no-html"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["summary"] == figures["summary"] and figures["questions"] == 5
    assert {m: [q["ranks"][m] for q in printed["questions"]] for m in printed["methods"]} == figures["per_question_ranks"]
    assert figures["summary"]["lexical"]["found"] >= 3  # the toy questions are findable: the comparison is not of zeros
    assert figures["probes"] == printed["sections_in_site"]
    table = site_eval.table(figures)
    assert "| hybrid (search page) |" in table and figures["command"] in table
