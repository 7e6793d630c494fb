"""The search page in headless Chromium on FastAPI's docs: latency and what a query fetches, beside Pagefind.

    .venv/bin/python -m bench.search_page                      # writes bench/.work/search_page.json
    .venv/bin/python -m bench.search_page --model              # built with MiniLM: the page also loads its query model
    .venv/bin/python -m bench.search_page --site SITE          # an already built site
    .venv/bin/python -m bench.search_page --compare-ref REF    # also the page as it was at git REF, interleaved

The site: ``../shared/realdocs/fastapi`` built as ``bench/search_bytes.py`` builds it (hashing
embedder: the same bytes as MiniLM, no query model), with ``--model`` built with MiniLM (the page
then ships its query model), or ``--site``. It is served by ``pipeline
serve`` (gzip on). Queries: the realdocs set's first ten questions (all FastAPI ones), as
``search_bytes`` uses for the Python client.

Measured per query, with the HTTP cache off (``tests/headless.py``); requests and bytes are
counted at the server (bytes sent: headers and the gzip-compressed body), so a web worker's
fetches count like the page's:

* ``cold``: a fresh page opened at ``#q=<question>``; from navigation start until the results
  and their excerpts are on screen (``#view[data-done]``). Requests and bytes: everything the
  page fetched until it is ready (its navigation included, even when it arrives after the
  results), split into the page's code (``index.html``, ``_assets/``) and data.
* ``warm``: the next question on the same page (the hash changes, as a deep link or a submit
  does); from the change until its results are on screen, and what that query fetched.
* ``model``: with ``--site`` built with a local model (``_assets/model/``): the time from
  navigation until the page has re-ranked with the query model (cold), and a warm query once the
  model is loaded (the page embeds before it searches).

Pagefind (``$PAGEFIND`` or npx, as ``bench/pagefind_eval.py``; skipped when absent) indexes the same
documents rendered to HTML, one page per document, served by the same server; its cold query is a
fresh page that loads ``pagefind.js``, searches, and loads the first 5 results' data (what its
default UI shows first); warm: the next question on that page. Both the question as typed and
its keywords (Pagefind ANDs words: a typed question rarely matches).

``--compare-ref REF`` adds the page variant ``REF`` (the site copied, ``_assets/app.js`` and
``search-ui.js`` taken from git), measured session by session in turn with the current page
(alternating which goes first), so the latency ratio is side by side. A ``--site`` built earlier
is served with this tree's ``app.js`` and ``search-ui.js``.
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import headless  # noqa: E402  (the page tests' Chromium set-up)
from bench import pagefind_eval  # noqa: E402
from bench.speed import build_in_process  # noqa: E402

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
WORK = BENCH_DIR / ".work"
FASTAPI = REPO_ROOT.parent / "shared" / "realdocs" / "fastapi"
UI_FILES = ("app.js", "search-ui.js")  # the page's UI layer: what --compare-ref swaps
PAGEFIND_SHOWN = 5  # results whose data Pagefind's default UI loads first

# Resolves with performance.now() when the page shows the answer to arguments[0]
# (and, with arguments[1], only once it is re-ranked with the query model).
WAIT_DONE = """
const [query, reranked, done] = arguments;
const check = () => {
  const v = document.getElementById("view");
  const status = document.getElementById("model-status")?.textContent ?? "";
  if (v && v.dataset.query === query && v.dataset.done === "true" && (!reranked || status.startsWith("Re-ranked"))) return done(performance.now());
  if (reranked && document.body.dataset.model === "failed") return done(-1);
  setTimeout(check, 2);
};
check();
"""

PAGEFIND_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pagefind</title></head>
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


def questions(n: int = 10) -> list[str]:
    with open(BENCH_DIR / "realdocs_set" / "questions.csv", newline="", encoding="utf-8") as fh:
        return [row["question"] for row in csv.DictReader(fh)][:n]


def summarise(entries: list[tuple[str, int]], code: Callable[[str], bool]) -> dict[str, Any]:
    c = [(p, b) for p, b in entries if code(p)]
    data = [(p, b) for p, b in entries if not code(p)]
    return {
        "requests": len(entries), "kb": sum(b for _, b in entries) / 1000,
        "code_requests": len(c), "code_kb": sum(b for _, b in c) / 1000,
        "data_requests": len(data), "data_kb": sum(b for _, b in data) / 1000,
    }


def ours_code(path: str) -> bool:
    return "/_assets/" in path or path.endswith("/") or path.endswith("/index.html")


def pagefind_code(path: str) -> bool:
    return path.endswith((".js", ".html", "/")) or "/wasm." in path


def wait_ready(d) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(d, 120).until(lambda x: x.execute_script("return document.body.dataset.ready === 'true'"))


def cold_start(d, server, url: str) -> None:
    """Open ``url`` as a first visit: an empty HTTP cache and the server's request log emptied."""
    d.get("about:blank")
    d.execute_cdp_cmd("Network.clearBrowserCache", {})  # also what a web worker cached
    take(server)
    d.get(url)


def ours(d, server, qs: list[str], *, reranked: bool = False) -> list[dict[str, Any]]:
    """Cold (first) and warm (the rest) queries of one page session."""
    rows = []
    url = server.url
    for i, q in enumerate(qs):
        if i == 0:
            cold_start(d, server, url + "#q=" + quote(q))
            t0 = 0.0
        else:
            take(server)
            t0 = d.execute_script("const t = performance.now(); location.hash = '#q=' + encodeURIComponent(arguments[0]); return t;", q)
        t1 = d.execute_async_script(WAIT_DONE, q, reranked)
        if i == 0:
            wait_ready(d)  # what the page loads after the answer (its navigation) counts for the cold query too
        row = {"query": q, "cold": i == 0, "ms": t1 - t0, "hits": d.execute_script("return parseInt(document.getElementById('result-count')?.textContent ?? '0', 10) || 0")}
        fetched = take(server)
        row.update(summarise(fetched, ours_code))
        row["paths"] = [p for p, _ in fetched]
        rows.append(row)
    return rows


def pagefind_session(d, server, qs: list[str]) -> list[dict[str, Any]]:
    rows = []
    url = server.url
    for i, q in enumerate(qs):
        if i == 0:
            cold_start(d, server, url + "pagefind.html")
            wait_ready(d)
            t0 = 0.0
        else:
            take(server)
            t0 = d.execute_script("return performance.now()")
        t1, n = d.execute_async_script("const [q, k, done] = arguments; window.pagefindQuery(q, k).then(done, (e) => done([-1, String(e)]));", q, PAGEFIND_SHOWN)
        if t1 < 0:
            raise RuntimeError(f"Pagefind failed on {q!r}: {n}")
        row = {"query": q, "cold": i == 0, "ms": t1 - t0, "hits": n}
        row.update(summarise(take(server), pagefind_code))
        rows.append(row)
    return rows


def pagefind_site(cmd: list[str], content: Path, root: Path) -> Path:
    """The documents of ``content`` as HTML pages (one per document) under ``root``, indexed."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False})
    for src in sorted(content.rglob("*.md")):
        rel = src.relative_to(content).with_suffix(".html")
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        out = root / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        text = src.read_text(encoding="utf-8", errors="replace")
        out.write_text(f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(src.stem)}</title></head>'
                       f"<body><main>{md.render(text)}</main></body></html>\n", encoding="utf-8")
    if not root.is_dir():
        raise RuntimeError(f"no markdown documents under {content}")
    (root / "pagefind.html").write_text(PAGEFIND_HTML, encoding="utf-8")
    pagefind_eval.build_index(cmd, root)
    return root


def _replace(path: Path, text: str) -> None:
    path.unlink()  # a hard link to the original site's file: write a new file, never through the link
    path.write_text(text, encoding="utf-8")


def ui_variant(site: Path, ref: str | None, copy: Path, *, model: bool = True) -> Path:
    """A hard-linked copy of ``site`` whose page UI files are those of git ``ref`` (None: this
    working tree's); with ``model`` False the page announces no query model (lexical only)."""
    shutil.copytree(site, copy, symlinks=True, copy_function=os.link)
    for name in UI_FILES:
        if ref is None:
            text = (REPO_ROOT / "pipeline" / "assets" / name).read_text(encoding="utf-8")
        else:
            text = subprocess.run(["git", "show", f"{ref}:pipeline/assets/{name}"], cwd=REPO_ROOT,
                                  capture_output=True, text=True, check=True).stdout
        _replace(copy / "_assets" / name, text)
    if not model:
        page = (copy / "index.html").read_text(encoding="utf-8")
        off = page.replace('<meta name="pipeline-search-model" content="on">', '<meta name="pipeline-search-model" content="off">')
        if off == page:
            raise RuntimeError(f"{copy / 'index.html'}: no query-model meta to turn off")
        _replace(copy / "index.html", off)
    return copy


class _Counter:
    """A handler's output stream that counts the bytes written through it."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.sent = 0

    def write(self, data) -> int:
        self.sent += len(data)
        return self.raw.write(data)

    def __getattr__(self, name: str):
        return getattr(self.raw, name)


def _counting_handler():
    """``pipeline serve``'s handler, recording (path, bytes sent: headers and body) per request in
    ``server.fetched``: counted at the server, so requests made by web workers (Pagefind searches
    in one) count the same as the page's own."""
    from pipeline.serve.server import SiteRequestHandler

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

    return Counting


def build_with_model(content: Path, root: Path) -> Path:
    """``content`` built with the default model (MiniLM), so the page ships and loads its query
    model; the embedding cache is kept in ``bench/.work/page-cache`` for the next run."""
    build_in_process(content, root / "site", WORK / "page-cache", title="FastAPI", model=True)
    return root / "site"


def serve(site: Path):
    from pipeline.serve import make_server

    server = make_server(site, host="127.0.0.1", port=0, log_requests=False, handler=_counting_handler())
    server.fetched = []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def take(server) -> list[tuple[str, int]]:
    """What ``server`` sent since the previous call, and forget it."""
    time.sleep(0.05)  # a handler may still be appending its last record
    out, server.fetched[:] = list(server.fetched), []
    return out


def stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(rows), "ms_median": statistics.median(r["ms"] for r in rows)}
    for key in ("requests", "kb", "code_requests", "code_kb", "data_requests", "data_kb", "hits"):
        out[f"{key}_mean"] = statistics.mean(r[key] for r in rows)
        out[f"{key}_max"] = max(r[key] for r in rows)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=None, help="a built site of FastAPI's docs (default: build one, hashing embedder)")
    parser.add_argument("--content", type=Path, default=FASTAPI)
    parser.add_argument("--synthetic", type=int, default=None, metavar="DOCS",
                        help="instead of FastAPI: bench/synthetic.py's corpus of DOCS documents (2500: ~10k chunks), "
                             "with search_bytes' ten queries")
    parser.add_argument("--model", action="store_true", help="build with the default model (MiniLM): also measure the page with its query model")
    parser.add_argument("--repeats", type=int, default=3, help="sessions per variant (each: 1 cold + 9 warm queries)")
    parser.add_argument("--compare-ref", default=None, help="also measure the page UI of this git ref, interleaved")
    parser.add_argument("--out", type=Path, default=WORK / "search_page.json")
    args = parser.parse_args(argv)
    if not args.synthetic and args.site is None and not args.content.is_dir():
        parser.error(f"no content tree at {args.content} (FastAPI's docs: ../shared/realdocs/fastapi beside the repository); pass --content")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    qs = questions()
    with tempfile.TemporaryDirectory(prefix="search-page-") as tmp:
        tmp_path = Path(tmp)
        if args.synthetic:
            from bench import search_bytes, synthetic

            qs = list(search_bytes.QUERIES)
            args.content = tmp_path / "synthetic"
            synthetic.generate(args.content, args.synthetic)
        try:
            d = headless.driver(tmp_path / "profile")
        except headless.Unavailable as why:
            print(f"search_page skipped: {why}", file=sys.stderr)
            args.out.write_text(json.dumps({"skipped": str(why)}, indent=1))
            return 0
        try:
            site = args.site
            if site is None and args.model:
                site = build_with_model(args.content, tmp_path / "build")
            elif site is None:
                from bench.search_bytes import build_site

                site, chunks, _ = build_site(0, tmp_path / "build", args.content)
            has_model = (site / "_assets" / "model").is_dir()
            meta = site / "_search" / "meta.json"
            n_chunks = json.loads(meta.read_text())["chunks"] if meta.exists() else None
            # Every variant is a hard-linked copy with the UI files of this tree or of --compare-ref
            # (a given site was built by earlier code). With a model, "page" is the same site with
            # the model announced off (lexical only: nothing loads in the background), and
            # "page+model" the site as built.
            variants = {}
            for label, ref in [("page", None)] + ([(f"page@{args.compare_ref}", args.compare_ref)] if args.compare_ref else []):
                variants[label] = ui_variant(site, ref, tmp_path / f"site-{len(variants)}", model=False) if has_model \
                    else ui_variant(site, ref, tmp_path / f"site-{len(variants)}")
                if has_model:
                    variants[f"{label}+model"] = ui_variant(site, ref, tmp_path / f"site-{len(variants)}")
            try:
                cmd = pagefind_eval.pagefind_command()
                pf_root = pagefind_site(cmd, args.content, tmp_path / "pagefind-site")
                pagefind_note = pagefind_eval.pagefind_version(cmd)
            except (headless.Unavailable, RuntimeError) as why:
                pf_root, pagefind_note = None, f"skipped: {why}"
                print(f"Pagefind {pagefind_note}", file=sys.stderr)
            servers = {name: serve(path) for name, path in variants.items()}
            if pf_root is not None:
                servers["pagefind"] = serve(pf_root)
            rows: dict[str, list[dict[str, Any]]] = {}
            try:
                for rep in range(args.repeats):
                    order = list(servers) if rep % 2 == 0 else list(reversed(servers))  # interleaved, alternating order
                    for name in order:
                        server = servers[name]
                        if name == "pagefind":
                            rows.setdefault("pagefind", []).extend(pagefind_session(d, server, qs))
                            kw = [" ".join(pagefind_eval.keywords(q)) for q in qs]
                            rows.setdefault("pagefind-keywords", []).extend(pagefind_session(d, server, kw))
                        else:
                            rows.setdefault(name, []).extend(ours(d, server, qs, reranked=name.endswith("+model")))
                        print(f"repeat {rep + 1}: {name} done", file=sys.stderr)
            finally:
                for server in servers.values():
                    server.shutdown()
                    server.server_close()
        finally:
            d.quit()
    result = {
        "site": f"synthetic ({args.synthetic} documents)" if args.synthetic else "fastapi" if args.site is None else str(args.site),
        "chunks": n_chunks,
        "queries": qs,
        "repeats": args.repeats,
        "pagefind": pagefind_note,
        "model": has_model,
        "summary": {name: {"cold": stats([r for r in rs if r["cold"]]), "warm": stats([r for r in rs if not r["cold"]])} for name, rs in rows.items()},
        "rows": rows,
    }
    args.out.write_text(json.dumps(result, indent=1))
    print(page_table(result))
    return 0


def page_table(result: dict[str, Any]) -> str:
    """The markdown table of ``result`` (also used by ``bench/reporting/sections.py``)."""
    lines = ["| client | query | ms (median) | requests: all / code / data (mean) | kB over the wire: all / code / data (mean) | results |",
             "|---|---|---|---|---|---|"]
    for name, s in result["summary"].items():
        for kind in ("cold", "warm"):
            r = s[kind]
            lines.append(f"| {name} | {kind} | {r['ms_median']:.0f} | {r['requests_mean']:.1f} / {r['code_requests_mean']:.1f} / {r['data_requests_mean']:.1f} "
                         f"| {r['kb_mean']:.1f} / {r['code_kb_mean']:.1f} / {r['data_kb_mean']:.1f} | {r['hits_mean']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
