"""A hybrid query with the static encoder in headless Chromium: bytes and requests, cold and warm, beside Pagefind.

    .venv/bin/python -m bench.encoder_page                     # FastAPI's docs and ~10k chunks
    .venv/bin/python -m bench.encoder_page --synthetic 2500 25000   # ~10k and ~100k chunks only
    # writes bench/.work/encoder_page.json

What a reader's browser fetches for one search through the JS client (``client.js``: ``openSite``
then ``site.search(q, {method: "hybrid", k: 10})``, the query embedded by the site's static encoder,
``staticencoder.js``): the library, the site's root ``index.json`` (``openSite`` reads it), the
search index, the vector shards, and the encoder's vocabulary and row shards. Not the search
page's own costs (its navigation, the excerpts of the shown results: ``bench.search_page``).
Sites: FastAPI's docs (the realdocs set's first ten questions) and ``bench/synthetic.py`` sites
(``search_bytes``' ten queries), built with the hashing embedder (a site's index and vector bytes
do not depend on the model) and given the default model's encoder files (``model_encoder``: the
test embedder's one-hot rows would gzip to nothing); served by ``pipeline serve`` (gzip), counted
at the server (headers + body). Per site, ``--repeats`` sessions of a cold query (a fresh page,
HTTP cache cleared) and nine warm ones (the same page), for ``hybrid`` and ``lexical`` (the same
page with the encoder off), and Pagefind's (``bench.search_page``: its cold query loads
``pagefind.js``, the wasm, its index and the first five results' data) on FastAPI and the
synthetic sites.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pagefind_eval  # noqa: E402
from tests import headless  # noqa: E402  (the page tests' Chromium set-up)
from bench import search_page as sp  # noqa: E402

WORK = Path(__file__).resolve().parent / ".work"
ENGINE_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>engine</title></head><body>
<script type="module">
import { openSite } from "./_assets/client.js";
window.engineQuery = async (q, method) => {
  window.site ??= await openSite(new URL("./", location.href));
  const hits = await window.site.search(q, { k: 10, method: method === "lexical" ? "hybrid" : method, staticEncoder: method !== "lexical" });
  return hits.map((h) => h.method);
};
document.body.dataset.ready = "true";
</script></body></html>
"""


def kind(path: str) -> str:
    if "/_search/encoder/" in path:
        return "encoder"
    if "/_assets/" in path or path.endswith(".html") or path.endswith("/"):
        return "code"
    return "data"


def session(d, server, qs: list[str], method: str) -> list[dict[str, Any]]:
    rows = []
    for i, q in enumerate(qs):
        if i == 0:
            sp.cold_start(d, server, server.url + "engine.html")
            sp.wait_ready(d)
        else:
            sp.take(server)
        t0 = d.execute_script("return performance.now()")
        methods = d.execute_async_script("const [q, m, done] = arguments; window.engineQuery(q, m).then(done, (e) => done(String(e)));", q, method)
        t1 = d.execute_script("return performance.now()")
        if isinstance(methods, str):
            raise RuntimeError(f"{method} query {q!r} failed: {methods}")
        fetched = sp.take(server)
        row = {"query": q, "cold": i == 0, "ms": t1 - t0, "hybrid": "hybrid" in methods, "hits": len(methods),
               "requests": len(fetched), "kb": sum(b for _, b in fetched) / 1000, "paths": [p for p, _ in fetched]}
        for k in ("code", "data", "encoder"):
            part = [b for p, b in fetched if kind(p) == k]
            row[f"{k}_requests"], row[f"{k}_kb"] = len(part), sum(part) / 1000
        rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "ms_median": statistics.median(r["ms"] for r in rows),
                           "hybrid_share": sum(r.get("hybrid", False) for r in rows) / len(rows)}
    for key in ("requests", "kb", "code_requests", "code_kb", "data_requests", "data_kb", "encoder_requests", "encoder_kb"):
        values = [r.get(key, 0) for r in rows]
        out[f"{key}_mean"], out[f"{key}_max"] = statistics.mean(values), max(values)
    return out


def model_encoder(site: Path) -> None:
    """Give ``site`` (built with the hashing embedder) the default model's static encoder files
    instead of the test embedder's (whose one-hot rows gzip to nothing), named for the site's
    vectors: the bytes and requests of a real site's encoder; the ranking is not measured here."""
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.staticfit import static_table
    from pipeline.search.index import build_search_index
    from pipeline.site.static_encoder import encoder_files

    entry, files = encoder_files(static_table(DEFAULT_MODEL))
    entry["model"] = json.loads((site / "_search" / "meta.json").read_text())["vectors"]["model"]
    build_search_index(site, encoder=(entry, files))


def measure_site(d, label: str, site: Path, content: Path, qs: list[str], repeats: int, pagefind_cmd) -> dict[str, Any]:
    model_encoder(site)
    (site / "engine.html").write_text(ENGINE_HTML, encoding="utf-8")
    meta = json.loads((site / "_search" / "meta.json").read_text())
    servers = {"ours": sp.serve(site)}
    if pagefind_cmd is not None:
        servers["pagefind"] = sp.serve(sp.pagefind_site(pagefind_cmd, content, site.parent / "pagefind-site"))
    rows: dict[str, list] = {}
    try:
        for rep in range(repeats):
            for method in ("hybrid", "lexical"):
                rows.setdefault(method, []).extend(session(d, servers["ours"], qs, method))
            if "pagefind" in servers:
                rows.setdefault("pagefind", []).extend(sp.pagefind_session(d, servers["pagefind"], qs))
                kw = [" ".join(pagefind_eval.keywords(q)) for q in qs]
                rows.setdefault("pagefind-keywords", []).extend(sp.pagefind_session(d, servers["pagefind"], kw))
            print(f"{label}: repeat {rep + 1} done", file=sys.stderr)
    finally:
        for server in servers.values():
            server.shutdown()
            server.server_close()
    assets = sum(p.stat().st_size for p in (site / "_assets").rglob("*") if p.is_file() and "/model/" not in p.as_posix())
    encoder = sum(p.stat().st_size for p in (site / "_search" / "encoder").rglob("*") if p.is_file())
    return {"site": label, "chunks": meta["chunks"], "queries": qs, "repeats": repeats, "assets_bytes": assets,
            "encoder_bytes": encoder, "encoder": {k: v for k, v in meta["encoder"].items() if k != "tokenizer"},
            "summary": {name: {"cold": summary([r for r in rs if r["cold"]]), "warm": summary([r for r in rs if not r["cold"]])}
                        for name, rs in rows.items()},
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, nargs="*", default=[2500], metavar="DOCS",
                        help="synthetic sites of these many documents (2500: ~10k chunks, 25000: ~100k)")
    parser.add_argument("--no-fastapi", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-pagefind", action="store_true")
    parser.add_argument("--out", type=Path, default=WORK / "encoder_page.json")
    args = parser.parse_args(argv)
    from bench import search_bytes, synthetic

    results = []
    with tempfile.TemporaryDirectory(prefix="encoder-page-") as tmp:
        tmp_path = Path(tmp)
        try:
            d = headless.driver(tmp_path / "profile")
        except headless.Unavailable as why:
            print(f"encoder_page skipped: {why}", file=sys.stderr)
            args.out.write_text(json.dumps({"skipped": str(why)}, indent=1))
            return 0
        try:
            cmd = None
            if not args.no_pagefind:
                try:
                    cmd = pagefind_eval.pagefind_command()
                except (headless.Unavailable, RuntimeError) as why:
                    print(f"Pagefind skipped: {why}", file=sys.stderr)
            fastapi = next((p for p in (sp.FASTAPI, Path("/work/shared/realdocs/fastapi")) if p.is_dir()), sp.FASTAPI)
            plans = [] if args.no_fastapi else [("fastapi", fastapi, sp.questions())]
            plans += [(f"synthetic ({n} documents)", n, list(search_bytes.QUERIES)) for n in args.synthetic]
            for i, (label, source, qs) in enumerate(plans):
                root = tmp_path / f"site-{i}"
                if isinstance(source, int):
                    synthetic.generate(root / "source", source)
                    source = root / "source"
                site, chunks, seconds = search_bytes.build_site(0, root, source)
                print(f"{label}: {chunks} chunks built in {seconds:.0f} s", file=sys.stderr)
                results.append(measure_site(d, label, site, root / "content", qs, args.repeats, cmd))
        finally:
            d.quit()
    out = {"pagefind": pagefind_eval.pagefind_version(cmd) if cmd else None, "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(bytes_table(out))
    return 0


def bytes_table(result: dict) -> str:
    """Markdown: per site and client, cold and warm: requests and kB (all / code / data / encoder) and ms."""
    lines = ["| site | chunks | client | query | requests: all / code / index data / encoder (mean, max all) "
             "| kB over the wire: all / code / index data / encoder (mean, max all) | ms (median) | hybrid |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["results"]:
        for name, s in r["summary"].items():
            for k in ("cold", "warm"):
                x = s[k]
                hybrid = f"{100 * x['hybrid_share']:.0f} %" if name in ("hybrid", "lexical") else ""
                lines.append(
                    f"| {r['site']} | {r['chunks']:,} | {name} | {k} "
                    f"| {x['requests_mean']:.1f} / {x['code_requests_mean']:.1f} / {x['data_requests_mean']:.1f} / {x['encoder_requests_mean']:.1f} (max {x['requests_max']}) "
                    f"| {x['kb_mean']:.1f} / {x['code_kb_mean']:.1f} / {x['data_kb_mean']:.1f} / {x['encoder_kb_mean']:.1f} (max {x['kb_max']:.1f}) "
                    f"| {x['ms_median']:.0f} | {hybrid} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
