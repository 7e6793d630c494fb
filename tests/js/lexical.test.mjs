// pipeline/assets/lexical.js + snowball.js must reproduce pipeline/siteformat/searchtext.py (PyStemmer) exactly.
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { stem } from "../../pipeline/assets/snowball.js";
import {
  TOKENIZER, cleanHeading, decodeDocumentPostings, decodePostings, fnv1a32, fuse, idfLevel, lexicalRanking, rrf,
  sentenceRerank, sentences, terms,
} from "../../pipeline/assets/lexical.js";

const vectors = JSON.parse(readFileSync(new URL("../vectors/lexical.json", import.meta.url), "utf8"));

test("vectors were made for this tokenizer", () => {
  assert.equal(vectors.tokenizer, TOKENIZER);
  assert.ok(Object.keys(vectors.stems).length > 3000);
});

test("every stem matches PyStemmer", () => {
  const wrong = Object.entries(vectors.stems).filter(([w, s]) => stem(w) !== s);
  assert.deepEqual(wrong.slice(0, 20).map(([w, s]) => [w, s, stem(w)]), []);
});

test("terms match Python for every text", () => {
  for (const v of vectors.texts) assert.deepEqual(terms(v.text), v.terms, JSON.stringify(v.text));
});

test("shard hash matches Python", () => {
  for (const [text, h] of Object.entries(vectors.fnv1a32)) assert.equal(fnv1a32(text), h, text);
});

test("code identifiers stay whole beside their parts", () => {
  assert.deepEqual(terms("unwrap_or_else"), ["unwrap_or_else", "unwrap", "els"]);
  assert.deepEqual(terms("root_path"), ["root_path", "root", "path"]);
});

test("idf levels are Python's", () => {
  assert.ok(vectors.ranking.idf.length > 60);
  for (const [chunks, df, level] of vectors.ranking.idf) assert.equal(idfLevel(chunks, df), level, `${chunks} ${df}`);
});

test("lexical ranking sums idf x level over the allowed postings and breaks ties by chunk number, as Python", () => {
  for (const c of vectors.ranking.ranked) {
    const postings = new Map(Object.entries(c.postings));
    const allowed = c.allowed ? (n) => c.allowed[0] <= n && n < c.allowed[1] : () => true;
    assert.deepEqual(lexicalRanking(postings, allowed, c.chunks), c.ranked, JSON.stringify(c).slice(0, 200));
  }
  // the same levels, a term in fewer of the collection's chunks: it weighs more
  const postings = new Map([["a", [[3, 5], [1, 5]]], ["b", [[1, 5], [7, 5], [8, 5]]]]);
  assert.deepEqual(lexicalRanking(postings, () => true, 10).map(([n]) => n), [1, 3, 7, 8]);
});

test("postings decode from a file's first chunk, or by document", () => {
  assert.deepEqual(decodePostings([[2, 1, 5], [9, 8, 7]], 100), [[102, 9], [103, 8], [108, 7]]);
  assert.deepEqual(decodeDocumentPostings([[1, 0, 2], [0, 1, 0], [4, 5, 6]], [0, 3, 5, 9, 12]), [[3, 4], [4, 5], [9, 6]]);
  assert.deepEqual(decodeDocumentPostings([[0, 3], [2, 1], [5, 6]], [0, 3, 6, 7, 8, 11], 1), [[5, 5], [9, 6]]);
});

test("rrf rewards agreement and fuse passes a lone list through", () => {
  const fused = rrf([[1, 2, 3], [3, 1, 4]]);
  assert.equal(fused[0][0], 1);
  assert.deepEqual(fuse([[5, 2]], []), [[5, 2]]);
});

test("clean headings drop anchors and markers", () => {
  assert.equal(cleanHeading("## Setup { #setup } > ### Run it {#run}"), "Setup > Run it");
});

const sentenceVectors = JSON.parse(readFileSync(new URL("../vectors/sentences.json", import.meta.url), "utf8"));

test("sentences split as rank.sentences", () => {
  for (const v of sentenceVectors.texts) assert.deepEqual(sentences(v.text), v.sentences, JSON.stringify(v.text));
});

test("sentenceRerank orders and scores as rank.sentence_rerank", () => {
  for (const c of sentenceVectors.rerank) {
    const fused = fuse(c.lexical, c.vector, "score");
    assert.deepEqual(sentenceRerank(fused, c.lexical, c.vector, new Map(c.best), { depth: c.depth }), c.expected);
  }
});
