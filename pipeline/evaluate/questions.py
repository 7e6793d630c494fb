"""The questions an evaluation asks, each with where its answer lies (``Target``s).

Three sources, in this order of precedence (``pipeline eval`` takes the first that exists):

1. a file the author gives: JSON Lines, one ``{"question": "...", "expect": "path/doc.md"}`` or
   ``"path/doc.md#Heading text"`` a line (``expect`` may be a list: any of them answers), blank
   lines skipped, other keys ignored (``read_question_file``);
2. the site's ``qa-pairs.md`` questions (``site_questions``), each tied to the section it answers:
   the documents its answer links to, when it links to one (the author's word), else the sections
   whose chunks carry its prompt hash (the build attached the question to them);
3. probes the site makes of itself (``pipeline.evaluate.probes``).

Bad input raises ``PipelineError`` naming the file and line: a line that is not a JSON object,
a missing or empty ``question`` or ``expect``, an ``expect`` pointing at no document or heading
of the site.
"""

from __future__ import annotations

import posixpath
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson

from pipeline.errors import PipelineError
from pipeline.evaluate.targets import Inventory, Target, section_target
from pipeline.fsutil import read_text

ORIGINS = ("file", "qa-pairs", "probe")


@dataclass(frozen=True)
class Question:
    """One question and where its answer is (any of ``targets``); ``where``: ``file:line``."""

    text: str
    targets: tuple[Target, ...]
    origin: str  # one of ORIGINS
    where: str
    tie: str = ""  # how it was tied to its targets: "expect", "link", "prompt hash", a probe's kind

    @property
    def source(self) -> str:
        """The document the question is counted for (its first target's)."""
        return self.targets[0].source

    @property
    def expect(self) -> str:
        return " | ".join(t.label for t in self.targets)


def read_question_file(path: Path, inventory: Inventory) -> list[Question]:
    """The questions of a JSON Lines file, each target checked against ``inventory``."""
    text = read_text(path).removeprefix("\ufeff")  # a byte order mark some editors write
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise PipelineError(f"not a JSON object ({exc})", path=path, line=number) from None
        if not isinstance(record, dict):
            raise PipelineError(f"expected a JSON object, got {type(record).__name__}", path=path, line=number)
        question = record.get("question")
        if not isinstance(question, str) or not question.strip():
            raise PipelineError('"question" must be a non-empty string', path=path, line=number)
        expects = record.get("expect")
        expects = [expects] if isinstance(expects, str) else expects
        if not isinstance(expects, list) or not expects or not all(isinstance(e, str) for e in expects):
            raise PipelineError('"expect" must be "path/doc.md", "path/doc.md#Heading" or a list of them', path=path, line=number)
        targets = []
        for expect in expects:
            try:
                targets.append(inventory.resolve(expect))
            except ValueError as exc:
                raise PipelineError(f"expect {expect!r}: {exc}", path=path, line=number) from None
        questions.append(Question(" ".join(question.split()), tuple(targets), "file", f"{path}:{number}", "expect"))
    if not questions:
        raise PipelineError("no questions in the file (one JSON object a line)", path=path)
    return questions


_MD_LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def site_questions(site, inventory: Inventory) -> tuple[list[Question], list[Question]]:
    """The site's ``qa-pairs.md`` questions: (tied ones, ones tied to no section of the site).

    A question is tied to the documents (or ``doc.md#heading`` sections) its answer links to,
    when it links to any of the site's; else to the sections whose chunks carry its prompt hash.
    A question with neither is returned apart: the build found no section close enough to it."""
    from pipeline.topicspec.questions import parse_questions

    tied, untied = [], []
    for node in site.topics():
        found = site.qa_pairs(node)
        if found is None:
            continue
        text, url = found
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the build reported them already
            try:
                parsed = parse_questions(text, url)
            except PipelineError:
                continue  # the build would have refused it; a site that has one holds it anyway
        lines = text.splitlines()
        carriers = {}
        for doc in site.topic(node).documents:
            for chunk in doc.items:
                for h in chunk.prompt_hashes:
                    carriers.setdefault(h, []).append((chunk.source, chunk.header_path))
        folder = posixpath.dirname(node.path)
        for i, q in enumerate(parsed):
            answer = "\n".join(lines[q.line : parsed[i + 1].line - 1 if i + 1 < len(parsed) else len(lines)])
            targets = _linked_targets(answer, folder, inventory)
            tie = "link"
            if not targets:
                tie = "prompt hash"
                targets = [section_target(s, h) for s, h in dict.fromkeys(carriers.get(q.hash, []))]
            question = Question(q.text, tuple(targets), "qa-pairs", f"{url}:{q.line}", tie)
            (tied if targets else untied).append(question)
    return tied, untied


def _linked_targets(answer: str, folder: str, inventory: Inventory) -> list[Target]:
    """The site's documents (and headings) the answer text links to, relative to its topic."""
    out = []
    for href in _MD_LINK.findall(answer):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or not parts.path:
            continue
        source = posixpath.normpath(posixpath.join(folder, unquote(parts.path))).lstrip("/")
        expect = source + (f"#{unquote(parts.fragment)}" if parts.fragment else "")
        try:
            out.append(inventory.resolve(expect))
        except ValueError:
            continue  # a link to something that is no document of the site: not a tie
    return out
