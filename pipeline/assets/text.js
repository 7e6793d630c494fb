// Pure text helpers of the search page (no DOM): clean headings and breadcrumbs, the query's
// terms, plain text of a markdown chunk, and an excerpt around the matching terms split into
// highlighted and plain segments. The page turns segments into text nodes and <mark> elements,
// so nothing here is ever parsed as HTML. Tested under node: tests/js/text.test.mjs.

import { STOP_WORDS } from "./simhash.js";

const ATTR_LIST = /\s*\{\s*[#.:][^{}]*\}\s*$/u; // MkDocs / Python-Markdown attribute list: "{ #id .cls }"
const WORD = /[\p{L}\p{N}_]+(?:['’.-][\p{L}\p{N}_]+)*/gu;

/** A heading without its "#" markers, a trailing MkDocs attribute list and markup backticks. */
export function cleanHeading(text) {
  let out = String(text ?? "").trim().replace(/^#{1,6}\s+/u, "");
  out = out.replace(ATTR_LIST, "");
  return out.replaceAll("`", "").replace(/\s+/gu, " ").trim();
}

/** A header path "## A { #a } > ### B" as clean parts ["A", "B"] (empty parts dropped). */
export function breadcrumb(headerPath) {
  return String(headerPath ?? "")
    .split(/\s+>\s+(?=#)/u)
    .map(cleanHeading)
    .filter(Boolean);
}

/**
 * A light English stem used only to decide what to highlight ("caching" and "cached" both
 * become "cach"); ranking is the engine's business, this only has to agree with a reader.
 */
export function stem(word) {
  const w = word.toLowerCase();
  for (const [suffix, repl] of [["ies", "y"], ["ing", ""], ["ed", ""], ["es", ""], ["ly", ""], ["s", ""], ["e", ""]]) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 4) return w.slice(0, w.length - suffix.length) + repl;
  }
  return w;
}

/**
 * The terms to highlight for `query`: lower-case words without stop words (all words when
 * every word is one), each once. The last word is a prefix too while the reader is typing.
 */
export function queryTerms(query) {
  const all = [...String(query ?? "").toLowerCase().matchAll(WORD)].map((m) => m[0]);
  const kept = all.filter((w) => !STOP_WORDS.has(w));
  const terms = [...new Set(kept.length ? kept : all)];
  return terms.map((t, i) => ({ text: t, stem: stem(t), prefix: i === terms.length - 1 && t.length >= 3 }));
}

/** True when `word` (as written in the text) matches one of `terms`. */
export function matches(word, terms) {
  const w = word.toLowerCase();
  const s = stem(w);
  return terms.some((t) => w === t.text || s === t.stem || (t.prefix && w.startsWith(t.text)));
}

/**
 * Readable plain text of a chunk's markdown for excerpts: heading lines dropped (the breadcrumb
 * shows them), links and images reduced to their text, emphasis, backticks, fence markers,
 * table pipes and attribute lists removed, white space collapsed. Raw HTML stays as text (the
 * renderer shows it as text too: markdown-it runs with html: false).
 */
export function plainText(markdown) {
  const lines = String(markdown ?? "").split(/\r?\n/u);
  const kept = [];
  for (const line of lines) {
    if (/^\s{0,3}#{1,6}\s/u.test(line)) continue; // headings: shown as the breadcrumb
    if (/^\s*(```|~~~)/u.test(line)) continue; // fence markers (the code itself stays)
    if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/u.test(line)) continue; // table delimiter rows
    kept.push(line.replace(/^\s*(?:[-*+]|\d+[.)])\s+/u, "")); // list markers
  }
  return kept
    .join(" ")
    .replace(/\{\*[^{}]*\*\}/gu, " ") // MkDocs snippet includes "{* file.py hl[3] *}"
    .replace(/!\[([^\]]*)\]\([^)]*\)/gu, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/gu, "$1")
    .replace(/\{\s*[#.:][^{}]*\}/gu, " ")
    .replace(/(^|\s)(?:!!!|\?\?\?\+?|\/\/\/)\s*[\w-]*/gu, " ") // admonition markers
    .replace(/[`*]+/gu, "") // code spans and emphasis: the words stay
    .replace(/(^|\s)_+|_+(?=[\s.,;:!?)]|$)/gu, "$1") // _emphasis_, but snake_case stays whole
    .replace(/\|/gu, " ")
    .replace(/(^|\s)>(?=\s)/gu, " ") // block quote markers
    .replace(/\s+/gu, " ")
    .trim();
}

/**
 * `text` cut into segments [{text, hit}] where `hit` marks words matching `terms`.
 * Concatenating the segments' text gives `text` back unchanged.
 */
export function highlight(text, terms) {
  const out = [];
  let last = 0;
  if (terms.length) {
    for (const m of String(text).matchAll(WORD)) {
      if (!matches(m[0], terms)) continue;
      if (m.index > last) out.push({ text: text.slice(last, m.index), hit: false });
      out.push({ text: m[0], hit: true });
      last = m.index + m[0].length;
    }
  }
  if (last < text.length) out.push({ text: text.slice(last), hit: false });
  return out;
}

/**
 * An excerpt of at most `width` words of `text` placed where the most distinct terms meet
 * (the earliest such window), as highlight() segments, with "…" where text was cut.
 * Without a match it is the first `width` words.
 */
export function excerpt(text, terms, width = 32) {
  const words = [...String(text).matchAll(/\S+/gu)];
  if (!words.length) return [];
  const hits = words.map((w) => {
    const found = new Set();
    for (const m of w[0].matchAll(WORD)) {
      for (const t of terms) {
        const lw = m[0].toLowerCase();
        if (lw === t.text || stem(lw) === t.stem || (t.prefix && lw.startsWith(t.text))) found.add(t.text);
      }
    }
    return found;
  });
  let best = 0;
  let bestScore = -1;
  for (let start = 0; start < Math.max(1, words.length - width + 1); start++) {
    const distinct = new Set();
    let count = 0;
    for (let i = start; i < Math.min(words.length, start + width); i++) {
      for (const t of hits[i]) distinct.add(t);
      count += hits[i].size;
    }
    const score = distinct.size * 1000 + count;
    if (score > bestScore) {
      bestScore = score;
      best = start;
    }
  }
  // Start a few words before the first match of the window, so the match has some context.
  const firstHit = hits.findIndex((h, i) => i >= best && h.size > 0);
  let start = firstHit >= 0 ? Math.max(0, Math.min(firstHit - 4, words.length - width)) : 0;
  start = Math.max(0, start);
  const end = Math.min(words.length, start + width);
  const from = words[start].index;
  const to = words[end - 1].index + words[end - 1][0].length;
  const segments = highlight(text.slice(from, to), terms);
  if (start > 0) segments.unshift({ text: "… ", hit: false });
  if (end < words.length) segments.push({ text: " …", hit: false });
  return segments;
}
