"""``bench.report`` lays out docs/BENCHMARKS.md from result files: the headline table first, then the
targets, the plots and one dated section per benchmark, no line over 400 characters. Rendered here
from small synthetic results (nothing is measured)."""

from __future__ import annotations

import json
import re

from bench import report
from bench.reporting import inputs

INFO = {"commit": "abc1234", "cpu": "Test CPU", "cores": 2, "isa": "avx2", "ram_gb": 8, "python": "3.11", "packages": {"numpy": "2"}}


def _quality(ours: tuple[float, float], anchor: tuple[float, float]) -> dict:
    def row(name, recall, iou):
        metrics = {k: {"mean": v, "std": 1.0} for k, v in
                   (("recall", recall), ("precision", 3.0), ("precision_omega", 9.0), ("iou", iou), ("recall_at_budget", recall + 2))}
        return {"name": name, "n_chunks": 100, "mean_tokens": 200, "metrics": metrics}

    return {"protocol": {"questions": 40, "k": 5, "token_budget": 1000},
            "results": [row("langchain-recursive-250", *anchor), row("ours-markdown", *ours)]}


def _edit(label: str, share: float) -> dict:
    kinds = {k: {"files": 1, "bytes": 1000} for k in ("index", "search", "spec", "llms", "vectors", "keywords", "document", "other")}
    return {"edit": label, "share": share, "files": 20, "bytes": 970000, "by_kind": kinds, "largest": [["a/index.json", 1000]]}


def _data() -> dict:
    data = report.load_all({})
    chunk_rows = [{"chunker": "markdown", "kind": "ours", "chunks": 10, "mb_per_s": 3.6, "ratio_vs_fastest_anchor": 2.05},
                  {"chunker": "semchunk-250", "kind": "anchor", "chunks": 12, "mb_per_s": 1.8, "ratio_vs_fastest_anchor": 1.0}]
    data.update(
        chroma=_quality((77.7, 5.6), (78.7, 5.4)), markdown=_quality((89.8, 7.6), (89.6, 6.4)),
        chunking={"budget_tokens": 250, "corpora": {"markdown": {
            "documents": 20, "bytes": 2e6, "fastest_anchor": "semchunk-250", "rows": chunk_rows,
            "median_ratio_markdown_vs_fastest_anchor": 2.05}}},
        index_sizes={"budget": 32768, "rows": [{"site": "fastapi", "embedder": "minilm", "documents": 153,
                                                "largest_topic_documents": 40, "files": {k: {"count": 3, "largest": 14924, "median": 3000, "over_budget": 0}
                                                for k in ("index_json", "listing_pages", "documents_every_page", "documents_first_page", "other_json")},
                                                "sample_first": {"requests": 4, "json_bytes": 14410}, "sample_last": {"requests": 5, "json_bytes": 30589}}]},
        edits={"sites": [{"site": "FastAPI's docs", "documents": 154, "chunks": 1700, "document": "tutorial/first-steps.md",
                          "edits": [_edit("one sentence appended", 0.0438), _edit("a section appended", 0.0462)]}]},
        mcp_sizes={"limit_chars": 16000, "chars_per_token": 4, "sites": [{
            "name": "FastAPI docs", "embedder": "minilm", "documents": 153, "chunks": 1698, "topics": 14, "tools_list_chars": 2907,
            "errors": [], "walks": {}, "tools": {"read_document": {"calls": 150, "median": 4360, "max": 15900}}}]},
        stress={"command": "python -m bench.stress", "machine_load": [1.0, 1.0, 1.0],
                "race": {"builds": 300, "flips": 9, "leaks": 0, "tracebacks": 0, "published": 273, "refused": 27},
                "kills": {"trials": 100, "killed": 98, "broken": 0, "neither": 0, "old": 98, "new": 2, "not_repaired": 0},
                "slow": {"slow_clients": 150, "requests": 100, "unanswered": 0, "median_ms": 0.9, "max_ms": 54.2},
                "slow_body": {"slow_clients": 150, "slow": "body", "requests": 100, "unanswered": 0, "median_ms": 1.1, "max_ms": 31.5},
                "keepalive_200": {"clients": 200, "requests": 8000, "answered": 8000, "silent": 0, "silent_percent": 0.0,
                                  "announced_closes": 0, "median_ms": 142.0, "p99_ms": 249.2, "seconds": 5.9}},
    )
    return data


RUNS = {"chroma": {"date": "2026-11-23 05:40", "commit": "ff37217", "command": "python -m bench.retrieval --quiet"},
        "mcp": {"date": "2026-11-29 01:47", "commit": None, "command": None}}


def _render(data=None, runs=RUNS) -> str:
    return report.render(data or _data(), INFO, {"scale": "bench/scale.png"}, False, runs)


def test_the_headline_table_comes_first_with_ours_beside_the_anchor_and_the_run_date():
    text = _render()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[:3] == ["Headline figures", "Targets", "Plots"]
    assert headings[3:] == [title for title, _, _ in report.SECTIONS] + ["Machine"]
    first_table = next(line for line in text.splitlines() if line.startswith("|"))
    assert first_table == "| what | ours | anchor (same run) or target | ratio / difference | date | step |"
    head = text.split("## Headline figures")[1].split("## Targets")[0]
    assert "| Retrieval R@5 / IoU@5, Chroma's corpora | 77.7 / 5.6 | langchain-recursive-250 78.7 / 5.4 | -1.0 / +0.2 pts | 2026-11-23 | `chroma` |" in head
    assert "| Chunking MB/s, exact token counts (markdown corpus) | 3.60 | semchunk-250 1.80 | ×2.05 |" in head
    assert "| Largest `index.json`, FastAPI's docs (kB) | 14.9 | budget 32 kB | ×0.46 of budget |" in head
    assert "| Bytes one edit rewrites, FastAPI's docs (share of site) | 4.4 % | target ≤ 10 % | ×0.44 of target |" in head
    assert "| 15,900 (1 sites) | budget 16,000 | ×0.99 | 2026-11-29 | `mcp` |" in head
    assert "| target 0 / 0 / 0 |" in head
    assert "Sections carry their own run dates" in " ".join(text.split("## Headline figures")[0].split())


def test_every_section_says_when_and_on_which_code_it_ran_or_that_it_did_not():
    text = _render()
    quality = text.split("## Retrieval quality of the chunkers")[1].split("\n## ")[0]
    assert "*Ran chroma 2026-11-23 05:40 on `ff37217`: `python -m bench.retrieval --quiet`.*" in quality
    assert "| **ours-markdown** | ours | 100 | 200 | 77.7 |" in quality
    assert "*Ran mcp 2026-11-29 01:47.*" in text
    builds = text.split("## Builds")[1].split("\n## ")[0]
    assert builds.strip() == "Not run." and "*Ran" not in builds
    assert "![scale](bench/scale.png)" in text.split("## Plots")[1].split("\n## ")[0]


def test_no_line_is_longer_than_400_characters_and_tables_stay_whole():
    data = _data()
    data["fuzz"] = {"cases": 2000, "seconds": 60, "outcomes": {"ok " * 200: 2000}}  # a table cell of 600 characters
    data["eval_speed"] = {"command": "pipeline eval " + "site " * 140, "documents": 1, "questions": 2,  # a sentence of 800
                          "questions_from": "probe", "median_seconds": 3.0, "seconds": [3.0]}
    text = _render(data)
    assert "| " + "ok " * 99 + "ok… | 2,000 |" in text
    assert max(len(line) for line in text.splitlines()) <= report.MAX_LINE
    assert all(line.endswith("|") for line in text.splitlines() if line.startswith("|"))
    assert len(text.splitlines()) <= 400


def test_a_section_is_dated_by_run_all_or_else_by_its_result_file(tmp_path):
    files = {k: tmp_path / rel for k, rel in inputs.RESULTS.items()}
    files["stress"].write_text("{}")
    run = {"steps": {"chroma": {"finished": "2026-11-24 10:00 UTC", "commit": "1234567", "command": "x"}},
           "previous_steps": {"chroma": {"finished": "2026-11-01 10:00 UTC", "commit": "old"}}}
    runs = report.step_runs(run, files)
    assert runs["chroma"] == {"date": "2026-11-24 10:00", "commit": "1234567", "command": "x"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", runs["stress"]["date"]) and runs["stress"]["commit"] is None
    assert runs["fuzz"]["date"] == "–"


def test_the_report_renders_from_result_files_on_disk(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "WORK", tmp_path)
    p = inputs.paths(False)
    p["out"], p["png"] = tmp_path / "BENCHMARKS.md", tmp_path / "png"
    monkeypatch.setattr(report, "paths", lambda quick: p)
    monkeypatch.setattr(report, "machine", lambda: INFO)
    p["stress"].write_text(json.dumps(_data()["stress"]))
    assert report.main([]) == 0
    text = p["out"].read_text()
    assert "| Stress: symlink leaks / broken sites after kills / silent closes | 0 / 0 / 0 (8,000 requests, 200 clients) |" in text
    assert "## Headline figures" in text and "Not run." in text
    assert "| 150 slow-header clients | 100 requests | 0 unanswered, max 54.2 ms |" in text
    assert "| 150 slow-body clients | 100 requests | 0 unanswered, max 31.5 ms |" in text
