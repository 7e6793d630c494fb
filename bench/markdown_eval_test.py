"""Checks of the markdown quality set and of the paired statistics (no model needed).

    .venv/bin/python -m pytest -q bench/markdown_eval_test.py
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import quality  # noqa: E402
from bench.markdown_set import build_questions  # noqa: E402


def test_questions_csv_is_fresh_and_every_span_matches_by_offset():
    assert (build_questions.OUTPUT).read_text(encoding="utf-8") == build_questions.build()
    corpora = build_questions.load_corpora()
    n = 0
    with open(build_questions.OUTPUT, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            refs = json.loads(row["references"])
            assert 1 <= len(refs) <= 3
            text = corpora[row["corpus_id"]]
            for ref in refs:
                assert text[ref["start_index"] : ref["end_index"]] == ref["content"]
            n += 1
    assert 100 <= n <= 300


def test_dataset_loads_with_every_document_questioned():
    ds = quality.load_dir_dataset(build_questions.HERE)
    assert len(ds.corpora) >= 10
    assert {q.corpus_id for q in ds.questions} == set(ds.corpora)


def test_no_question_copies_a_heading():
    corpora = build_questions.load_corpora()
    headings = {
        line.lstrip("#").strip().strip("`").lower()
        for text in corpora.values()
        for line in text.splitlines()
        if line.startswith("#")
    }
    for item in build_questions.parse(build_questions.SOURCE.read_text(encoding="utf-8")):
        assert item.question.rstrip("?").lower() not in headings


def test_paired_and_sign_test():
    assert quality.sign_test(0, 0) == 1.0
    assert quality.sign_test(10, 0) == pytest.approx(2 / 2**10)
    a = [1.0] * 30 + [0.0] * 10
    b = [0.0] * 30 + [0.0] * 10
    p = quality.paired(a, b, n_boot=2000)
    assert p["mean_diff"] == pytest.approx(75.0)
    assert p["wins"] == 30 and p["losses"] == 0 and p["ties"] == 10
    assert p["p_bootstrap"] < 0.01 and p["p_sign"] < 1e-6
    same = quality.paired(a, a, n_boot=500)
    assert same["mean_diff"] == 0 and same["p_sign"] == 1.0
