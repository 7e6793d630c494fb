"""Bytes and requests per search query, cold and warm, on synthetic sites served with gzip.

    .venv/bin/python -m bench.search_bytes --docs 250 2500     # ~1k and ~10k chunks

For each size: generate ``bench/synthetic.py``'s corpus, build it with the hashing embedder
(384 dimensions: the same vector bytes as MiniLM), serve it with ``pipeline serve`` (gzip on),
then run the queries with the Python client: cold (a new ``Site`` per query: every file
fetched again; a search reads no root index.json) and warm (one ``Site`` that answered the earlier queries: the 2nd
to 10th query of a session). Counted: HTTP
requests and body bytes over the wire (``HttpTransport.bytes``, gzip-compressed when served
so). Methods: ``lexical`` and ``hybrid`` (the default vector rule since ``_search/`` version 4: the
vector shards of the first lexical hits' documents, within the clients' default request budget,
and again with no cap; an older
result file's rows say ``vector_topics``: 1 or at most 3 topics within ``VECTOR_ROWS`` rows);
both again scoped to one topic (``topic=``, the site's
largest topic: the worst case for its segments, or for its own term shards and record blocks when
it is too big for them; ``--bundle-postings N`` re-indexes the site with that threshold, so a
10k-chunk site shows the big-topic path). Also the old path
(``method="embedding"``: every index.json and every ``_embeddings.bin``) for comparison.
Writes ``bench/.work/search_bytes.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import synthetic  # noqa: E402
from bench.speed import build_in_process  # noqa: E402

QUERIES = [
    "how do I configure the cache timeout",
    "retry policy for failed webhooks",
    "rotate the signing key",
    "backup schedule and restore",
    "deploy containers to the cloud",
    "limit requests per token",
    "what does the scheduler do when a worker fails",
    "set the log level",
    "migrate the database schema",
    "authentication with tokens",
]
WORK = Path(__file__).resolve().parent / ".work"


def build_site(n_docs: int, root: Path, source: Path | None = None) -> tuple[Path, int, float]:
    import shutil

    content = root / "content"
    if source is not None:
        shutil.copytree(source, content)
    else:
        synthetic.generate(content, n_docs)
    site = root / "site"
    t0 = time.perf_counter()
    report = build_in_process(content, site, root / "cache", title="synthetic")
    return site, report.chunk.chunks, time.perf_counter() - t0


def measure(url: str, method: str, vector_topics: int | None, *, cold: bool, queries: list[str] = QUERIES,
            topic: str | None = None, request_budget: int | None = None) -> dict:
    from pipeline.client import searchindex, searchplan
    from pipeline.client.transport import HttpTransport

    if vector_topics is not None:
        searchplan.VECTOR_TOPICS = vector_topics  # read there when a query runs (whole_topics)
        searchindex.indexed_search.__kwdefaults__["vector_topics"] = vector_topics
    fetched: list[str] = []
    get = HttpTransport.get
    # patched on the class, not the instance: a wrapper stored on a transport would keep it (and its
    # kept-alive socket) alive in a reference cycle, and the server's shutdown would wait for it
    HttpTransport.get = lambda self, rel: fetched.append(rel) or get(self, rel)
    try:
        rows, site = _run(url, method, queries, cold, topic, request_budget)
    finally:
        HttpTransport.get = get
    foreign: list[str] = []
    if topic is not None:  # files a topic-scoped query should not need: site-wide ones, other topics' data
        from pipeline.search.index import listed_spans

        meta = site.search_index().meta
        spans = {f"_search/{rel}": span for rel, span in listed_spans(meta).items()}
        ranges = [(t["start"], t["start"] + t["count"]) for t in meta["topics"] if t["id"] == topic or t["id"].startswith(topic + "/")]
        inside = lambda r: (r == "_search/meta.json" or (r.endswith("_embeddings.bin") and r.startswith(f"{topic}/"))  # noqa: E731
                            or (spans.get(r) is not None and any(a <= spans[r][0] and spans[r][1] <= b for a, b in ranges)))
        foreign = [r for r in fetched if not inside(r)]
    return {
        "outside_topic_files": len(foreign),
        "requests_mean": statistics.mean(r for r, _, _ in rows),
        "requests_max": max(r for r, _, _ in rows),
        "kb_mean": statistics.mean(b for _, b, _ in rows) / 1000,
        "kb_max": max(b for _, b, _ in rows) / 1000,
        "ms_median": 1000 * statistics.median(t for _, _, t in rows),
    }


def _run(url: str, method: str, queries: list[str], cold: bool, topic: str | None, request_budget: int | None = None):
    """[(requests, bytes, seconds)] per measured query, and the last ``Site``."""
    from pipeline.client import open_site
    from pipeline.embedding.hashing import HashingEmbedder

    embedder = HashingEmbedder()
    rows = []
    site = None
    for position, q in enumerate(queries):
        if cold or site is None:
            site = open_site(url)
        if not cold and position == 0:
            site.search(q, 5, method=method, embedder=embedder, topic=topic, request_budget=request_budget)  # warm: one Site that has answered the earlier queries
            continue
        # cold: everything since open_site (which reads the root index.json only when something needs it)
        r0, b0 = (0, 0) if cold else (site.transport.requests, site.transport.bytes)
        t0 = time.perf_counter()
        site.search(q, 5, method=method, embedder=embedder, topic=topic, request_budget=request_budget)
        rows.append((site.transport.requests - r0, site.transport.bytes - b0, time.perf_counter() - t0))
    return rows, site


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", nargs="+", type=int, default=[250, 2500])
    parser.add_argument("--out", type=Path, default=WORK / "search_bytes.json")
    parser.add_argument("--bundle-postings", type=int, default=None,
                        help="re-index each site with this segment threshold (postings): its bigger topics get their own term shards")
    parser.add_argument("--content", type=Path, default=None,
                        help="build this content tree instead of synthetic ones (queries: the realdocs set's first ten)")
    args = parser.parse_args(argv)
    from pipeline.serve import make_server

    results = []
    queries = QUERIES
    if args.content is not None:
        import csv

        with open(Path(__file__).resolve().parent / "realdocs_set" / "questions.csv", newline="", encoding="utf-8") as fh:
            queries = [row["question"] for row in csv.DictReader(fh)][:10]
    for n in ([0] if args.content is not None else args.docs):
        with tempfile.TemporaryDirectory() as tmp:
            site, chunks, seconds = build_site(n, Path(tmp), args.content)
            if args.bundle_postings is not None:
                from pipeline.search.index import build_search_index

                build_search_index(site, bundle_postings=args.bundle_postings)
            search_bytes = sum(p.stat().st_size for p in (site / "_search").rglob("*") if p.is_file())
            server = make_server(site, host="127.0.0.1", port=0, log_requests=False)
            thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            thread.start()
            meta = json.loads((site / "_search" / "meta.json").read_text())
            largest = max(meta["topics"], key=lambda t: t["count"])["id"]
            try:
                from pipeline.client.searchindex import REQUEST_BUDGET

                default = REQUEST_BUDGET
                for method, topics, scope, budget in [("lexical", None, None, default), ("hybrid", 3, None, default), ("hybrid", 3, None, None),
                                                      ("lexical", None, largest, default), ("hybrid", 3, largest, default),
                                                      ("embedding", None, None, default)]:
                    # hybrid: the clients' default (the lexical hits' documents' vector shards
                    # within REQUEST_BUDGET requests; 3: the closest topics' files for a query
                    # without lexical hits), and without the cap (request_budget None)
                    for cold in (True, False):
                        row = {"docs": n, "chunks": chunks, "build_s": seconds, "search_dir_kb": search_bytes / 1000,
                               "method": method, "vector_topics": topics, "cold": cold, "topic": scope,
                               "vector_rule": "lexdocs" if method == "hybrid" else None, "request_budget": budget,
                               "budget_default": budget == default, "bundle_postings": args.bundle_postings}
                        row.update(measure(server.url, method, topics, cold=cold, queries=queries, topic=scope, request_budget=budget))
                        results.append(row)
                        print(json.dumps(row), file=sys.stderr)
            finally:
                server.shutdown()
                server.server_close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(bytes_table(results))


def bytes_table(results: list[dict]) -> str:
    """The markdown table of ``results`` (also used by ``bench/reporting/sections.py``)."""
    lines = ["| chunks | method | cold/warm | requests (mean / max) | kB over the wire (mean / max) | ms (median) |"]
    lines.append("|---|---|---|---|---|---|")
    for r in results:
        if r.get("topic"):
            name = f"{r['method']}, scoped to topic `{r['topic']}`"
            if r.get("bundle_postings") is not None:
                name += f" (segments only up to {r['bundle_postings']:,} postings)"
        else:
            name = r["method"] + ({1: ", 1 vector topic", 3: " (default: ≤ 3 vector topics, ≤ 600 rows)"}.get(r["vector_topics"], ""))
            if r.get("vector_rule") == "lexdocs" and r.get("budget_default"):
                name = f"{r['method']} (default: vector shards of the lexical hits' ≤ 5 documents within {r['request_budget']} requests)"
            elif r.get("vector_rule") == "lexdocs" and "budget_default" in r and not r.get("request_budget"):
                name = f"{r['method']}, no cap (`request_budget=None`: every vector shard of the lexical hits' ≤ 5 documents)"
            elif r.get("vector_rule") == "lexdocs" and r.get("request_budget"):
                name = f"{r['method']}, `request_budget={r['request_budget']}` (vector shards of the lexical hits' ≤ 5 documents within {r['request_budget']} requests)"
            elif r.get("vector_rule") == "lexdocs":
                name = f"{r['method']} (default: vector shards of the lexical hits' ≤ 5 documents)"
        lines.append(f"| {r['chunks']:,} | {name} | {'cold' if r['cold'] else 'warm'} | {r['requests_mean']:.1f} / {r['requests_max']} "
                     f"| {r['kb_mean']:.1f} / {r['kb_max']:.1f} | {r['ms_median']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
