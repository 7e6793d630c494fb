"""Reading a questions file (pipeline/evaluate/questions.py): JSON Lines, errors naming file and line."""

from __future__ import annotations

import pytest

from pipeline.errors import PipelineError
from pipeline.evaluate.questions import read_question_file
from pipeline.evaluate.targets import Inventory


def inventory() -> Inventory:
    inv = Inventory()
    inv.add("a.md", "", "Alpha", ["", "## Setup", "## Use"])
    inv.add("docs/b.md", "docs", "Beta", [""])
    return inv


def test_lines_blank_lines_lists_and_a_byte_order_mark(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('\ufeff{"question": "how  do I\\nset up?", "expect": "a.md#Setup", "id": 7}\n\n'
                    '{"question": "beta", "expect": ["docs/b.md", "a.md#use"]}\n', encoding="utf-8")
    first, second = read_question_file(path, inventory())
    assert first.text == "how do I set up?" and first.where == f"{path}:1" and first.expect == "a.md#Setup"
    assert second.where == f"{path}:3" and [t.source for t in second.targets] == ["docs/b.md", "a.md"]
    assert second.source == "docs/b.md"  # counted for its first target's document


@pytest.mark.parametrize("data, line, message", [
    (b'{"question": "q", "expect": "a.md"}\n\xff\n', 2, "not valid UTF-8"),
    (b'{"question": "q", "expect": "a.md"}\n{"question": "q", "expect": []}\n', 2, '"expect" must be'),
    (b'{"question": "  ", "expect": "a.md"}\n', 1, '"question" must be a non-empty string'),
    (b'{"question": "q", "expect": "a.md#Nowhere"}\n', 1, "no heading 'Nowhere' in a.md (its sections: 'Setup', 'Use')"),
])
def test_errors_name_the_file_and_line(tmp_path, data, line, message):
    path = tmp_path / "q.jsonl"
    path.write_bytes(data)
    with pytest.raises(PipelineError) as error:
        read_question_file(path, inventory())
    assert error.value.line == line and error.value.path == str(path) and message in str(error.value)


def test_an_empty_file_or_a_missing_one_is_an_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(PipelineError, match="no questions in the file"):
        read_question_file(empty, inventory())
    with pytest.raises(PipelineError, match="file not found"):
        read_question_file(tmp_path / "missing.jsonl", inventory())
