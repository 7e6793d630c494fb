"""Index files at scale (issue 30): the bytes of every index file a reader fetches, and the
requests for "sample 3 chunks of one document", on FastAPI's docs and the synthetic corpus.

Sites: FastAPI's docs (``../shared/realdocs/fastapi``, ~150 documents, the default model) and
the first N documents of ``bench/synthetic.py``, ``nested`` (its 30 folders, depth 1-3) and
``flat`` (every document in one folder, as an Obsidian-style vault), built with the ``hashing``
embedder (the index files' bytes do not depend on the model: one float per similarity, the same
related links and keywords). Each build is a fresh ``pipeline build`` process (``cli_build``).
Rows of another code kept in the result file (``baseline``: index format 1, measured once with
``--code`` of ``git show e62fb1e:bench/index_sizes.py``) are shown beside this code's.

Per site, over the published files (``_search/`` excluded: judged by bytes per query, section
"Search"): every ``index.json`` (count, largest, median bytes), the later listing pages, the
document resources (first pages: largest, median; every page: largest), and the largest other
JSON a reader may fetch (manifests, schemas). Requests for "sample 3 chunks of one document",
counted on the files a reader fetches (the site read from disk, so no server's noise): the seed
flow (the topic's ``index.json``, the document's ``sample``, its chunks) for the largest topic's
first document and for its last (listed on the last page: reached through the templated
``document`` link, then its resource), and the Python client's ``sample(topic, 3,
document=...)`` from a cold ``Site`` (it always reads the resource), with the JSON bytes each
flow reads.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from pathlib import Path

from bench import FASTAPI, WORK, arguments, log, synthetic, write_json
from bench.speed import cli_build, remove_site

BUDGET = 32 * 1024
FLAT_FOLDER = "notes"


def _stats(sizes: list[int]) -> dict:
    return {"count": len(sizes), "largest": max(sizes, default=0), "median": statistics.median(sizes) if sizes else 0,
            "over_budget": sum(s > BUDGET for s in sizes), "bytes": sum(sizes)}


def file_sizes(site: Path) -> dict:
    """Bytes of the index files and of the other JSON a reader may fetch (``_search/`` and the
    build's dot files excluded)."""
    index, pages, first, every, other = [], [], [], [], []
    largest_other = ("", 0)
    for path in site.rglob("*.json"):
        rel = path.relative_to(site)
        if rel.parts[0] == "_search" or rel.name.startswith("."):
            continue
        size = path.stat().st_size
        if rel.name == "index.json" and "_chunks" not in rel.parts:
            index.append(size)
        elif rel.parent.name == "_index" and rel.name.startswith("page-"):
            pages.append(size)
        elif rel.parent.name == "_index":
            every.append(size)
            if rel.name.endswith(".doc.json"):
                first.append(size)
        else:
            other.append(size)
            if size > largest_other[1]:
                largest_other = (rel.as_posix(), size)
    return {"index_json": _stats(index), "listing_pages": _stats(pages), "documents_first_page": _stats(first),
            "documents_every_page": _stats(every), "other_json": {**_stats(other), "largest_file": largest_other[0]}}


class Reader:
    """Files of a built site read as a reader fetches them: counted, with their bytes."""

    def __init__(self, site: Path):
        self.site, self.requests, self.json_bytes = site, 0, 0

    def json(self, rel: str) -> dict:
        data = (self.site / rel).read_bytes()
        self.requests += 1
        self.json_bytes += len(data)
        return json.loads(data)

    def chunk(self, rel: str) -> None:
        (self.site / rel).read_bytes()
        self.requests += 1


def _rel(href: str, base: str = "/") -> str:
    from urllib.parse import unquote

    return unquote(href[len(base):] if href.startswith(base) else href)


def largest_topic(site: Path) -> tuple[str, int]:
    """(the folder listing the most documents, how many), from each ``index.json``'s count."""
    best = ("", -1)
    for path in site.rglob("index.json"):
        rel = path.relative_to(site)
        if any(part.startswith(("_", ".")) for part in rel.parts[:-1]):
            continue
        doc = json.loads(path.read_bytes())
        count = doc["documents"]
        folder = rel.parent.as_posix()
        if count > best[1]:
            best = ("" if folder == "." else folder, count)
    return best


def seed_flow(site: Path, topic: str, which: str) -> dict:
    """Requests and JSON bytes of "sample 3 chunks of one document" (the ``first`` or ``last``
    document the topic lists) as the seed's flow reads them."""
    reader = Reader(site)
    prefix = f"{topic}/" if topic else ""
    first = reader.json(f"{prefix}index.json")
    if which == "first":
        entry = first["_embedded"]["documents"][0]
        for s in entry["sample"]:
            reader.chunk(prefix + _rel(s["href"], ""))
        return {"requests": reader.requests, "json_bytes": reader.json_bytes, "round_trips": 2}
    pages = first["pages"]
    last = first if pages == 1 else json.loads((site / _rel(first["_links"]["last"]["href"])).read_bytes())
    key = last["_embedded"]["documents"][-1]["key"]
    from urllib.parse import quote

    resource = reader.json(_rel(first["_links"]["document"]["href"].replace("{key}", quote(key, safe=""))))
    by_index = {item["index"]: item for item in resource["items"]}
    for i in [*resource["stripe_order"], 0][:3]:
        reader.chunk(prefix + _rel(by_index[i]["href"], ""))
    return {"requests": reader.requests, "json_bytes": reader.json_bytes, "round_trips": 3, "key": key}


def client_flow(site: Path, topic: str) -> dict:
    """The Python client's ``sample(topic, 3, document=<last listed>)`` from a cold ``Site`` (after its root check)."""
    from pipeline.client import open_site

    opened = open_site(site).check()
    name = opened.listing(topic)[-1].name
    before = opened.transport.requests
    chunks = opened.sample(topic, 3, document=name)
    return {"requests": opened.transport.requests - before, "chunks": len(chunks)}


def measure(name: str, content: Path, root: Path, embedder: str, cache: Path) -> dict:
    site = root / "site"
    remove_site(site)
    seconds = cli_build(content, site, cache, "--embedder", embedder)
    topic, documents = largest_topic(site)
    row = {
        "site": name, "embedder": embedder, "code": "this", "build_seconds": round(seconds, 1),
        "documents": sum(1 for _ in content.rglob("*.md")), "largest_topic": topic, "largest_topic_documents": documents,
        "files": file_sizes(site),
        "sample_first": seed_flow(site, topic, "first"), "sample_last": seed_flow(site, topic, "last"),
        "client_sample": client_flow(site, topic),
    }
    log(f"  {name}: {row['documents']} documents, index.json largest {row['files']['index_json']['largest']:,} B, "
        f"document resources largest {row['files']['documents_every_page']['largest']:,} B, "
        f"sample (last document) {row['sample_last']['requests']} requests, {seconds:.0f} s")
    remove_site(site)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, WORK / "index_sizes.json", quick="FastAPI with hashing, 1,000 and 3,000 documents")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--layouts", default="nested,flat")
    ap.add_argument("--fastapi", type=Path, default=FASTAPI)
    ap.add_argument("--fastapi-embedder", default="minilm")
    ap.add_argument("--no-fastapi", action="store_true", help="only the synthetic sizes (e.g. 100k alone)")
    args = ap.parse_args(argv)
    sizes = [1000, 3000] if args.quick else [int(s) for s in args.sizes.split(",") if s]
    embedder = "hashing" if args.quick else args.fastapi_embedder
    work = WORK / "index-sizes"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    if args.no_fastapi:
        pass
    elif args.fastapi.is_dir():
        rows.append(measure("fastapi", args.fastapi, work / "fastapi", embedder, work / f"cache-{embedder}"))
    else:
        log(f"  {args.fastapi}: not found, FastAPI's row skipped")
    for n in sizes:
        for layout in args.layouts.split(","):
            root = work / f"{layout}-{n}"
            content = root / "content"
            synthetic.generate(content, n, folder=FLAT_FOLDER if layout == "flat" else None)
            rows.append(measure(f"synthetic {layout}", content, root, "hashing", work / "cache-hashing"))
            shutil.rmtree(content)
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    result = {"budget": BUDGET, **previous, "rows": merged(previous.get("rows") or [], rows)}  # a kept baseline stays
    write_json(args.out, result)
    print(report_section(result))
    return 0


def merged(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` rows with those of ``new`` added, a row of the same site, size and embedder
    replaced (runs of separate sizes make one table), ordered by site and size."""
    key = lambda r: (r["site"], r["documents"], r["embedder"])  # noqa: E731
    rows = {key(r): r for r in old}
    rows.update((key(r), r) for r in new)
    return sorted(rows.values(), key=lambda r: (r["site"] != "fastapi", r["documents"], r["site"]))


def _kb(n: float) -> str:
    return f"{n / 1000:,.1f} kB"


def report_section(result: dict | None) -> str:
    """The BENCHMARKS.md section for a result of ``main``."""
    if not result or not result.get("rows"):
        return "Not measured in this run (`python -m bench.index_sizes`).\n"
    lines = [
        f"Every index file a reader fetches, and \"sample 3 chunks of one document\" (issue 30; budget "
        f"{result['budget'] // 1024} kB a file). Synthetic sites with the `hashing` embedder, FastAPI's docs with the "
        "embedder named; `_search/` is judged by bytes per query (\"Search\"). Requests: the seed flow on the largest "
        "folder's first document (its `sample` in `index.json`) and last (through the templated `document` link and "
        "its resource), and the Python client's `sample(topic, 3, document=last)`, which always reads the resource.",
        "",
        "| site | code | documents | largest folder | index.json largest / median | listing pages | document resources largest / median (first page) | other JSON largest | sample: first / last document (requests, JSON read) | client |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, rows in (("this", result["rows"]), ("before", result.get("baseline") or [])):
        for r in rows:
            f = r["files"]
            client = r.get("client_sample")
            lines.append(
                f"| {r['site']} ({r['embedder']}) | {label} | {r['documents']:,} | {r['largest_topic_documents']:,} | "
                f"{_kb(f['index_json']['largest'])} / {_kb(f['index_json']['median'])} | "
                f"{f['listing_pages']['count']:,} (largest {_kb(f['listing_pages']['largest'])}) | "
                f"{_kb(f['documents_every_page']['largest'])} / {_kb(f['documents_first_page']['median'])} | "
                f"{_kb(f['other_json']['largest'])} | "
                f"{r['sample_first']['requests']}, {_kb(r['sample_first']['json_bytes'])} / "
                f"{r['sample_last']['requests']}, {_kb(r['sample_last']['json_bytes'])} | "
                f"{client['requests'] if client else '–'} |"
            )
    over = [(r["site"], r["documents"], k, r["files"][k]["over_budget"]) for r in result["rows"]
            for k in ("index_json", "listing_pages", "documents_every_page", "other_json") if r["files"][k]["over_budget"]]
    lines.append("")
    lines.append("Files over the budget (this code): " + (", ".join(f"{s} {d:,}: {n} {k}" for s, d, k, n in over) or "none") + ".")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
