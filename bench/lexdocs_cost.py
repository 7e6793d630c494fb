"""What "the vectors of the lexical hits' documents" would fetch on a built site, beside today's
topic files (docs/DECISIONS.md, "What does recover it"; the quality side is
``bench/search_eval.py``'s ``hybrid-score-lexdocs<N>``).

    .venv/bin/python -m bench.lexdocs_cost SITE             # search_bytes' ten queries
    .venv/bin/python -m bench.lexdocs_cost SITE --realdocs  # the realdocs set's first ten questions

SITE: a built site whose ``records.json`` holds the records (up to ~11,000 chunks), e.g. one
built as ``bench/search_bytes.py`` builds (hashing embedder). Per query: the documents of the
first lexical hits in hit order, up to ``--documents`` and ``VECTOR_ROWS`` rows (the first
always), their rows and the row ranges they make (adjacent documents merged: one Range request
each), against today's ``vector_topics`` (rows and files). Bytes: 388 a row (384 int8 values
and a float32 scale), no gzip (``pipeline serve`` does not compress ``.bin``).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROW_BYTES = 388


def document_spans(index, lexical: list[tuple[int, int]], documents: int, rows_max: int) -> list[tuple[int, int]]:
    """[(first chunk number, end)] of the documents of the first lexical hits (rule above)."""
    spans: list[tuple[int, int]] = []
    seen, taken = set(), 0
    for number, _ in lexical:
        record = index.record(number)
        key = (record["topic"], record["document"])
        if key in seen:
            continue
        seen.add(key)
        first = end = number - record["index"]  # a document's chunks are consecutive numbers
        while end < index.meta["chunks"] and (index.record(end)["topic"], index.record(end)["document"]) == key:
            end += 1
        if len(spans) == documents or (spans and taken + end - first > rows_max):
            break
        spans.append((first, end))
        taken += end - first
    return spans


def ranges(spans: list[tuple[int, int]]) -> int:
    """Row ranges the spans make once adjacent ones are merged."""
    merged: list[list[int]] = []
    for a, b in sorted(spans):
        if merged and merged[-1][1] == a:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return len(merged)


def main(argv=None) -> None:
    from bench.search_bytes import QUERIES
    from pipeline.client import open_site
    from pipeline.client.searchindex import VECTOR_ROWS, Filters
    from pipeline.embedding.hashing import HashingEmbedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--realdocs", action="store_true", help="the realdocs set's first ten questions")
    parser.add_argument("--documents", type=int, default=5)
    args = parser.parse_args(argv)
    queries = QUERIES
    if args.realdocs:
        with open(Path(__file__).resolve().parent / "realdocs_set" / "questions.csv", newline="", encoding="utf-8") as fh:
            queries = [row["question"] for row in csv.DictReader(fh)][:10]
    index = open_site(args.site).search_index(records=True)
    if index is None or not index.records_file():
        raise SystemExit(f"{args.site}: no _search/records.json holding the records")
    embedder = HashingEmbedder()
    rows, requests, today_rows, today_files = [], [], [], []
    for query in queries:
        spans = document_spans(index, index.lexical(query, Filters()), args.documents, VECTOR_ROWS)
        rows.append(sum(b - a for a, b in spans))
        requests.append(ranges(spans))
        topics = index.vector_topics(embedder.embed([query])[0], Filters())
        today_rows.append(sum(t["count"] for t in topics))
        today_files.append(len(topics))
    for name, r, q in ((f"documents of the lexical hits (≤ {args.documents})", rows, requests), ("today: closest topics", today_rows, today_files)):
        print(f"{name}: rows mean {statistics.mean(r):.0f} / max {max(r)} (~{statistics.mean(r) * ROW_BYTES / 1000:.0f} / "
              f"{max(r) * ROW_BYTES / 1000:.0f} kB); requests mean {statistics.mean(q):.1f} / max {max(q)}")


if __name__ == "__main__":
    main()
