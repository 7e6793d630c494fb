"""``bench/lexdocs_cost.py``: adjacent documents make one row range.

Run: .venv/bin/python -m pytest bench/test_lexdocs_cost.py -q
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.lexdocs_cost import ranges  # noqa: E402


def test_adjacent_documents_merge_into_one_range():
    assert ranges([]) == 0
    assert ranges([(10, 14), (0, 3), (3, 10)]) == 1
    assert ranges([(0, 3), (4, 9), (9, 12)]) == 2
