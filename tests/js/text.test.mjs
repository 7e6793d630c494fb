// The search page's pure helpers: pipeline/assets/text.js (excerpts, highlighting, breadcrumbs)
// and the result list rules of pipeline/assets/search-ui.js (one result per chunk, fusion).
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";

import { breadcrumb, cleanHeading, excerpt, highlight, plainText, queryTerms } from "../../pipeline/assets/text.js";
import { dedupe, fuse } from "../../pipeline/assets/search-ui.js";

const joined = (segments) => segments.map((s) => s.text).join("");
const hits = (segments) => segments.filter((s) => s.hit).map((s) => s.text);

test("headings lose markers, MkDocs attribute lists and backticks", () => {
  assert.equal(cleanHeading("## Use `CORSMiddleware` { #use-corsmiddleware }"), "Use CORSMiddleware");
  assert.equal(cleanHeading("### Title {.note #x}"), "Title");
  assert.equal(cleanHeading("Sets {a, b} in Python"), "Sets {a, b} in Python"); // not an attribute list
  assert.deepEqual(
    breadcrumb("## Dependencies with `yield` { #dependencies-with-yield } > ### A > B { #a-b }"),
    ["Dependencies with yield", "A > B"],
  );
  assert.deepEqual(breadcrumb(""), []);
});

test("query terms drop stop words, and the last word is also a prefix", () => {
  const terms = queryTerms("How do I configure the depend");
  assert.deepEqual(terms.map((t) => t.text), ["configure", "depend"]);
  assert.deepEqual(terms.map((t) => t.prefix), [false, true]);
  assert.deepEqual(queryTerms("the of").map((t) => t.text), ["the", "of"]); // only stop words: keep them
});

test("highlight marks whole words by stem and keeps the text unchanged", () => {
  const text = "Caching vectors: the cache keeps cached vectors; a cachet is not one.";
  const segments = highlight(text, queryTerms("cached vector x"));
  assert.equal(joined(segments), text);
  assert.deepEqual(hits(segments), ["Caching", "vectors", "cache", "cached", "vectors"]);
  assert.deepEqual(hits(highlight("dependencies and dependency", queryTerms("depend"))), ["dependencies", "dependency"]);
  assert.deepEqual(highlight("", queryTerms("x")), []);
});

test("plain text of markdown keeps words and code identifiers, drops markup", () => {
  const md = "## Use `CORSMiddleware` { #x }\n\n* Import **`root_path`** from [the docs](a.md).\n\n```python\nprint(1)\n```\n\n{* ../src/a.py hl[2] *}\n\n| a | b |\n|---|---|\n| _c_ | d |\n";
  assert.equal(plainText(md), "Import root_path from the docs. print(1) a b c d");
  assert.equal(plainText("A <script>x</script> stays text"), "A <script>x</script> stays text");
});

test("the excerpt sits where the most distinct terms meet and marks its cuts", () => {
  const filler = Array.from({ length: 60 }, (_, i) => `w${i}`).join(" ");
  const text = `${filler} alpha ${filler} alpha then beta here ${filler}`;
  const segments = excerpt(text, queryTerms("alpha beta"), 12);
  assert.equal(segments[0].text, "… ");
  assert.equal(segments.at(-1).text, " …");
  assert.deepEqual(hits(segments), ["alpha", "beta"]);
  const words = joined(segments).replace(/…/gu, "").trim().split(/\s+/u);
  assert.ok(words.length <= 12);
  assert.deepEqual(hits(excerpt("short text here", queryTerms("nothing"))), []);
  assert.equal(joined(excerpt("short text here", queryTerms("nothing"))), "short text here");
});

test("one result per chunk, at its best place; fusion counts a chunk once per list", () => {
  const hit = (source, index, method = "keyword") => ({ topic: "t", source, index, method });
  assert.deepEqual(dedupe([hit("a.md", 1), hit("a.md", 2), hit("a.md", 1)]).map((h) => h.index), [1, 2]);
  const fused = fuse([[hit("a.md", 1), hit("b.md", 0)], [hit("b.md", 0, "embedding"), hit("c.md", 3, "embedding")]]);
  assert.deepEqual(fused.map((h) => `${h.source}#${h.index}`), ["b.md#0", "a.md#1", "c.md#3"]);
});
