"""The report's search sections (issue 11), as markdown: search methods paired per question with bytes and
requests per query, Pagefind on the same questions, and the search page's latency in headless Chromium. The
tables themselves are the benches' own (``bench.search_eval``, ``bench.search_bytes``, ``bench.pagefind_eval``,
``bench.search_page``), imported only when there is a result to show."""

from __future__ import annotations

import os

from bench.reporting.formatting import table
from bench.reporting.targets import search_targets


def search_section(quality: dict | None, sizes: list | None, real: list | None = None) -> str:
    """Issue 11: search methods paired per question, and bytes/requests per query."""
    if not quality and not sizes:
        return "Not run (`python -m bench.search_eval`, `python -m bench.search_bytes`).\n"
    from bench.search_bytes import bytes_table
    from bench.search_eval import table as quality_table

    parts = ["Methods and protocol: `bench/search_eval.py` (realdocs questions: `bench/realdocs_set/`, written "
             "before any method ran); bytes: `bench/search_bytes.py`. The browser ranks exactly as the Python client "
             "(`tests/test_search_js.py`), so the lexical row is also the search page before its model loads. "
             "Pagefind on the same questions, and the page's latency in the browser: the next two subsections.", ""]
    t = search_targets(quality, sizes)
    if t:
        parts += [table(["target (issue 11)", "verdict", "evidence"], [[a, f"**{b}**", c] for a, b, c in t]), ""]
    for r in (quality or {}).get("results", []):
        parts += [quality_table(r), ""]
    if sizes:
        parts += ["### Bytes and requests per query (Python client, `pipeline serve` with gzip)", "",
                  "Synthetic sites (`bench/synthetic.py`, 24 topic directories), ten fixed queries, `k` = 5. A cold query counts everything from `open_site` on (which reads no root `index.json` for a search: a site's `_search/` files are at fixed paths). Scoped rows filter to the site's largest topic (`topic=`), the worst case for its segments (`_search/segments/`), or for its own term shards and record blocks (`_search/topics/`, `_search/blocks/`) when it has more than 60,000 postings, as at 106,737 chunks (docs/ARCHITECTURE.md).", "", bytes_table(sizes), ""]
    if real:
        parts += ["FastAPI's docs (`../shared/realdocs/fastapi`), the realdocs set's first ten questions; the issue measured "
                  "77 requests and 4.5 MB for a cold search there before `_search/`.", "", bytes_table(real), ""]
    return "\n".join(parts)


def eval_section(quality: dict | None, speed: dict | None) -> str:
    """``pipeline eval`` (issue 33): its figures on the question sets (beside the tables above, from the
    same run) and how long it takes on FastAPI's docs (``bench/site_eval.py``)."""
    sites = [r["site"] for r in (quality or {}).get("results", []) if r.get("site")]
    if not sites and not speed:
        return "Not run (`python -m bench.search_eval markdown realdocs`, `python -m bench.site_eval --speed`).\n"
    parts = ["`pipeline eval SITE --questions FILE` asks each question through the site's own search (`Site.search`, "
             "each as a reader's first query) and counts it found when one of the first k hits lies in the section it "
             "expects. The `pipeline eval` table under the markdown and realdocs tables above holds its figures on those sets "
             "built as sites, computed by the product's code (`bench/site_eval.py` calls `pipeline.evaluate`); the "
             "command above each such table prints the same numbers. They count sections found, not characters of the gold "
             "span, at one chunk budget (the build's default), so they do not equal the R@5 columns. Heading probes (what "
             "`pipeline eval` asks of a site without questions) beside them, and how their per-document recall tracks the "
             "questions' (docs/DECISIONS.md \"Evaluation: probes are section headings\"):", ""]
    for s in sites:
        rhos = ", ".join(f"{m} {t['spearman']:+.2f}" for m, t in s["tracking"].items() if t["spearman"] is not None)
        parts.append(f"- {s['set']}: {s['questions']} questions, {s['probes']} {s['probe_kind']} probes; probes vs questions "
                     f"per document (Spearman over {next(iter(s['tracking'].values()))['documents']} documents): {rhos or '–'}")
    if speed:
        if "skipped" in speed:
            parts.append(f"\nSpeed: skipped ({speed['skipped']}).")
        else:
            runs = ", ".join(f"{x:.1f}" for x in speed["seconds"])
            parts += ["", f"Speed: `{speed['command']}` on FastAPI's docs ({speed['documents']} documents, {speed['sections']} "
                      f"sections, no questions: {speed['questions']} {speed['questions_from']}s, methods "
                      f"{', '.join(speed['methods'])}), the whole process each time: median **{speed['median_seconds']:.1f} s** "
                      f"({runs} s; load average {speed['load'][0]:.1f} on {os.cpu_count()} cores after the runs). Target: under a minute."]
    return "\n".join(parts) + "\n"


def pagefind_section(pf: dict | None) -> str:
    """Pagefind as the lexical anchor (``bench/pagefind_eval.py``), paired with ours per question."""
    if not pf:
        return "Not run (`python -m bench.pagefind_eval`; needs Pagefind via `$PAGEFIND` or `npx`, and Chromium).\n"
    if "skipped" in pf:
        return f"Skipped: {pf['skipped']}\n"
    from bench.pagefind_eval import table as pagefind_table

    parts = [f"`bench/pagefind_eval.py`, {pf.get('pagefind', 'Pagefind')}: every chunk of a set at each budget is one HTML "
             "page (its markdown rendered; the document title as `<h1>` when the chunk has none), indexed by Pagefind's CLI "
             "with its defaults (`--force-language en`) and searched with its own `pagefind.js` in headless Chromium; its "
             "result order is scored with our metric code and budgets (chunks it does not return follow in corpus order, "
             "as for our lexical ranking). Pagefind ANDs the words of a search (a word absent from the index is dropped), "
             "so a typed question rarely matches a page whole: `pagefind` is the question as typed (what a reader of a "
             "Pagefind site gets), `pagefind-keywords` the question without stop words (still AND), `pagefind-or` each "
             "keyword searched alone with Pagefind's own scores summed per page (OR semantics over Pagefind's index "
             "and scoring; not something its UI does). Paired rows: ours minus Pagefind, per question, budget-averaged. "
             "Vector and hybrid rows come from the `search` step's results when it scored the same questions and chunks.", ""]
    for r in pf.get("results", []):
        parts += [pagefind_table(r), ""]
    return "\n".join(parts)


def page_section(page: dict | None, synthetic: dict | None = None) -> str:
    """The search page in headless Chromium beside Pagefind (``bench/search_page.py``): FastAPI's
    docs, and a ~10k-chunk synthetic site."""
    if not page and not synthetic:
        return "Not run (`python -m bench.search_page`; needs Chromium).\n"
    from bench.search_page import page_table

    done = [r for r in (page, synthetic) if r and "skipped" not in r]
    if not done:
        return f"Skipped: {(page or synthetic)['skipped']}\n"
    first = done[0]
    parts = [
        f"`bench/search_page.py`, served by `pipeline serve` with gzip; Pagefind: {first.get('pagefind')}, the same "
        "documents rendered to HTML, one page per document, same server. "
        "Per client, some sessions (below), each a cold query (a fresh page at `#q=…`, HTTP cache off and cleared) "
        "then 9 warm ones (the hash changes on the same page); FastAPI: the realdocs set's first ten questions, synthetic: "
        "`search_bytes`' ten queries. ms: from navigation "
        "(cold) or from the hash change (warm) until the results and their excerpts are on screen; Pagefind: until its "
        f"first {5} results' data are loaded (what its default UI shows first). Requests and bytes are counted at the "
        "server (headers + gzip body), so Pagefind's web worker counts too; *code* = HTML, JS, CSS, WebAssembly; *data* "
        "= index and text. `+model`: the page built with MiniLM, cold = until re-ranked by the query model it loads, warm = "
        "a query once the model is loaded (it embeds, then searches). `page@<ref>`: the page's UI files at that commit, "
        "measured in turn with the current page. Results: hits counted by the page (`10+` shows as 10) or Pagefind's "
        "result count. A cold query's bytes include the page's navigation (every `index.json`), which it fetches "
        "alongside the search.",
        "",
    ]
    for r in done:
        chunks = f", {r['chunks']:,} chunks" if r.get("chunks") else ""
        parts += [f"**{r['site']}**{chunks}, {r['repeats']} sessions per client:", "", page_table(r), ""]
    return "\n".join(parts)
