"""Representative questions of a topic: ``qa-pairs.md`` beside its documents (seed 001 §6).

Accepted question lines (outside fenced code blocks; everything else is answer text):

1. ``## Q: question`` — an ATX heading (any level, 1-6) whose text starts with ``Q:``;
2. ``**Q:** question`` or ``**Q: question**`` — a line starting with a bold ``Q:``;
3. ``## Any heading ending in a question mark?`` — an ATX heading whose text ends with ``?``.

Matching of ``Q:`` is case-insensitive. The question text is the rest of the line with
surrounding whitespace, a closing ``#`` sequence, bold markers and backticks removed and runs
of whitespace collapsed to one space.

Errors (PipelineError naming the file and line, so the CLI exits 1):

- a ``Q:`` line with no question text after it;
- a question without any word (it would hash to 0, which readers never match);
- the same question twice (compared case-insensitively; the message gives the first line);
- a code fence that is never closed (it would hide every question after it);
- a file that is not UTF-8 (``read_text`` reports the line).

Warnings (``warnings.warn``, shown by the CLI as ``warning: ...``; the build goes on):

- a line that starts with a plain ``Q:`` (not a heading, not bold) is skipped: it is probably
  a question written in an unsupported format;
- a file with no question at all contributes nothing.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.fsutil import read_text
from pipeline.simhash import simhash64, to_hex, words

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_BOLD_Q = re.compile(r"^ {0,3}(?:\*\*|__)[ \t]*q:[ \t]*(?:\*\*|__)(.*)$", re.IGNORECASE)
_BOLD_Q_INSIDE = re.compile(r"^ {0,3}(?:\*\*|__)[ \t]*q:(.*?)(?:\*\*|__)[ \t]*$", re.IGNORECASE)
_Q_PREFIX = re.compile(r"^q:(.*)$", re.IGNORECASE | re.S)
_PLAIN_Q = re.compile(r"^ {0,3}q:[ \t]", re.IGNORECASE)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Question:
    """One question: its cleaned ``text``, 1-based ``line`` in the file, and ``simhash64(text)``."""

    text: str
    line: int
    hash: int

    @property
    def hex(self) -> str:
        return to_hex(self.hash)


def _clean(text: str) -> str:
    text = text.replace("`", "").replace("**", "").replace("__", "")
    return " ".join(text.split())


def _question_text(line: str) -> str | None:
    """The question on ``line`` (possibly ``""`` when a ``Q:`` has no text), or None if none."""
    heading = _HEADING.match(line)
    if heading:
        body = heading.group(2).strip()
        q = _Q_PREFIX.match(body)
        if q:
            return _clean(q.group(1))
        cleaned = _clean(body)
        return cleaned if cleaned.endswith("?") else None
    for pattern in (_BOLD_Q, _BOLD_Q_INSIDE):
        bold = pattern.match(line)
        if bold:
            return _clean(bold.group(1))
    return None


def parse_questions(text: str, path: str | Path = "<string>") -> list[Question]:
    """The questions of a ``qa-pairs.md`` text in file order; see the module docstring for rules."""
    questions: list[Question] = []
    seen: dict[str, int] = {}
    fence: tuple[str, int, int] | None = None  # (char, length, line) of the open fence
    for number, line in enumerate(text.splitlines(), start=1):
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= fence[1] and not marker.group(2).strip():
                fence = None
            continue
        if marker and not (marker.group(1)[0] == "`" and "`" in marker.group(2)):
            fence = (marker.group(1)[0], len(marker.group(1)), number)
            continue
        question = _question_text(line)
        if question is None:
            if _PLAIN_Q.match(line):
                warnings.warn(f"{path}:{number}: skipped a plain `Q:` line; write questions as `## Q: ...` or `**Q:** ...`")
            continue
        if not question:
            raise PipelineError("`Q:` without a question after it", path=path, line=number)
        if not words(question):
            raise PipelineError(f"question {question!r} has no words to hash", path=path, line=number)
        key = question.lower()
        if key in seen:
            raise PipelineError(f"duplicate question {question!r} (first on line {seen[key]})", path=path, line=number)
        seen[key] = number
        questions.append(Question(question, number, simhash64(question)))
    if fence is not None:
        raise PipelineError("code fence opened here is never closed, so it hides the questions after it", path=path, line=fence[2])
    if not questions:
        warnings.warn(f"{path}: no questions found (expected `## Q: ...` headings); the file is ignored")
    return questions


def load_questions(path: Path) -> list[Question]:
    """The questions of ``path``, or ``[]`` when the file does not exist."""
    return parse_questions(read_text(path), path) if path.is_file() else []
