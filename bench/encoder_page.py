"""A hybrid query with the static encoder in headless Chromium: bytes and requests, cold and warm, beside Pagefind.

    .venv/bin/python -m bench.encoder_page                     # FastAPI's docs and ~10k chunks
    .venv/bin/python -m bench.encoder_page --synthetic 2500 25000   # ~10k and ~100k chunks only
    # writes bench/.work/encoder_page.json

What a reader's browser fetches for one search through the JS client (``client.js`` bundled into
one file by the build's esbuild, as the search page ships its code: ``openSite``
then ``site.search(q, {method: "hybrid", k: 10})``, the query embedded by the site's static encoder,
``staticencoder.js``): the library, the site's root ``index.json`` (``openSite`` reads it), the
search index, the vector shards, and the encoder's vocabulary and row shards. Not the search
page's own costs (its navigation, the excerpts of the shown results).
Sites: FastAPI's docs (the realdocs set's first ten questions) and ``bench/synthetic.py`` sites
(its ten ``QUERIES``), built with the hashing embedder (a site's index and vector bytes do not
depend on the model) and given the default model's encoder files (``model_encoder``: the test
embedder's one-hot rows would gzip to nothing); served by ``pipeline serve`` (gzip), counted at
the server (headers + body), so a web worker's fetches count like the page's. Per site,
``--repeats`` sessions of a cold query (a fresh page, HTTP cache cleared) and nine warm ones (the
same page), for ``hybrid`` and ``lexical`` (the same page with the encoder off), and Pagefind's
(the same documents rendered to HTML, one page a document, ``pagefind_eval``'s CLI; its cold
query loads ``pagefind.js``, the wasm, its index and the first five results' data, what its
default UI shows first).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench import FASTAPI, WORK, arguments, fastapi_questions, pagefind_eval, synthetic, write_json
from bench.speed import build_in_process
from pipeline.site.bundle import bundle
from tests import headless  # the page tests' Chromium set-up

PAGEFIND_SHOWN = 5  # results whose data Pagefind's default UI loads first
# Both pages declare an empty icon: a browser's own /favicon.ico request is no query's cost.
ENGINE_HTML = """<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>engine</title></head><body>
<script type="module">
import { openSite } from "./_assets/CLIENT";
window.engineQuery = async (q, method) => {
  window.site ??= await openSite(new URL("./", location.href));
  const hits = await window.site.search(q, { k: 10, method: method === "lexical" ? "hybrid" : method, staticEncoder: method !== "lexical" });
  return hits.map((h) => h.method);
};
document.body.dataset.ready = "true";
</script></body></html>
"""


PAGEFIND_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>pagefind</title></head>
<body><script type="module">
let pagefind = null;
// One query as Pagefind's default UI starts it: load the library once, search, load the data
// of the first results shown. Resolves with performance.now() at the end.
window.pagefindQuery = async (q, shown) => {
  pagefind = pagefind ?? (await import("./pagefind/pagefind.js"));
  const found = await pagefind.search(q);
  await Promise.all(found.results.slice(0, shown).map((r) => r.data()));
  return [performance.now(), found.results.length];
};
document.body.dataset.ready = "true";
</script></body></html>
"""


def kind(path: str) -> str:
    """What a fetched file is to our page: the encoder's files, code (the page, ``_assets/``) or index data."""
    if "/_search/encoder/" in path:
        return "encoder"
    if "/_assets/" in path or path.endswith(".html") or path.endswith("/"):
        return "code"
    return "data"


def pagefind_kind(path: str) -> str:
    return "code" if path.endswith((".js", ".html", "/")) or "/wasm." in path else "data"


class _Counter:
    """A handler's output stream that counts the bytes written through it."""

    def __init__(self, raw) -> None:
        self.raw, self.sent = raw, 0

    def write(self, data) -> int:
        self.sent += len(data)
        return self.raw.write(data)

    def __getattr__(self, name: str):
        return getattr(self.raw, name)


def serve(site: Path):
    """``pipeline serve`` of ``site`` (gzip) on a free port, recording (path, bytes sent: headers
    and body) per request in ``server.fetched``: counted at the server, so requests made by web
    workers (Pagefind searches in one) count the same as the page's own."""
    from pipeline.serve import make_server
    from pipeline.serve.handler import SiteRequestHandler

    class Counting(SiteRequestHandler):
        def setup(self) -> None:
            super().setup()
            self.wfile = _Counter(self.wfile)

        def handle_one_request(self) -> None:
            before = self.wfile.sent
            super().handle_one_request()
            if self.raw_requestline:
                self.wfile.flush()
                self.server.fetched.append((self.path.split("?")[0], self.wfile.sent - before))

    server = make_server(site, host="127.0.0.1", port=0, log_requests=False, handler=Counting)
    server.fetched = []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def take(server) -> list[tuple[str, int]]:
    """What ``server`` sent since the previous call, and forget it."""
    time.sleep(0.05)  # a handler may still be appending its last record
    out, server.fetched[:] = list(server.fetched), []
    return out


def cold_page(d, server, page: str) -> None:
    """Open ``page`` as a first visit (an empty HTTP cache, the server's log emptied) and wait until it is ready."""
    from selenium.webdriver.support.ui import WebDriverWait

    d.get("about:blank")
    d.execute_cdp_cmd("Network.clearBrowserCache", {})  # also what a web worker cached
    take(server)
    d.get(server.url + page)
    WebDriverWait(d, 120).until(lambda x: x.execute_script("return document.body.dataset.ready === 'true'"))


def session(d, server, qs: list[str], method: str) -> list[dict[str, Any]]:
    """A cold query then warm ones on one page: ours (``hybrid``, ``lexical``) or ``pagefind``."""
    pagefind = method == "pagefind"
    rows = []
    for i, q in enumerate(qs):
        if i == 0:
            cold_page(d, server, "pagefind.html" if pagefind else "engine.html")
        else:
            take(server)
        t0 = d.execute_script("return performance.now()")
        if pagefind:
            t1, n = d.execute_async_script("const [q, k, done] = arguments; window.pagefindQuery(q, k).then(done, (e) => done([-1, String(e)]));",
                                           q, PAGEFIND_SHOWN)
            if t1 < 0:
                raise RuntimeError(f"Pagefind failed on {q!r}: {n}")
            row = {"hits": n}
        else:
            methods = d.execute_async_script("const [q, m, done] = arguments; window.engineQuery(q, m).then(done, (e) => done(String(e)));", q, method)
            t1 = d.execute_script("return performance.now()")
            if isinstance(methods, str):
                raise RuntimeError(f"{method} query {q!r} failed: {methods}")
            row = {"hybrid": "hybrid" in methods, "hits": len(methods)}
        fetched = take(server)
        row.update(query=q, cold=i == 0, ms=t1 - t0, requests=len(fetched), kb=sum(b for _, b in fetched) / 1000,
                   files=[[p, b] for p, b in fetched])
        for k in ("code", "data", "encoder"):
            part = [b for p, b in fetched if (pagefind_kind if pagefind else kind)(p) == k]
            row[f"{k}_requests"], row[f"{k}_kb"] = len(part), sum(part) / 1000
        rows.append(row)
    return rows


def pagefind_site(cmd: list[str], content: Path, root: Path) -> Path:
    """The documents of ``content`` as HTML pages (one per document) under ``root``, indexed."""
    for src in sorted(content.rglob("*.md")):
        rel = src.relative_to(content).with_suffix(".html")
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(pagefind_eval.html_page(src.stem, src.read_text(encoding="utf-8", errors="replace")), encoding="utf-8")
    if not root.is_dir():
        raise RuntimeError(f"no markdown documents under {content}")
    (root / "pagefind.html").write_text(PAGEFIND_HTML, encoding="utf-8")
    pagefind_eval.build_index(cmd, root)
    return root


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
    name, code = bundle("client.js", "client-")  # the client as one file, as the search page ships its code
    (site / "_assets" / name).write_bytes(code)
    (site / "engine.html").write_text(ENGINE_HTML.replace("CLIENT", name), encoding="utf-8")
    meta = json.loads((site / "_search" / "meta.json").read_text())
    servers = {"ours": serve(site)}
    if pagefind_cmd is not None:
        servers["pagefind"] = serve(pagefind_site(pagefind_cmd, content, site.parent / "pagefind-site"))
    rows: dict[str, list] = {}
    try:
        for rep in range(repeats):
            for method in ("hybrid", "lexical"):
                rows.setdefault(method, []).extend(session(d, servers["ours"], qs, method))
            if "pagefind" in servers:
                rows.setdefault("pagefind", []).extend(session(d, servers["pagefind"], qs, "pagefind"))
                kw = [" ".join(pagefind_eval.keywords(q)) for q in qs]
                rows.setdefault("pagefind-keywords", []).extend(session(d, servers["pagefind"], kw, "pagefind"))
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
    parser = arguments(__doc__, WORK / "encoder_page.json")
    parser.add_argument("--synthetic", type=int, nargs="*", default=[2500], metavar="DOCS",
                        help="synthetic sites of these many documents (2500: ~10k chunks, 25000: ~100k)")
    parser.add_argument("--no-fastapi", action="store_true")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-pagefind", action="store_true")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="encoder-page-") as tmp:
        tmp_path = Path(tmp)
        try:
            d = headless.driver(tmp_path / "profile")
        except headless.Unavailable as why:
            print(f"encoder_page skipped: {why}", file=sys.stderr)
            write_json(args.out, {"skipped": str(why)})
            return 0
        try:
            cmd = version = None
            if not args.no_pagefind:
                try:
                    cmd, version = pagefind_eval.pagefind_command()
                except (headless.Unavailable, RuntimeError) as why:
                    print(f"Pagefind skipped: {why}", file=sys.stderr)
            plans = [] if args.no_fastapi else [("fastapi", FASTAPI, fastapi_questions())]
            plans += [(f"synthetic ({n} documents)", n, list(synthetic.QUERIES)) for n in args.synthetic]
            for i, (label, content, qs) in enumerate(plans):
                root = tmp_path / f"site-{i}"
                if isinstance(content, int):
                    synthetic.generate(root / "content", content)
                    content = root / "content"
                t0 = time.perf_counter()
                report = build_in_process(content, root / "site", root / "cache", title=label)
                print(f"{label}: {report.chunk.chunks} chunks built in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
                results.append(measure_site(d, label, root / "site", content, qs, args.repeats, cmd))
        finally:
            d.quit()
    out = {"pagefind": version, "results": results}
    write_json(args.out, out)
    print(bytes_table(out))
    return 0


def bytes_table(result: dict) -> str:
    """Markdown: per site and client, cold and warm: requests and kB (all / code / data / encoder) and ms."""
    lines = ["| site | chunks | client | query | requests: all / code / index data / encoder (mean, max all) "
             "| kB over the wire: all / code / index data / encoder (mean, max all) | ms (median) | hybrid |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["results"]:
        for name, s in r["summary"].items():
            for k in (k for k in ("cold", "warm") if k in s):
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
