"""Keyword authority tables (``_keywords/words.md``) and matching keywords inside chunks.

Table format (documented in docs/ARCHITECTURE.md)::

    | keyword | score |
    |---|---|
    | stripe order | 9 |

One row per keyword; the header row names the columns (``keyword`` and ``score``, any order,
other columns ignored); scores are integers 1-10. Lines outside the table are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fsutil import read_text


@dataclass(frozen=True)
class Keyword:
    name: str
    score: int

    def to_dict(self) -> dict:
        return {"name": self.name, "score": self.score}


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_keywords(text: str, path: str | Path = "<string>") -> list[Keyword]:
    """Keywords of a ``words.md`` table, in file order. Bad rows raise PipelineError with the line."""
    lines = text.split("\n")
    header: list[str] | None = None
    keywords: list[Keyword] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip().startswith("|"):
            if header is not None and keywords:
                break  # the first table is the authority table
            continue
        cells = _cells(line)
        if header is None:
            header = [c.lower() for c in cells]
            if "keyword" not in header or "score" not in header:
                raise PipelineError("keyword table needs a header row with `keyword` and `score` columns", path=path, line=number)
            continue
        if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c):
            continue
        if len(cells) != len(header):
            raise PipelineError(f"row has {len(cells)} cells, the header has {len(header)}", path=path, line=number)
        name = " ".join(cells[header.index("keyword")].split()).lower()
        raw_score = cells[header.index("score")]
        if not name:
            raise PipelineError("empty keyword", path=path, line=number)
        if not re.fullmatch(r"\d+", raw_score):
            raise PipelineError(f"score {raw_score!r} of {name!r} is not a whole number", path=path, line=number)
        score = int(raw_score)
        if not 1 <= score <= 10:
            raise PipelineError(f"score {score} of {name!r} is outside 1-10", path=path, line=number)
        if name in seen:
            raise PipelineError(f"duplicate keyword {name!r} (first on line {seen[name]})", path=path, line=number)
        seen[name] = number
        keywords.append(Keyword(name, score))
    if header is None:
        raise PipelineError("no keyword table found (expected `| keyword | score |`)", path=path)
    return keywords


def load_keywords(path: Path) -> list[Keyword]:
    return parse_keywords(read_text(path), path) if path.is_file() else []


@lru_cache(maxsize=4096)
def keyword_pattern(name: str) -> re.Pattern[str]:
    """Whole-word, case-insensitive; words may be separated by line breaks or emphasis markers.

    ``_`` counts as a boundary so ``_stripe order_`` (emphasis) matches ``stripe order``.
    """
    words = [re.escape(w) for w in name.split()]
    return re.compile(r"(?<![^\W_])" + r"[\s*_`~]+".join(words) + r"(?![^\W_])", re.IGNORECASE)


def keywords_in(text: str, table: list[Keyword]) -> list[Keyword]:
    """The keywords of ``table`` that occur in ``text``, highest score first, then by name."""
    found = [k for k in table if keyword_pattern(k.name).search(text)]
    return sorted(found, key=lambda k: (-k.score, k.name))
