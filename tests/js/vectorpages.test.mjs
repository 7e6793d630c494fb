// searchplan.js must read the same vector pages as pipeline/client/searchplan.py: a topic's pages
// (topicPages), the first `pages` of the chosen topics' (vectorFiles), and whether a scoped query
// reads its topics' pages whole (wholeTopics) (vectors: tests/vectors/make_vectorpages_vectors.py).
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { Filters } from "../../pipeline/assets/searchfilters.js";
import { vectorFiles, wholeTopics } from "../../pipeline/assets/searchplan.js";

const { manifests, cases } = JSON.parse(readFileSync(new URL("../vectors/vectorpages.json", import.meta.url), "utf8"));

test("the chosen topics' pages within a budget are Python's", () => {
  assert.ok(cases.some((c) => c.files.some((own) => own.length > 1)));
  assert.ok(cases.some((c) => c.files.some((own) => own.length === 0)));
  for (const c of cases) {
    const meta = manifests[c.manifest];
    assert.deepEqual(vectorFiles(c.chosen.map((i) => meta.topics[i]), c.budget), c.files, JSON.stringify(c));
  }
});

test("a scope's pages are read whole exactly when Python reads them whole", () => {
  assert.ok(cases.some((c) => c.whole) && cases.some((c) => c.rows_fit && !c.whole && c.prefix));
  for (const c of cases) {
    assert.equal(wholeTopics(manifests[c.manifest], new Filters({ topic: c.prefix })), c.whole, JSON.stringify(c));
  }
});
