// searchindex.js must read the same files as pipeline/client/searchindex.py for a topic-scoped
// query: the same scope, the same bundles or topic term shards, the same record block of a hit
// (vectors: tests/vectors/make_scoped_vectors.py). Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { scopeOf, scopedFiles, topicRecordFile } from "../../pipeline/assets/searchindex.js";

const { manifests, cases } = JSON.parse(readFileSync(new URL("../vectors/scoped.json", import.meta.url), "utf8"));

test("a topic filter scopes the query to Python's topics", () => {
  assert.ok(cases.filter((c) => c.scope !== null).length > 50);
  for (const c of cases) assert.deepEqual(scopeOf(manifests[c.manifest], c.prefix), c.scope, JSON.stringify(c));
});

test("a scope's postings come from Python's files: bundles or the topics' own term shards", () => {
  const withShards = cases.filter((c) => c.files && c.files.some((f) => f.includes("/terms/")));
  assert.ok(withShards.length > 20);
  for (const c of cases.filter((x) => x.scope !== null)) {
    assert.deepEqual(scopedFiles(manifests[c.manifest], c.scope, c.terms), c.files, JSON.stringify(c));
  }
});

test("a hit's record comes from Python's file", () => {
  let own = 0;
  for (const c of cases) {
    const meta = manifests[c.manifest];
    for (const [n, rel] of c.records) {
      // topicRecordFile: the topic's own block, else (null) records.json or the site-wide block
      const got = topicRecordFile(meta, c.scope, n)
        ?? (meta.records ? `_search/${meta.records}` : `_search/chunks/${Math.floor(n / meta.block)}.json`);
      assert.equal(got, rel, JSON.stringify([c.prefix, c.scope, n]));
      own += rel.includes("/topics/");
    }
  }
  assert.ok(own > 50);
});
