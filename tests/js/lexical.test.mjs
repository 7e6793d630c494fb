// pipeline/assets/lexical.js + snowball.js must reproduce pipeline/search/text.py (PyStemmer) exactly.
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { stem } from "../../pipeline/assets/snowball.js";
import {
  TOKENIZER, cleanHeading, fnv1a32, fuse, lexicalRanking, rrf, sentenceRerank, sentences, terms,
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

test("lexical ranking sums impacts and breaks ties by chunk number", () => {
  const postings = new Map([["a", [[3, 5], [1, 5]]], ["b", [[1, 2], [7, 9]]]]);
  assert.deepEqual(lexicalRanking(postings), [[1, 7], [7, 9], [3, 5]].sort((x, y) => y[1] - x[1] || x[0] - y[0]));
  assert.deepEqual(lexicalRanking(postings, (n) => n !== 7), [[1, 7], [3, 5]]);
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
