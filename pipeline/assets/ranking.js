// Ranking a walk's chunks: the twin of pipeline/client/ranking.py, rule for rule (SimHash prompt
// matches, keyword scores, the filters a chunk passes) and the hit record both search paths return.

import { STOP_WORDS, hamming, normalize, words } from "./simhash.js";

/** A keyword compared case- and spacing-insensitively. */
export function normKeyword(text) {
  return normalize(text).split(/\s+/u).filter(Boolean).join(" ");
}

/** True when `chunk` lists `keyword` (if given) and has the wanted `isCode` and `promotionLevel` (if given). */
export function passes(chunk, { keyword = null, isCode = null, promotionLevel = null } = {}) {
  if (isCode !== null && isCode !== undefined && chunk.isCode !== isCode) return false;
  if (promotionLevel !== null && promotionLevel !== undefined && chunk.promotionLevel !== promotionLevel) return false;
  if (keyword !== null && keyword !== undefined) {
    const wanted = normKeyword(keyword);
    return chunk.keywords.some((k) => normKeyword(k.name) === wanted);
  }
  return true;
}

export function hit(chunk, score, method, distance = null) {
  return {
    chunk,
    topic: chunk.topic,
    source: chunk.source,
    href: chunk.href,
    startLine: chunk.startLine,
    endLine: chunk.endLine,
    url: chunk.url,
    sectionUrl: chunk.sectionUrl,
    headerPath: chunk.headerPath,
    title: chunk.title,
    index: chunk.index,
    isCode: chunk.isCode,
    promotionLevel: chunk.promotionLevel,
    pageUrl: chunk.pageUrl ?? null,
    score,
    method,
    distance,
  };
}

/**
 * Chunks holding a prompt hash within their radius of `queryHash` (BigInt), closest first.
 * `entries`: [chunk, radius] pairs. Ties: more hashes in range, then site order.
 */
export function simhashHits(entries, queryHash) {
  if (queryHash === 0n) return [];
  const found = [];
  entries.forEach(([chunk, radius], position) => {
    const close = chunk.promptHashes.map((h) => hamming(h, queryHash)).filter((d) => d <= radius);
    if (close.length) {
      const best = Math.min(...close);
      found.push({ key: [best, -close.length, position], hit: hit(chunk, 1 - best / 64, "simhash", best) });
    }
  });
  found.sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.key[2] - b.key[2]);
  return found.map((f) => f.hit);
}

/** The query's normalised words without stop words (all words if every word is one). */
export function queryWords(query) {
  const all = words(query);
  const kept = all.filter((w) => !STOP_WORDS.has(w));
  return new Set(kept.length ? kept : all);
}

/**
 * Chunks scored by the query's words, best first, zero scores left out: the authority score
 * of each chunk keyword all of whose words are query words, plus one per query word among the
 * words of the chunk's title and header path.
 */
export function keywordHits(chunks, query) {
  const wanted = queryWords(query);
  if (wanted.size === 0) return [];
  const found = [];
  chunks.forEach((chunk, position) => {
    let score = 0;
    for (const kw of chunk.keywords) {
      const kwWords = words(kw.name);
      if (kwWords.length && kwWords.every((w) => wanted.has(w))) score += kw.score;
    }
    for (const w of new Set(words(`${chunk.title} ${chunk.headerPath}`))) if (wanted.has(w)) score += 1;
    if (score > 0) found.push({ score, position, hit: hit(chunk, score, "keyword") });
  });
  found.sort((a, b) => b.score - a.score || a.position - b.position);
  return found.map((f) => f.hit);
}

/** Round robin over sequences: the first of each in turn, then the second of each, ... */
export function interleave(sequences) {
  const out = [];
  const longest = Math.max(0, ...sequences.map((s) => s.length));
  for (let rank = 0; rank < longest; rank++) for (const s of sequences) if (rank < s.length) out.push(s[rank]);
  return out;
}
