"""``pipeline eval SITE`` end to end on a small built site, read as its users read it: the JSON,
the summary, the HTML report, the exit codes (pipeline/cli_eval.py, pipeline/evaluate/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsite import EVIL, QUESTIONS, build_site
from pipeline.cli import app
from pipeline.client import open_site
from pipeline.evaluate.targets import Inventory
from pipeline.simhash import simhash64


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("eval-qa"), qa_pairs=True)


@pytest.fixture(scope="module")
def bare_site(tmp_path_factory) -> Path:
    return build_site(tmp_path_factory.mktemp("eval-bare"), qa_pairs=False)


@pytest.fixture
def questions(tmp_path) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    return path


def run(*args: str):
    return CliRunner().invoke(app, ["eval", *map(str, args)])


def test_json_ranks_are_what_site_search_returns(site, questions, tmp_path):
    result = run(site, "--questions", questions, "--json", "--html", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["questions_from"] == "file" and out["methods"] == ["lexical", "hybrid", "auto"]
    assert out["page_method"] == "auto"
    assert [q["question"] for q in out["questions"]] == [" ".join(q["question"].split()) for q in QUESTIONS]
    inventory = Inventory()
    reader = open_site(site)
    for node in reader.topics():
        for doc in reader.topic(node).documents:
            inventory.add(doc.source, node.id, doc.title, [c.header_path for c in doc.items])
    checked = 0
    for asked, got in zip(QUESTIONS, out["questions"]):
        expects = asked["expect"] if isinstance(asked["expect"], list) else [asked["expect"]]
        targets = [inventory.resolve(e) for e in expects]
        for method in out["methods"]:
            # a fresh reader per question, as `pipeline search SITE Q --method M` asks it: its query
            # embedded as the search page and the clients embed it (the site's static encoder)
            hits = open_site(site).search(got["question"], 5, method=method)
            assert [(h["source"], h["header_path"], h["score"]) for h in got["hits"][method]] == [
                (h.source, h.header_path, round(float(h.score), 4)) for h in hits]
            expected = next((i for i, h in enumerate(hits, 1) if any(t.matches(h.source, h.header_path) for t in targets)), None)
            assert got["ranks"][method] == expected
            checked += expected is not None
    assert checked >= 6  # the search found most of them: the comparison is not of empty lists
    assert out["questions"][-1]["ranks"]["lexical"] is None  # the zebra question finds nothing relevant
    summary = out["summary"]["lexical"]
    ranks = [q["ranks"]["lexical"] for q in out["questions"]]
    assert summary["found"] == sum(r is not None for r in ranks)
    assert summary["mrr"] == pytest.approx(sum(1 / r for r in ranks if r) / len(ranks), abs=1e-6)


def test_embedder_full_asks_with_the_sites_model_as_pipeline_search_does(site, questions):
    out = json.loads(run(site, "--questions", questions, "--json", "--no-html", "--embedder", "full").stdout)
    for got in out["questions"]:
        hits = open_site(site).search(got["question"], 5, method="hybrid", embedder="full")
        assert [(h["source"], h["score"]) for h in got["hits"]["hybrid"]] == [(h.source, round(float(h.score), 4)) for h in hits]


def test_the_summary_marks_the_page_method_and_lists_failures(site, questions, tmp_path):
    result = run(site, "--questions", questions, "--html", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert re.search(r"auto\*\s+\d+\.\d%", text) and "* the search page's method" in text
    assert "Failing questions (auto)" in text and "zebra migration" in text
    assert f"Report: {tmp_path / 'r.html'}" in text


def test_the_html_report_is_one_file_with_everything_escaped(site, questions, tmp_path):
    report = tmp_path / "report.html"
    assert run(site, "--questions", questions, "--html", report).exit_code == 0
    html = report.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") >= 3
    assert "<script" not in html.lower()  # the hostile heading, title and question are text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "zebra migration patterns" in html  # the failing question, with what came back instead
    for external in ("<link", " src=", " href=", "@import", "url("):
        assert external not in html
    assert re.findall(r"https?://[^\"'\s<]+", html) == ["http://www.w3.org/2000/svg"] * html.count("<svg")
    again = tmp_path / "again.html"
    run(site, "--questions", questions, "--html", again)
    assert again.read_bytes() == report.read_bytes()  # the same evaluation, the same bytes


def test_fail_under_exits_1_below_and_0_at_or_above(site, questions, tmp_path):
    out = json.loads(run(site, "--questions", questions, "--json", "--no-html").stdout)
    found = 100 * out["summary"]["auto"]["recall"]
    assert found < 100  # the zebra question fails
    failed = run(site, "--questions", questions, "--no-html", "--fail-under", "100")
    assert failed.exit_code == 1
    assert f"recall@5 of auto is {found:.1f} %, under --fail-under 100 %" in failed.stderr
    assert run(site, "--questions", questions, "--no-html", "--fail-under", f"{found:.1f}").exit_code == 0


def test_qa_pairs_questions_when_no_file(site, tmp_path):
    out = json.loads(run(site, "--json", "--html", tmp_path / "r.html").stdout)
    assert out["questions_from"] == "qa-pairs"
    asked = {q["question"]: q for q in out["questions"]}
    linux = asked.pop("How do I install the widget on Linux?")
    assert linux["tie"] == "link" and linux["expect"] == "guide/setup.md#install-on-linux"  # the answer's link
    assert linux["where"].endswith("qa-pairs.md:3")
    assert asked.pop("What does error 1603 mean when installing?")["tie"] == "link"
    # no link in its answer: tied to the sections whose chunks the build gave its prompt hash
    (restart,) = asked.values()
    carriers = {f"{c.source}#{c.header_path.split('## ')[-1]}" for node in open_site(site).topics()
                for doc in open_site(site).topic(node).documents for c in doc.items
                if simhash64(restart["question"]) in c.prompt_hashes}
    assert restart["tie"] == "prompt hash" and set(restart["expect"].split(" | ")) == carriers
    assert carriers == {"guide/setup.md#Applying changes", "guide/upgrade.md#After the upgrade"}
    assert out["untied_questions"] == [{"question": "Xylophone quartz juggling?", "where": str(site / "guide" / "qa-pairs.md") + ":12"}]


def test_probes_when_neither_one_per_section(bare_site, tmp_path):
    out = json.loads(run(bare_site, "--json", "--no-html").stdout)
    assert out["questions_from"] == "probe" and out["probe_kind"] == "heading"
    asked = [q["question"] for q in out["questions"]]
    assert len(asked) == out["sections_in_site"]
    assert {"Setup Guide", "Install on Linux", "Troubleshooting", "Database migration", "Port", "Timeout"} <= set(asked)
    assert out["methods"] == ["lexical", "hybrid"] and out["page_method"] == "hybrid"  # no prompt hashes: auto is hybrid
    # the two sections sharing their text compete
    pairs = {(c["a"]["source"], c["b"]["source"]) for c in out["competing_sections"]}
    assert ("guide/setup.md", "guide/upgrade.md") in pairs
    probes_over = json.loads(run(bare_site, "--json", "--no-html", "--probes").stdout)
    assert probes_over["questions"] == out["questions"]


def test_probes_asked_for_say_so_not_that_the_site_has_no_questions(site, tmp_path):
    """A site with qa-pairs.md questions, probed on request: the summary and the report give that
    reason, not "no qa-pairs.md"."""
    result = run(site, "--probes", "--html", tmp_path / "r.html")
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    report = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "heading probes: asked for with --probes" in first and "no qa-pairs.md" not in first
    assert "heading probes: asked for with --probes" in report and "no qa-pairs.md" not in report


@pytest.mark.parametrize("line, message", [
    ('{"question": "a", "expect": "guide/setup.md"', "questions.jsonl:2: not a JSON object"),
    ('["a", "guide/setup.md"]', "questions.jsonl:2: expected a JSON object, got list"),
    ('{"expect": "guide/setup.md"}', 'questions.jsonl:2: "question" must be a non-empty string'),
    ('{"question": "a", "expect": 3}', 'questions.jsonl:2: "expect" must be'),
    ('{"question": "a", "expect": "guide/nothing.md"}', "questions.jsonl:2: expect 'guide/nothing.md': no document"),
    ('{"question": "a", "expect": "guide/setup.md#Uninstall"}', "questions.jsonl:2: expect 'guide/setup.md#Uninstall': no heading 'Uninstall'"),
])
def test_bad_input_names_file_and_line_and_writes_nothing(site, tmp_path, line, message):
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps(QUESTIONS[0]) + "\n" + line + "\n", encoding="utf-8")
    report = tmp_path / "report.html"
    result = run(site, "--questions", path, "--html", report)
    assert result.exit_code == 1
    assert message in result.stderr and str(path) in result.stderr
    assert not report.exists()


def test_a_folder_that_is_no_site_is_an_error(tmp_path):
    result = run(tmp_path, "--no-html")
    assert result.exit_code == 1 and "not a pipeline site" in result.stderr
