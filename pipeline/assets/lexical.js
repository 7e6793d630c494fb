// Index terms and lexical scoring, identical to pipeline/siteformat/searchtext.py and pipeline/siteformat/searchrank.py.
//
// ES module, no build step; runs in browsers and Node >= 18. Tokenizer "lexical-v1":
//   1. NFKC, toLowerCase(), final sigma to sigma (as simhash.js).
//   2. Runs: maximal /[\p{L}\p{M}\p{N}_]+/u.
//   3. A run with "_" between two non-empty parts yields itself (outer "_" stripped, unstemmed),
//      then every run yields its "_"-separated parts as words.
//   4. Stop words (simhash.js STOP_WORDS) dropped; words of a-z only stemmed (Snowball English,
//      snowball.js); other words kept as they are.
//   5. Terms longer than MAX_TERM code points dropped.
// Checked against Python by tests/vectors/lexical.json (tests/js/lexical.test.mjs).

import { STOP_WORDS, hamming, normalize } from "./simhash.js";
import { stem } from "./snowball.js";

export const TOKENIZER = "lexical-v1";
export const MAX_TERM = 64;
const RUN = /[\p{L}\p{M}\p{N}_]+/gu;
const ASCII_WORD = /^[a-z]+$/;

/** Step 4 for one word: its term, or null for a stop word. */
export function wordTerm(word) {
  if (STOP_WORDS.has(word)) return null;
  return ASCII_WORD.test(word) ? stem(word) : word;
}

/** The index terms of `text` in order. */
export function terms(text) {
  const out = [];
  for (const run of normalize(text).match(RUN) ?? []) {
    const parts = run.split("_").filter((p) => p.length > 0);
    if (parts.length > 1) out.push(run.replace(/^_+|_+$/g, ""));
    for (const part of parts) {
      const term = wordTerm(part);
      if (term !== null) out.push(term);
    }
  }
  return out.filter((t) => Array.from(t).length <= MAX_TERM);
}

/** 32-bit FNV-1a of the UTF-8 bytes of `text`. */
export function fnv1a32(text) {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The shard file number of `term` among `shards` shards. */
export function shardOf(term, shards) {
  return fnv1a32(term) % shards;
}

// --- ranking (same arithmetic and tie rules as pipeline/siteformat/searchrank.py) ------------------------

export const RRF_K = 60;
export const FUSION_DEPTH = 100;
export const FUSIONS = ["rrf", "score"];
export const DEFAULT_FUSION = "score"; // chosen by paired evaluation, as searchrank.py
export const SCORE_ALPHA = 0.5;
export const SEARCH_DIR = "_search";
export const FORMAT = "pipeline-search";
export const VERSION = 8;
export const BUNDLE_TOPICS = 3; // a topic filter matching at most this many topics reads their own files (segments or topic shards)
export const IDF_SCALE = 256; // idf levels: round(256 * idf), at least 1 (searchrank.py idf_level)
export const VECTOR_TOPICS = 3; // at most this many topics' vectors per query ...
export const VECTOR_ROWS = 600; // ... and no more rows in all, except that the closest topic is always taken
export const LEX_DOCUMENTS = 5; // vector candidates: the documents of the first lexical hits, at most this many (and VECTOR_ROWS rows)
export const REQUEST_BUDGET = 6; // requests a cold query may make before its vectors (its shards take what is left, at least one); null: no cap (searchindex.py)

const byScoreThenNumber = (a, b) => (b[1] - a[1]) || (a[0] - b[0]);

/** The distinct index terms of `query` in first-seen order. */
export function queryTerms(query) {
  return [...new Set(terms(query))];
}

/** The integer idf of a term held by `df` of a collection's `chunks` chunks (searchrank.py idf_level). */
export function idfLevel(chunks, df) {
  return Math.max(1, Math.floor(IDF_SCALE * Math.log(1 + (chunks - df + 0.5) / (df + 0.5)) + 0.5));
}

/** A stored entry [chunk deltas, levels] as [[chunk number, level]], numbers counted from `base`. */
export function decodePostings([deltas, levels], base = 0) {
  const out = [];
  let number = base;
  for (let i = 0; i < deltas.length; i++) {
    number += deltas[i];
    out.push([number, levels[i]]);
  }
  return out;
}

/** An entry [document deltas, chunk indexes, levels] (a site-wide or a topic's own term shard's) as
 *  [[chunk number, level]], documents counted from `base` (`starts`: each document's first chunk
 *  number; searchrank.py decode_document_postings). */
export function decodeDocumentPostings([deltas, indexes, levels], starts, base = 0) {
  const out = [];
  let document = base;
  for (let i = 0; i < deltas.length; i++) {
    document += deltas[i];
    out.push([starts[document] + indexes[i], levels[i]]);
  }
  return out;
}

/** [[chunk number, integer score]] best first: over the query terms, idf level x tf level, the idf
 *  counting each term's allowed postings among the collection's `chunks` chunks (searchrank.py). */
export function lexicalRanking(postings, allowed = () => true, chunks) {
  const scores = new Map();
  for (const entries of postings.values()) {
    const kept = entries.filter(([number]) => allowed(number));
    const idf = idfLevel(chunks, kept.length);
    for (const [number, level] of kept) scores.set(number, (scores.get(number) ?? 0) + idf * level);
  }
  return [...scores.entries()].sort(byScoreThenNumber);
}

/** [[chunk number, distance]] for prompts [[hash BigInt, number, radius]]: closest, more hashes, number. */
export function promptRanking(prompts, queryHash) {
  if (queryHash === 0n) return [];
  const close = new Map();
  for (const [h, number, radius] of prompts) {
    const d = hamming(h, queryHash);
    if (d <= radius) {
      if (!close.has(number)) close.set(number, []);
      close.get(number).push(d);
    }
  }
  const ranked = [...close.entries()].map(([n, ds]) => [n, Math.min(...ds), ds.length]);
  ranked.sort((a, b) => a[1] - b[1] || b[2] - a[2] || a[0] - b[0]);
  return ranked.map(([n, d]) => [n, d]);
}

/** [[chunk number, cosine]] best first; `rows(r)` gives row r (unit length) of `numbers[r]`. */
export function vectorRanking(numbers, rowAt, dimension, query) {
  const qn = Math.sqrt(query.reduce((s, x) => s + x * x, 0));
  const q = query.map((x) => (qn ? x / qn : x));
  const out = numbers.map((n, r) => {
    const row = rowAt(r);
    let dot = 0;
    for (let j = 0; j < dimension; j++) dot += row[j] * q[j];
    return [n, dot];
  });
  return out.sort(byScoreThenNumber);
}

/** Reciprocal rank fusion of chunk-number rankings. */
export function rrf(rankings, { k = RRF_K, depth = FUSION_DEPTH } = {}) {
  const scores = new Map();
  for (const ranking of rankings) {
    ranking.slice(0, depth).forEach((number, i) => scores.set(number, (scores.get(number) ?? 0) + 1 / (k + i + 1)));
  }
  return [...scores.entries()].sort(byScoreThenNumber);
}

/** alpha * lexical / best lexical + (1 - alpha) * max(cosine, 0) over the first `depth` of each. */
export function scoreFusion(lexical, vector, { alpha = SCORE_ALPHA, depth = FUSION_DEPTH } = {}) {
  const top = lexical.length ? lexical[0][1] : 0;
  const scores = new Map();
  for (const [n, s] of lexical.slice(0, depth)) scores.set(n, alpha * (top ? s / top : 0));
  for (const [n, c] of vector.slice(0, depth)) scores.set(n, (scores.get(n) ?? 0) + (1 - alpha) * Math.max(c, 0));
  return [...scores.entries()].sort(byScoreThenNumber);
}

/** [[chunk number, fused score]] best first; with one list empty, the other unchanged. */
export function fuse(lexical, vector, fusion = DEFAULT_FUSION) {
  if (!FUSIONS.includes(fusion)) throw new RangeError(`fusion must be one of ${FUSIONS.join(", ")}, got ${fusion}`);
  if (!vector.length) return lexical.slice();
  if (!lexical.length) return vector.slice();
  if (fusion === "rrf") return rrf([lexical.map(([n]) => n), vector.map(([n]) => n)]);
  return scoreFusion(lexical, vector);
}

/** The lexical ranking with the covered chunks re-ordered among their own positions in fused
 * order, the rest in place, then fused chunks the lexical ranking lacks (rank.within_slots). */
export function withinSlots(lexical, fused, covered) {
  const order = new Map(fused.map(([n], i) => [n, i]));
  const score = new Map(fused);
  const slots = [];
  lexical.forEach(([n], i) => { if (covered.has(n)) slots.push(i); });
  const key = (i) => (order.has(lexical[i][0]) ? order.get(lexical[i][0]) : order.size);
  const members = slots.slice().sort((a, b) => key(a) - key(b) || a - b);
  const numbers = lexical.map(([n]) => n);
  slots.forEach((slot, j) => { numbers[slot] = lexical[members[j]][0]; });
  const seen = new Set(numbers);
  for (const [n] of fused) if (!seen.has(n)) numbers.push(n);
  return numbers.map((n) => [n, score.has(n) ? score.get(n) : 0]);
}

export const RERANK_DEPTH = 10; // sentence re-ranking re-orders the fused ranking's first 10, as searchrank.py
export const MIN_SENTENCE = 20;
const SENTENCE_END = ".!?";
const SPACE = " \t";

/** A chunk text's sentences, split exactly as rank.sentences (line breaks; ".!?" then spaces or tabs). */
export function sentences(text) {
  const pieces = [];
  let current = "";
  const chars = Array.from(text);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === "\r" || c === "\n") {
      pieces.push(current);
      current = "";
    } else if (SPACE.includes(c) && current && SENTENCE_END.includes(current[current.length - 1])) {
      pieces.push(current);
      current = "";
      while (i + 1 < chars.length && SPACE.includes(chars[i + 1])) i++;
    } else {
      current += c;
    }
  }
  pieces.push(current);
  return pieces.map((p) => p.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "")).filter((p) => Array.from(p).length >= MIN_SENTENCE);
}

/** The fused ranking's first `depth` re-ordered with sentence evidence, as rank.sentence_rerank. */
export function sentenceRerank(fused, lexical, vector, bestSentence, { alpha = SCORE_ALPHA, depth = RERANK_DEPTH } = {}) {
  const top = lexical.length ? lexical[0][1] : 0;
  const lex = new Map(lexical.slice(0, FUSION_DEPTH));
  const cos = new Map(vector.slice(0, FUSION_DEPTH));
  const head = fused.slice(0, depth).map(([n]) => {
    const c = Math.max(cos.get(n) ?? 0, 0);
    const s = Math.max(bestSentence.has(n) ? bestSentence.get(n) : (cos.get(n) ?? 0), 0);
    return [n, alpha * (top ? (lex.get(n) ?? 0) / top : 0) + (1 - alpha) * (c + s) / 2];
  });
  return [...head.sort(byScoreThenNumber), ...fused.slice(depth)];
}

const ANCHOR = /\s*\{\s*#[^}]*\}/g;
const MARKS = /(^|\s)#{1,6}\s+/g;

/** A header path without `{ #anchor }` attributes and `#` markers (as text.clean_heading). */
export function cleanHeading(text) {
  return text.replace(ANCHOR, "").replace(MARKS, "$1").trim();
}
