// searchindex.js must read the same files as pipeline/client/searchindex.py for a topic-scoped
// query: the same scope, the same segments or topic term shards, the same file for a hit's record
// (vectors: tests/vectors/make_scoped_vectors.py). Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { documentStarts, recordContainer, scopeOf, scopedFiles } from "../../pipeline/assets/searchplan.js";

const { manifests, cases } = JSON.parse(readFileSync(new URL("../vectors/scoped.json", import.meta.url), "utf8"));

test("a topic filter scopes the query to Python's topics", () => {
  assert.ok(cases.filter((c) => c.scope !== null).length > 50);
  for (const c of cases) assert.deepEqual(scopeOf(manifests[c.manifest], c.prefix), c.scope, JSON.stringify(c));
});

test("a scope's postings come from Python's files: segments or the topics' own term shards", () => {
  const withShards = cases.filter((c) => c.files && c.files.some((f) => f.includes("/topics/")));
  assert.ok(withShards.length > 20);
  for (const c of cases.filter((x) => x.scope !== null)) {
    assert.deepEqual(scopedFiles(manifests[c.manifest], c.scope, c.terms), c.files, JSON.stringify(c));
  }
});

test("a hit's record comes from Python's file", () => {
  const kinds = new Set();
  for (const c of cases) {
    const meta = manifests[c.manifest];
    for (const [n, container] of c.records) {
      // a segment, a part or a record block (its first chunk and size), else null: records.json
      assert.deepEqual(recordContainer(meta, documentStarts(meta), c.scope, n), container, JSON.stringify([c.prefix, c.scope, n]));
      kinds.add(container === null ? "records.json" : container[0].split("/")[1]);
    }
  }
  assert.deepEqual([...kinds].sort(), ["blocks", "parts", "records.json", "segments"]);
});
