"""What a one-document edit rewrites: files and bytes a deploy would upload again.

For each site: build it (a fresh process, ``bench.speed.build_worker``, the ``hashing`` embedder:
the same files and vector bytes as a model of 384 dimensions, none of its time), rebuild it once
(the settling rebuild: nothing changes), take the xxh3 of every file, edit one document, rebuild,
and compare. A file is *rewritten* when it is new or its bytes changed (a build writes a file
only when its bytes change: ``fsutil.write_bytes_atomic``); the files the retired-file window
keeps one build longer (``.pipeline-retired``) are the old bytes, not counted, and not in the site's
bytes either. Bytes are counted outside ``_assets/`` (the browser's code, the same for every
site) and the site's dot files (build state, never served).

Sites: FastAPI's docs (``../shared/realdocs/fastapi``, 153 documents), the issue's edit: one
sentence appended to ``tutorial/first-steps.md``, its largest topic; the synthetic corpus
(``bench/synthetic.py``, nested topic folders) at each ``--sizes`` (one sentence of one section
of the middle document changed, ``synthetic.edit_section``); ``--flat``: the same documents in one
folder (``notes/``, as index_sizes' flat layout). Each site also gets a second edit: a section appended to the same document (one chunk
more, so the chunks after it in site order shift).

Each row: files and bytes rewritten, their share of the site's bytes, and the bytes by kind
(search index, spec pages, llms files, vectors, index files: ``index.json`` and ``_index/``,
keyword tables, the document's own files); ``report_section`` renders them for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import xxhash

from bench import FASTAPI, arguments, log, synthetic, write_json
from bench.speed import SPEED_DIR, remove_site
from bench.speed.builds import worker

HASHING = ("--embedder", "hashing")
FASTAPI_DOCUMENT = "tutorial/first-steps.md"
SENTENCE = "\nOne more sentence appended for the edit benchmark.\n"
SECTION = "\n## Appended section\n\nA new section appended for the edit benchmark, with a few words of its own.\n"
KINDS = ("index", "search", "spec", "llms", "vectors", "keywords", "document", "other")


def snapshot(site: Path) -> dict[str, tuple[int, str]]:
    """{path below the site: (size, xxh3 of the bytes)} of every file a reader can fetch but
    ``_assets/``: no dot file, no file the retired-file window keeps (it holds old bytes)."""
    retired = set()
    listed = site / ".pipeline-retired"
    if listed.is_file():
        retired = set(json.loads(listed.read_bytes()))
    out = {}
    for folder, dirs, files in os.walk(site):
        rel_folder = os.path.relpath(folder, site)
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (rel_folder == "." and d == "_assets")]
        for name in files:
            if name.startswith("."):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, site).replace(os.sep, "/")
            if rel in retired:
                continue
            with open(path, "rb") as handle:
                data = handle.read()
            out[rel] = (len(data), xxhash.xxh3_64_hexdigest(data))
    return out


def kind(rel: str, document: str) -> str:
    """Which part of the site a file belongs to (``document``: the edited source, site path)."""
    name = rel.rsplit("/", 1)[-1]
    stem = document.rsplit("/", 1)[-1].removesuffix(".md")
    folder = document.rsplit("/", 1)[0] + "/" if "/" in document else ""
    if rel.startswith("_search/"):
        return "search"
    if name == "_embeddings.bin" or (name.startswith("embeddings-") and name.endswith(".bin") and "/_index/" in f"/{rel}"):
        return "vectors"  # a topic's vector pages (siteformat/vectors.py)
    if name in ("llms.txt", "llms-full.txt", "sitemap.xml") or "/_llms/" in f"/{rel}":  # and their later pages
        return "llms"
    if name == "index.json" or "/_index/" in f"/{rel}":  # listing pages and document resources
        return "index"
    if name == "topic-spec.md" or "/_spec/" in f"/{rel}":
        return "spec"
    if rel.endswith("_keywords/words.md"):
        return "keywords"
    if rel == document or (rel.startswith(f"{folder}_chunks/{stem}") and (rel[len(f"{folder}_chunks/{stem}"):][:1] in "-.")):
        return "document"
    return "other"


def compare(before: dict, after: dict, document: str) -> dict:
    """What the edit rewrote (module docstring), by kind, and the biggest files."""
    total = sum(size for size, _ in after.values())
    changed = sorted(((after[rel][0], rel) for rel in after if before.get(rel, (None, None))[1] != after[rel][1]), reverse=True)
    by_kind = {k: {"files": 0, "bytes": 0} for k in KINDS}
    for size, rel in changed:
        entry = by_kind[kind(rel, document)]
        entry["files"] += 1
        entry["bytes"] += size
    rewritten = sum(size for size, _ in changed)
    return {
        "site_files": len(after), "site_bytes": total,
        "files": len(changed), "bytes": rewritten, "share": rewritten / total,
        "by_kind": by_kind, "largest": [[rel, size] for size, rel in changed[:12]],
    }


def measure(name: str, content: Path, document: str, edits: list[tuple[str, callable]], root: Path) -> dict:
    site, cache = root / "site", root / "cache"
    cold = worker(content, site, cache, *HASHING)
    log(f"  {name}: {cold['chunks']} chunks, cold {cold['build_seconds']:.1f} s")
    worker(content, site, cache, *HASHING)  # the settling rebuild: nothing changes
    rows = []
    for label, edit in edits:
        before = snapshot(site)
        path = content / document
        original = path.read_text(encoding="utf-8")
        edit(path)
        rebuilt = worker(content, site, cache, *HASHING)
        row = {"edit": label, "embedded": rebuilt["embedded"], "build_seconds": rebuilt["build_seconds"],
               **compare(before, snapshot(site), document)}
        log(f"  {name}, {label}: {row['files']} files, {row['bytes'] / 1e6:.2f} MB = {100 * row['share']:.2f} % "
            f"(index files {row['by_kind']['index']['bytes'] / 1e3:.1f} kB)")
        rows.append(row)
        path.write_text(original, encoding="utf-8")
        worker(content, site, cache, *HASHING)  # back to the built site (its retired window ends too)
        worker(content, site, cache, *HASHING)
    return {"site": name, "documents": len(list(content.rglob("*.md"))), "chunks": cold["chunks"], "document": document,
            "edits": rows}


def sentence(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + SENTENCE, encoding="utf-8")


def section(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + SECTION, encoding="utf-8")


def synthetic_site(work: Path, n: int, flat: bool) -> dict:
    root = work / f"edits-{'flat-' if flat else ''}{n}"
    if root.exists():
        shutil.rmtree(root)
    content = root / "content"
    synthetic.generate(content, n, folder="notes" if flat else None)
    documents = sorted(p.relative_to(content).as_posix() for p in content.rglob("*.md"))
    document = documents[len(documents) // 2]
    edits = [("one sentence changed", lambda p: synthetic.edit_section(p, 1)), ("a section appended", section)]
    try:
        return measure(f"synthetic {n:,} documents{', one folder' if flat else ''}", content, document, edits, root)
    finally:
        remove_site(root / "site")
        shutil.rmtree(root)  # 100k documents are a few GB of site and cache


def fastapi_site(work: Path, source: Path = FASTAPI) -> dict | None:
    if not (source / FASTAPI_DOCUMENT).is_file():
        log(f"  {source} is absent: FastAPI's row skipped")
        return None
    root = work / "edits-fastapi"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(source, root / "content")
    try:
        return measure("FastAPI's docs", root / "content", FASTAPI_DOCUMENT,
                       [("one sentence appended", sentence), ("a section appended", section)], root)
    finally:
        remove_site(root / "site")
        shutil.rmtree(root)


TARGETS = {"FastAPI's docs": 0.10, "synthetic 10,000 documents": 0.02}
"""Issue 30's targets: the share of a site's bytes (outside ``_assets/``) a one-document edit rewrites."""


def edit_targets(result: dict | None) -> list[tuple[str, str, str]]:
    """[(target, verdict, evidence)] of issue 30's edit targets (the first edit of each site: the
    issue's own on FastAPI's docs, one sentence of a middle document of the synthetic corpus)."""
    out = []
    sites = {s["site"]: s for s in (result or {}).get("sites", [])}
    for name, limit in TARGETS.items():
        target = f"a one-document edit rewrites ≤ {100 * limit:.0f} % of the site's bytes ({name}, outside `_assets/`)"
        site = sites.get(name)
        if not site:
            out.append((target, "not measured", "`python -m bench.speed.edits`"))
            continue
        row = site["edits"][0]
        verdict = "met" if row["share"] <= limit else "not met"
        out.append((target, verdict, (
            f"{row['edit']}: {row['files']} files, {row['bytes'] / 1e6:.2f} MB = {100 * row['share']:.2f} %, of which index "
            f"files {row['by_kind']['index']['bytes'] / 1000:,.1f} kB; "
            f"{site['edits'][1]['edit']}: {100 * site['edits'][1]['share']:.2f} %")))
    return out


def report_section(result: dict | None) -> str:
    """The BENCHMARKS.md section for a result of ``main``."""
    if not result:
        return "Not measured in this run (`python -m bench.speed.edits`).\n"
    lines = [
        "Files and bytes a one-document edit rewrites (new or changed bytes: what a deploy uploads again), as a share "
        "of the site's bytes outside `_assets/` (`python -m bench.speed.edits`; `hashing` embedder, 384 dimensions, "
        "each build a fresh process). Issue 30's targets: at most 10 % on FastAPI's docs, 2 % at 10,000 documents. "
        "index: the folder's listing pages (`index.json`, `_index/page-*.json`) and document resources (`_index/*.doc.json`).",
        "",
        "| site | documents | chunks | edit | files | MB rewritten | share | search | spec | llms | vectors | index |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for site in result["sites"]:
        for row in site["edits"]:
            kb = {k: f"{row['by_kind'][k]['bytes'] / 1000:,.0f} kB" for k in KINDS}
            lines.append(
                f"| {site['site']} | {site['documents']:,} | {site['chunks']:,} | {row['edit']} | {row['files']} | "
                f"{row['bytes'] / 1e6:.2f} | **{100 * row['share']:.2f} %** | "
                f"{kb['search']} | {kb['spec']} | {kb['llms']} | {kb['vectors']} | {kb['index']} |")
    for site in result["sites"]:
        row = site["edits"][0]
        largest = ", ".join(f"`{rel}` {size / 1000:,.0f} kB" for rel, size in row["largest"][:4])
        lines.append(f"\n{site['site']}, {row['edit']} (`{site['document']}`): the largest files rewritten: {largest}.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, SPEED_DIR / "edits.json", quick="FastAPI and 1,000 documents only")
    ap.add_argument("--sizes", default="10000,100000", help="synthetic sites, nested folders ('' for none)")
    ap.add_argument("--flat", default="10000", help="synthetic sites in one folder ('' for none)")
    ap.add_argument("--fastapi", type=Path, default=FASTAPI, help="FastAPI's docs folder (default: ../shared/realdocs/fastapi)")
    ap.add_argument("--no-fastapi", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    flat = [int(s) for s in args.flat.split(",") if s]
    if args.quick:
        sizes, flat = [1000], []
    work = args.out.parent / "edits-work"
    work.mkdir(parents=True, exist_ok=True)
    sites = [] if args.no_fastapi else [s for s in [fastapi_site(work, args.fastapi)] if s]
    sites += [synthetic_site(work, n, False) for n in sizes]
    sites += [synthetic_site(work, n, True) for n in flat]
    result = {"sites": sites}
    write_json(args.out, result)
    print(report_section(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
