"""The report's "Static query encoder" section (issue 31), as markdown: query-vector agreement and hybrid
quality against the full model (``bench.static_encoder``), bytes and requests of a hybrid query in headless
Chromium beside Pagefind (``bench.encoder_page``), and ``pipeline search``'s whole-process time
(``bench.static_encoder --speed``). The tables are the benches' own, imported only when there is a result."""

from __future__ import annotations


def encoder_section(quality: dict | None, page: dict | None, speed: dict | None = None) -> str:
    if not quality and not page and not speed:
        return "Not run (`python -m bench.static_encoder`, `python -m bench.encoder_page`).\n"
    parts = ["The query embedded by the site's static encoder (`_search/encoder/`, docs/ARCHITECTURE.md \"Static query "
             "encoder\") instead of the full model. Protocol: `bench/static_encoder.py` (quality, paired per question, "
             "averaged over three nearby chunk budgets as in Search), `bench/encoder_page.py` (the browser).", ""]
    if quality:
        from bench.static_encoder import quality_table

        t = quality["table"]
        parts += [f"Table: {t['tokens']:,} tokens, fit {t['source']}. *kept*: (static − lexical) / (full − lexical) of "
                  "mean R@5 (target ≥ 67 % on every set, never below lexical). *client rule*: vectors of the first lexical "
                  "hits' ≤ 5 documents within the default request budget, as both clients fetch them.", "",
                  quality_table(quality), ""]
    if speed:
        from bench.static_encoder import speed_table

        parts += ["`pipeline search SITE QUERY --method hybrid` as a whole process (`bench.static_encoder --speed`):", "",
                  speed_table(speed), ""]
    if page and page.get("results"):
        from bench.encoder_page import bytes_table

        parts += ["A hybrid query through `client.js` in headless Chromium (`openSite` then `site.search(q, {method: "
                  "\"hybrid\"})`), served by `pipeline serve` with gzip, counted at the server; *encoder*: the "
                  "vocabulary and row shards; *lexical*: the same page with the encoder off. Pagefind: its cold "
                  f"query loads its library, wasm, index and first five results ({page.get('pagefind') or 'not run'}).", "",
                  bytes_table(page), ""]
        sizes = [f"{r['site']}: `_assets/` {r['assets_bytes'] / 1e6:.2f} MB, `_search/encoder/` {r['encoder_bytes'] / 1e6:.1f} MB"
                 for r in page["results"]]
        parts += ["Sizes on disk: " + "; ".join(sizes) + ".", ""]
    return "\n".join(parts)
