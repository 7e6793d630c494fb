"""Pagefind as the anchor for the lexical side, on the same questions and chunks as ``search_eval``.

For each question set (markdown, realdocs, chroma) and each of the same nearby chunk budgets
(``search_eval.CHUNKERS``), every chunk becomes one HTML page (its markdown rendered with
markdown-it-py; the corpus title as an ``<h1>`` when the chunk does not start with one, since our
lexical index also scores the title), so a Pagefind result is exactly one chunk span. Pagefind
1.x (its CLI, defaults, ``--force-language en``) indexes those pages; the questions are searched
with Pagefind's own ``pagefind.js`` + WebAssembly in headless Chromium, and its result order is
scored with the same metric code and budgets as our methods (``search_eval.score_orders``:
R@5, IoU@5, recall at 1,000 word pieces; chunks Pagefind does not return follow in corpus order,
as for our lexical ranking). Per question, metrics are averaged over the budgets; our lexical
(BM25F ``_search/`` index), plain BM25 (bm25s) and vector and hybrid are paired against Pagefind
per question (``quality.paired``: ours minus Pagefind), the last two taken from ``search_eval``'s
result file when it scored the same questions with the same chunkers (``make bench`` runs that
step first).

Pagefind is not a project dependency (its npm lock lacked the per-platform binary packages and
broke ``npm ci``): the step runs ``$PAGEFIND`` (a pagefind executable) if set, else
``npx --yes pagefind@1.6.0``, and is skipped with a message (exit 0, result file marked
``skipped``) when neither works or Chromium is missing.

    PAGEFIND=/path/to/node_modules/.bin/pagefind .venv/bin/python -m bench.pagefind_eval
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bench import WORK, arguments, write_json
from bench import chroma_eval as ce
from bench import quality
from bench import search_eval as se
from bench.chunkers import OURS_EXTRA
from pipeline.simhash import STOP_WORDS
from tests import headless  # the page tests' Chromium set-up

PAGEFIND_VERSION = "1.6.0"
OUT = WORK / "pagefind_results.json"
OURS = ("lexical", "bm25")
# How a question is put to Pagefind. Pagefind ANDs the words of a search (a word absent from the
# whole index is dropped), so a typed question rarely matches a page whole:
#   pagefind           the question as typed (what a reader of a Pagefind site gets)
#   pagefind-keywords  the question without stop words, still one AND search
#   pagefind-or        each keyword searched alone, Pagefind's scores summed per page: OR semantics
#                      over Pagefind's own index and scoring (the best its index offers a question)
MODES = ("pagefind", "pagefind-keywords", "pagefind-or")
OURS_VECTORS = ("vector", "hybrid-score", "hybrid-rrf")

# The search page for the benchmark: Pagefind's JS API with its defaults (no UI), one function
# that answers a list of questions with each one's result URLs in Pagefind's order.
SEARCH_HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pagefind bench</title></head>
<body><script type="module">
const pagefind = await import("./pagefind/pagefind.js");
await pagefind.init();
// Each question: a list of searches; one search is Pagefind's order, several are summed by
// Pagefind's own scores (ties: first seen first).
window.rankAll = async (questions) => {
  const ids = [];
  const byId = new Map();
  for (const searches of questions) {
    const total = new Map();
    for (const q of searches) {
      const found = await pagefind.search(q);
      for (const r of found.results) {
        byId.set(r.id, r);
        total.set(r.id, (total.get(r.id) ?? 0) + r.score);
      }
    }
    const order = [...total.keys()];
    ids.push(searches.length === 1 ? order : order.map((id, i) => [id, total.get(id), i]).sort((a, b) => b[1] - a[1] || a[2] - b[2]).map(([id]) => id));
  }
  const urls = new Map(await Promise.all([...byId.values()].map(async (r) => [r.id, (await r.data()).url])));
  return ids.map((list) => list.map((id) => urls.get(id)));
};
document.body.dataset.ready = "true";
</script></body></html>
"""


def pagefind_command() -> tuple[list[str], str]:
    """(the Pagefind CLI to run: ``$PAGEFIND``, else npx; its version); raises ``headless.Unavailable``."""
    if os.environ.get("PAGEFIND"):
        cmd = [os.environ["PAGEFIND"]]
    elif shutil.which("npx"):
        cmd = ["npx", "--yes", f"pagefind@{PAGEFIND_VERSION}"]
    else:
        raise headless.Unavailable("Pagefind is not available: set PAGEFIND to a pagefind executable, or install Node (npx)")
    try:
        out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise headless.Unavailable(f"Pagefind did not start ({' '.join(cmd)}): {error}") from error
    if out.returncode != 0:
        raise headless.Unavailable(f"Pagefind did not start ({' '.join(cmd)}): {out.stderr.strip()[-300:]}")
    return cmd, out.stdout.strip()


def corpus_titles(dataset: ce.Dataset) -> dict[str, str]:
    out = {}
    for cid, text in dataset.corpora.items():
        out[cid] = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), "")
    return out


def html_page(title: str, markdown: str, head: str = "") -> str:
    """``markdown`` as an HTML page for Pagefind (raw HTML in it shown as text, as on our page)."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).render(markdown)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title></head>'
            f"<body><main>{head}{body}</main></body></html>\n")


def write_chunk_pages(dataset: ce.Dataset, chunks: ce.ChunkSet, site: Path) -> None:
    """One HTML page per chunk, ``c/<i>.html`` (``i``: the chunk's number in ``chunks``)."""
    titles = corpus_titles(dataset)
    (site / "c").mkdir(parents=True)
    for i, (cid, text) in enumerate(zip(chunks.corpus_ids, chunks.texts)):
        title = titles[cid]
        head = "" if text.lstrip().startswith("# ") or not title else f"<h1>{html.escape(title)}</h1>\n"
        (site / "c" / f"{i}.html").write_text(html_page(title, text, head), encoding="utf-8")
    (site / "search.html").write_text(SEARCH_HTML, encoding="utf-8")


def build_index(cmd: list[str], site: Path) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd + ["--site", str(site), "--force-language", "en", "--quiet"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"pagefind failed on {site}: {out.stderr.strip()[-1000:]}")
    return time.perf_counter() - t0


def keywords(question: str) -> list[str]:
    """The question's words without stop words (our lexical index's list), in order, each once."""
    return list(dict.fromkeys(w for w in re.findall(r"\w+", question.lower()) if w not in STOP_WORDS))


def searches(question: str, mode: str) -> list[str]:
    """What is typed into Pagefind for ``question`` in ``mode`` (see ``MODES``)."""
    if mode == "pagefind":
        return [question]
    words = keywords(question) or [question]
    return [" ".join(words)] if mode == "pagefind-keywords" else words


def pagefind_rankings(driver, site: Path, questions: Sequence[list[str]]) -> list[list[int]]:
    """Per question (a list of searches), Pagefind's results as chunk numbers, best first."""
    from selenium.webdriver.support.ui import WebDriverWait

    with headless.static_server(site) as url:
        driver.get(url + "search.html")
        WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === 'true'"))
        urls = driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.rankAll(arguments[0]).then(done, (e) => done({error: String(e)}));",
            list(questions),
        )
    if isinstance(urls, dict):
        raise RuntimeError(f"Pagefind search failed in Chromium: {urls['error']}")
    pattern = re.compile(r"/c/(\d+)(?:\.html)?$")
    return [[int(pattern.search(u).group(1)) for u in found] for found in urls]


def from_search_results(path: Path, name: str, chunker_names: Sequence[str], n_questions: int,
                        chunks: dict[str, int]) -> dict[str, dict[str, list[float]]] | None:
    """Vector and hybrid per-question scores of set ``name`` from ``search_eval``'s result file, when
    it scored the same questions over the same chunks (chunkers and chunk counts; same k and
    budget), else None."""
    if not path.exists():
        return None
    for r in json.loads(path.read_text()).get("results", []):
        if (r["set"] == name and r["chunkers"] == list(chunker_names) and r["questions"] == n_questions
                and r.get("chunks") == chunks and r["k"] == 5 and r["budget"] == 1000
                and all(m in r["per_question"] for m in OURS_VECTORS)):
            return {m: r["per_question"][m] for m in OURS_VECTORS}
    return None


def run_set(name: str, chunker_names: Sequence[str], cmd: list[str], driver, *, k: int = 5, budget: int = 1000,
            search_results: Path = se.OUT) -> dict[str, Any]:
    dataset = se.load(name)
    questions = [q.text for q in dataset.questions]
    methods = MODES + OURS
    per_budget: dict[str, dict[str, dict[str, list[float]]]] = {}
    returned: dict[str, dict[str, list[int]]] = {mode: {} for mode in MODES}
    index_info = {}
    for cname in chunker_names:
        chunks = ce.build_chunks(OURS_EXTRA[cname](), dataset)
        natural = list(range(len(chunks)))
        with tempfile.TemporaryDirectory(prefix="pagefind-") as tmp:
            site = Path(tmp) / "site"
            write_chunk_pages(dataset, chunks, site)
            seconds = build_index(cmd, site)
            bundle = sum(p.stat().st_size for p in (site / "pagefind").rglob("*") if p.is_file())
            t0 = time.perf_counter()
            ranked = {mode: pagefind_rankings(driver, site, [searches(q, mode) for q in questions]) for mode in MODES}
            search_s = time.perf_counter() - t0
        index_info[cname] = {"chunks": len(chunks), "index_s": seconds, "bundle_kb": bundle / 1000, "search_s": search_s}
        orders = {}
        for mode in MODES:
            returned[mode][cname] = [len(r) for r in ranked[mode]]
            orders[mode] = [se.full_order(r, natural) for r in ranked[mode]]
        index = se.lexical_index(dataset, chunks)
        orders["lexical"] = [se.full_order([n for n, _ in se.lexical_ranking(index, q, len(chunks))], natural) for q in questions]
        orders["bm25"] = [se.full_order([n for n, _ in r], natural) for r in se.bm25_rankings(chunks, dataset.questions)]
        per_budget[cname] = {m: se.score_orders(dataset, chunks, orders[m], k=k, budget=budget) for m in methods}
        print(f"{name} {cname}: {len(chunks)} chunks, Pagefind index {seconds:.1f} s, {len(questions)} searches {search_s:.1f} s",
              file=sys.stderr)
    averaged = quality.budget_averaged(per_budget)
    found = from_search_results(search_results, name, chunker_names, len(questions), {c: info["chunks"] for c, info in index_info.items()})
    averaged.update(found or {})
    no_results = {mode: 100 * float(np.mean([[n == 0 for n in returned[mode][c]] for c in chunker_names])) for mode in MODES}
    median_results = {mode: float(np.median([n for c in chunker_names for n in returned[mode][c]])) for mode in MODES}
    return {
        "set": name,
        "questions": len(questions),
        "documents": len(dataset.corpora),
        "chunkers": list(chunker_names),
        "k": k,
        "budget": budget,
        "index": index_info,
        "vectors_from": str(search_results) if found else None,
        "no_results_pct": no_results,
        "results_median": median_results,
        "per_question": averaged,
        "summary": quality.summarise(averaged),
        "paired": quality.paired_methods(averaged, [(m, mode) for mode in ("pagefind", "pagefind-or") for m in list(averaged)[len(MODES):]]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = arguments(__doc__, OUT)
    parser.add_argument("sets", nargs="*", default=list(se.SETS))
    parser.add_argument("--chunkers", nargs="+", default=list(se.CHUNKERS))
    parser.add_argument("--search-results", type=Path, default=se.OUT, help="search_eval's result file (vector and hybrid scores)")
    args = parser.parse_args(argv)
    try:
        cmd, version = pagefind_command()
        profile = Path(tempfile.mkdtemp(prefix="pagefind-chromium-"))
        driver = headless.driver(profile)
    except headless.Unavailable as why:
        print(f"pagefind_eval skipped: {why}", file=sys.stderr)
        write_json(args.out, {"skipped": str(why)})
        return 0
    try:
        results = [run_set(name, args.chunkers, cmd, driver, search_results=args.search_results) for name in args.sets]
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    result = {"pagefind": version, "results": results}
    write_json(args.out, result)
    from bench.reporting.sections import pagefind

    print(pagefind(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
