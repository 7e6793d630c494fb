// The browser's readers of citation data must agree with Python's: search records' source lines
// (unpackRecords = pipeline/siteformat/packedrecords.py's unpack) and the public URLs of a chunk and of
// its section (client.js = pipeline/siteformat/citations.py). Vectors: tests/vectors/make_citations_vectors.py.
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { baseOf, fileUrl, cited, publicBase, sectionUrl } from "../../pipeline/assets/client.js";
import { unpackRecords } from "../../pipeline/assets/searchmanifest.js";

const { records, urls } = JSON.parse(readFileSync(new URL("../vectors/citations.json", import.meta.url), "utf8"));

test("packed records unpack to Python's records, source lines included", () => {
  assert.ok(records.length >= 20);
  let lines = 0;
  for (const c of records) {
    assert.deepEqual(unpackRecords(c.packed, (n) => c.topic_of[n]), c.records);
    lines += c.records.filter((r) => r.start_line !== null).length;
  }
  assert.ok(lines > 50);
});

test("public URLs of a chunk and of its section are Python's", () => {
  assert.ok(urls.length >= 50);
  for (const c of urls) {
    const base = baseOf(c.self_href);
    const site = publicBase(base, c.reading_root);
    assert.deepEqual([base, site], [c.base_url, c.site_url], JSON.stringify(c));
    assert.equal(fileUrl(site, c.path), c.chunk_url);
    assert.equal(sectionUrl(site, c.topic, c.document, c.index), c.section_url);
    const chunk = cited({ topic: c.topic, document: c.document, index: c.index, path: c.path }, 3, 9, site);
    assert.deepEqual([chunk.startLine, chunk.endLine, chunk.url, chunk.sectionUrl], [3, 9, c.chunk_url, c.section_url]);
  }
});
