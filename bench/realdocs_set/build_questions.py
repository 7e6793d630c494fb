"""Build the realdocs question set's ``questions.csv`` (Chroma's format) from ``questions_source.json``.

How the set was made (before any method was run on it): 48 questions were written by reading
16 documents of ``../shared/realdocs`` (FastAPI and MkDocs docs), phrased as a reader would ask
(paraphrases, not the document's words where avoidable), each with one verbatim gold quote: the
sentence(s) that answer it (``questions_source.json``). Corpora are every markdown file of both
trees except MkDocs' release notes (long, and no question is about it): the other documents are
distractors. Corpus id = path with ``/`` replaced by ``__``. A quote must occur exactly once in
its document; this script stops otherwise. The corpora are read from the realdocs tree at run
time (``load_corpora``), not copied into the repository.

    .venv/bin/python bench/realdocs_set/build_questions.py   # REALDOCS_DIR overrides the source
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from bench import shared

HERE = Path(__file__).resolve().parent
SOURCE = Path(os.environ.get("REALDOCS_DIR") or shared("realdocs"))
SKIP = {"mkdocs/about/release-notes.md"}


def corpus_id(rel: str) -> str:
    return rel[:-3].replace("/", "__")


def load_corpora(source: Path = SOURCE) -> dict[str, str]:
    """{document path below the realdocs root: text} of every corpus of the set."""
    texts = {}
    for path in sorted(source.rglob("*.md")):
        rel = path.relative_to(source).as_posix()
        if rel not in SKIP and rel != "README.md":
            texts[rel] = path.read_text(encoding="utf-8")
    return texts


def main() -> None:
    texts = load_corpora()
    rows = []
    for item in json.loads((HERE / "questions_source.json").read_text(encoding="utf-8")):
        text = texts[item["doc"]]
        start = text.find(item["quote"])
        if start < 0 or text.find(item["quote"], start + 1) >= 0:
            raise SystemExit(f"quote not found exactly once in {item['doc']}: {item['quote'][:60]!r}")
        end = start + len(item["quote"])
        refs = [{"content": item["quote"], "start_index": start, "end_index": end}]
        rows.append({"question": item["q"], "references": json.dumps(refs, ensure_ascii=False), "corpus_id": corpus_id(item["doc"])})
    with open(HERE / "questions.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["question", "references", "corpus_id"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(texts)} corpora, {len(rows)} questions")


if __name__ == "__main__":
    main()
