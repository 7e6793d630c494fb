"""Turn ``questions.txt`` into ``questions.csv`` (the format of Chroma's ``questions_df.csv``).

Columns: ``question``, ``references`` (a JSON list of ``{"content", "start_index", "end_index"}``,
Python str offsets into the corpus file, end-exclusive), ``corpus_id`` (the corpus file's stem).

Each quoted passage in ``questions.txt`` is matched against its document with any run of
whitespace in the quote matching any run of whitespace in the document; it must match exactly
once. The reference stored is the document's own text at the match, so
``corpus[start:end] == content`` holds by construction (``check`` re-verifies it).

    .venv/bin/python bench/markdown_set/build_questions.py          # rebuild questions.csv
    .venv/bin/python bench/markdown_set/build_questions.py --check  # verify it, change nothing
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPORA = HERE / "corpora"
SOURCE = HERE / "questions.txt"
OUTPUT = HERE / "questions.csv"


@dataclass
class Item:
    corpus_id: str
    question: str
    quotes: list[str] = field(default_factory=list)
    line: int = 0


def parse(text: str) -> list[Item]:
    items: list[Item] = []
    corpus = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("@ "):
            corpus = line[2:].strip()
        elif line.startswith("Q: "):
            if corpus is None:
                raise ValueError(f"line {n}: question before any '@ corpus' line")
            items.append(Item(corpus, line[3:].strip(), line=n))
        elif line.startswith("> "):
            if not items:
                raise ValueError(f"line {n}: passage before any question")
            items[-1].quotes.append(line[2:].strip())
        else:
            raise ValueError(f"line {n}: cannot parse {line[:60]!r}")
    for item in items:
        if not item.quotes:
            raise ValueError(f"line {item.line}: question without a passage: {item.question}")
    return items


def locate(corpus: str, quote: str) -> tuple[int, int]:
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    matches = [m.span() for m in re.finditer(pattern, corpus)]
    if len(matches) != 1:
        raise ValueError(f"passage found {len(matches)} times (need exactly 1): {quote[:80]!r}")
    return matches[0]


def load_corpora() -> dict[str, str]:
    # Read as the harness does: UTF-8, universal newlines (none of the files has '\r').
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(CORPORA.glob("*.md"))}


def build() -> str:
    corpora = load_corpora()
    items = parse(SOURCE.read_text(encoding="utf-8"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["question", "references", "corpus_id"])
    errors = []
    for item in items:
        if item.corpus_id not in corpora:
            errors.append(f"line {item.line}: unknown corpus {item.corpus_id}")
            continue
        text = corpora[item.corpus_id]
        refs = []
        for quote in item.quotes:
            try:
                start, end = locate(text, quote)
            except ValueError as exc:
                errors.append(f"line {item.line} ({item.corpus_id}): {exc}")
                continue
            refs.append({"content": text[start:end], "start_index": start, "end_index": end})
        refs.sort(key=lambda r: r["start_index"])
        for a, b in zip(refs, refs[1:]):
            if a["end_index"] > b["start_index"]:
                errors.append(f"line {item.line}: overlapping passages")
        writer.writerow([item.question, json.dumps(refs, ensure_ascii=False), item.corpus_id])
    if errors:
        raise ValueError("\n".join(errors))
    return out.getvalue()


def check(path: Path = OUTPUT) -> int:
    """Verify every reference of ``path`` by offset; return the number of questions."""
    corpora = load_corpora()
    n = 0
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            text = corpora[row["corpus_id"]]
            for ref in json.loads(row["references"]):
                if text[ref["start_index"] : ref["end_index"]] != ref["content"]:
                    raise ValueError(f"offset mismatch in {row['corpus_id']}: {ref['content'][:60]!r}")
            n += 1
    return n


def main(argv: list[str]) -> int:
    if "--check" in argv:
        fresh = build()
        if OUTPUT.read_text(encoding="utf-8") != fresh:
            print("questions.csv is stale: rebuild it", file=sys.stderr)
            return 1
        print(f"{check()} questions, every reference verified by offset")
        return 0
    OUTPUT.write_text(build(), encoding="utf-8")
    print(f"wrote {OUTPUT} ({check()} questions, every reference verified by offset)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
