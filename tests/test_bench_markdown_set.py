"""Checks of the markdown quality set and of the paired statistics (no model needed).

    .venv/bin/python -m pytest -q tests/test_bench_markdown_set.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import chroma_eval as ce, quality


MARKDOWN_SET = Path(__file__).resolve().parent.parent / "bench" / "markdown_set"


def test_dataset_loads_every_span_by_offset_with_every_document_questioned():
    ds = ce.load_dir_dataset(MARKDOWN_SET)  # raises when a reference's offsets do not match
    assert len(ds.corpora) >= 10 and 100 <= len(ds.questions) <= 300
    assert {q.corpus_id for q in ds.questions} == set(ds.corpora)
    assert all(1 <= len(q.refs) <= 3 for q in ds.questions)


def test_no_question_copies_a_heading():
    ds = ce.load_dir_dataset(MARKDOWN_SET)
    headings = {
        line.lstrip("#").strip().strip("`").lower()
        for text in ds.corpora.values()
        for line in text.splitlines()
        if line.startswith("#")
    }
    for q in ds.questions:
        assert q.text.rstrip("?").lower() not in headings


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
