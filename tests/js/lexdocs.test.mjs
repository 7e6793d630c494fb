// searchindex.js must choose the same vector documents from a lexical ranking and decode vector
// shard rows as pipeline/client/searchindex.py and pipeline/siteformat/vectorshards.py do
// (vectors: tests/vectors/make_lexdocs_vectors.py). Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { withinSlots } from "../../pipeline/assets/lexical.js";
import { lexicalDocuments } from "../../pipeline/assets/searchplan.js";
import { decodeRows } from "../../pipeline/assets/searchrankings.js";

const vectors = JSON.parse(readFileSync(new URL("../vectors/lexdocs.json", import.meta.url), "utf8"));

test("the documents of the first lexical hits are Python's", () => {
  assert.ok(vectors.documents.length > 10);
  for (const c of vectors.documents) {
    const meta = { documents: c.documents, vectors: { shards: [[0, c.documents.length, "x"]] } };
    assert.deepEqual(lexicalDocuments(meta, c.lexical), c.chosen, JSON.stringify(c));
  }
});

test("shard rows decode as in Python", () => {
  const { dimension, base64, present, vectors: rows } = vectors.rows;
  const bytes = Uint8Array.from(Buffer.from(base64, "base64"));
  const got = decodeRows(bytes.buffer, dimension, "x");
  assert.deepEqual(Array.from(got.present), present);
  rows.forEach((row, r) => row.forEach((v, j) => assert.ok(Math.abs(got.vectors[r * dimension + j] - v) < 1e-6, `${r},${j}`)));
  assert.throws(() => decodeRows(bytes.subarray(1).slice().buffer, dimension, "x"), /whole number/);
});

test("a ranking with some documents left without vectors is Python's", () => {
  assert.ok(vectors.within_slots.length > 10);
  for (const c of vectors.within_slots) {
    assert.deepEqual(withinSlots(c.lexical, c.fused, new Set(c.covered)), c.ranked, JSON.stringify(c).slice(0, 200));
  }
});
