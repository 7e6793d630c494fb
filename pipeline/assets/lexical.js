// Index terms and lexical scoring, identical to pipeline/search/text.py and pipeline/search/rank.py.
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

import { STOP_WORDS, normalize } from "./simhash.js";
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
