// Which files a _search/ query reads, and its request budget: the twin of
// pipeline/client/searchplan.py (where the fetch rules and the limits VECTOR_TOPICS, VECTOR_ROWS,
// BUNDLE_TOPICS, LEX_DOCUMENTS and REQUEST_BUDGET are described). Pure functions of the manifest
// (`meta`), the documents' first chunk numbers (`starts`: documentStarts) and the query's
// Filters (searchfilters.js); no fetch.

import { BUNDLE_TOPICS, LEX_DOCUMENTS, SEARCH_DIR, VECTOR_ROWS, VECTOR_TOPICS, shardOf } from "./lexical.js";
import { pageNames } from "./vectors.js";

/** A content-named file's path from the site root (pipeline/search/layout.py content_path). */
export function searchPath(kind, name) {
  return `${SEARCH_DIR}/${kind}/${name}.${kind === "vectors" || kind === "centroids" ? "bin" : "json"}`;
}

/** Each document's first chunk number, and the chunk count last (searchfiles.py doc_starts). */
export function documentStarts(meta) {
  const starts = [0];
  for (const c of meta.documents) starts.push(starts[starts.length - 1] + c);
  return starts;
}

/** The numbers of the topics whose own files a query scoped to `prefix` reads instead of the
 *  site-wide files: those it matches, when it matches 1 to BUNDLE_TOPICS topics that all have
 *  segments or their own shards; else null (searchindex.py scope). */
export function scopeOf(meta, prefix) {
  if (prefix === null || prefix === undefined) return null;
  const clean = prefix.replace(/^\/+|\/+$/g, "");
  const matched = [];
  meta.topics.forEach((t, i) => {
    if (!clean || t.id === clean || t.id.startsWith(`${clean}/`)) matched.push(i);
  });
  if (!matched.length || matched.length > BUNDLE_TOPICS || !matched.every((i) => meta.topics[i].segments || meta.topics[i].shards)) return null;
  return matched;
}

/** The files holding the postings of `terms` in the `scope` topics: a topic's segments, or its
 *  own shard of each term, in topic then term order, each once (searchindex.py scoped_files). */
export function scopedFiles(meta, scope, terms) {
  const files = [];
  for (const i of scope) {
    const t = meta.topics[i];
    if (t.segments) for (const [, , name] of t.segments) files.push(searchPath("segments", name));
    else for (const term of terms) files.push(searchPath("topics", t.shards[shardOf(term, t.shards.length)]));
  }
  return [...new Set(files)];
}

/** [file, its first chunk number, its chunks] holding chunk n's record, or null when records.json
 *  does: a scope topic's segment, else a small site's part, else a record block of its topic
 *  (searchindex.py _container; `starts`: documentStarts(meta)). */
export function recordContainer(meta, starts, scope, n) {
  const d = lastAtMost(starts, n);
  const i = lastAtMost(meta.topics.map((t) => t.start), n);
  const t = meta.topics[i];
  const inScope = Boolean(scope) && scope.includes(i);
  const inRange = (kind, ranges) => {
    const [first, count, name] = ranges[lastAtMost(ranges.map(([f]) => f), d)];
    return [searchPath(kind, name), starts[first], starts[first + count] - starts[first]];
  };
  if (inScope && t.segments) return inRange("segments", t.segments);
  if (meta.parts && !(inScope && t.blocks)) return inRange("parts", meta.parts);
  if (meta.records && !(inScope && t.blocks)) return null;
  return inRange("blocks", t.blocks);
}

/** The last index i with starts[i] <= n (starts ascending; Python's bisect_right - 1). */
export function lastAtMost(starts, n) {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (starts[mid] <= n) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

/** [[first chunk, rows]] of the documents of the first lexical hits, in hit order: at most
 *  LEX_DOCUMENTS and VECTOR_ROWS rows, the first always (searchindex.py lexical_documents). */
export function lexicalDocuments(meta, lexical, starts = documentStarts(meta)) {
  const counts = meta.documents;
  if (!meta.vectors?.shards?.length) return [];
  const chosen = [];
  const seen = new Set();
  let taken = 0;
  for (const [n] of lexical) {
    const d = lastAtMost(starts, n);
    if (seen.has(d)) continue;
    seen.add(d);
    if (chosen.length === LEX_DOCUMENTS || (chosen.length && taken + counts[d] > VECTOR_ROWS)) break;
    chosen.push([starts[d], counts[d]]);
    taken += counts[d];
  }
  return chosen;
}

/** [file, its first chunk number] of the vector shard holding chunk n's row (searchindex.py vector_shard). */
export function vectorShard(meta, starts, n) {
  const shards = meta.vectors.shards;
  const [first, , name] = shards[lastAtMost(shards.map(([f]) => f), lastAtMost(starts, n))];
  return [searchPath("vectors", name), starts[first]];
}

/** [[first chunk, end, topic]] of the topics `filters` allows, in site order. */
export function topicRanges(meta, filters) {
  return meta.topics.filter((t) => filters.topicOk(t.id)).map((t) => [t.start, t.start + t.count, t]);
}

/** The chunks a query with `filters` ranks as its collection (the idf counts them): every chunk
 *  of the topics its topic filter allows (searchplan.py collection). */
export function collection(meta, filters) {
  return filters.topic === null ? meta.chunks : topicRanges(meta, filters).reduce((sum, [a, b]) => sum + b - a, 0);
}

/** A small site's parts, in site order ([] elsewhere). */
export function partFiles(meta) {
  return (meta.parts ?? []).map(([, , name]) => searchPath("parts", name));
}

/** The segment files of the scope topics (read whole, before any ranking: their records serve
 *  prompt hits too); [] for an unscoped query. */
export function segmentFiles(meta, scope) {
  return (scope ?? []).flatMap((i) => (meta.topics[i].segments ?? []).map(([, , name]) => searchPath("segments", name)));
}

/** The site-wide shard file `term`'s postings need, or null when `start` (a fetched records.json:
 *  {records, terms}) holds them. */
export function termFile(meta, start, term) {
  return start && Object.hasOwn(start.terms, term) ? null : searchPath("terms", meta.terms[shardOf(term, meta.terms.length)]);
}

/** The files the lexical ranking of `terms` reads: the scope's own files, a small site's parts,
 *  or one term shard per distinct term's shard (searchplan.py lexical_files). */
export function lexicalFiles(meta, scope, start, terms) {
  if (scope) return scopedFiles(meta, scope, terms);
  if (meta.parts) return partFiles(meta);
  return [...new Set(terms.map((term) => termFile(meta, start, term)).filter((rel) => rel))];
}

/** Whether a query with `filters` reads its vectors from the matched topics' vector pages whole
 *  instead of vector shards: a topic filter matching at most VECTOR_TOPICS topics of at most
 *  VECTOR_ROWS rows and VECTOR_TOPICS pages in all, each with vectors (searchplan.py whole_topics). */
export function wholeTopics(meta, filters) {
  if (filters.topic === null) return false;
  const matched = topicRanges(meta, filters).map(([, , t]) => t);
  return matched.length > 0 && matched.length <= VECTOR_TOPICS
    && matched.reduce((sum, t) => sum + t.count, 0) <= VECTOR_ROWS && matched.every((t) => t.embeddings)
    && matched.reduce((sum, t) => sum + topicPages(t).length, 0) <= VECTOR_TOPICS;
}

/** The site paths of a meta.json topic's vector pages (vectors.js pageNames of its `docs`
 *  documents, beside its `embeddings`, the first); [] when it has none (searchplan.py topic_pages). */
export function topicPages(topic) {
  if (!topic.embeddings) return [];
  const slash = topic.embeddings.lastIndexOf("/");
  const folder = slash < 0 ? "" : topic.embeddings.slice(0, slash + 1);
  return pageNames(topic.docs).map((name) => folder + name);
}

/** The vector pages read of each chosen topic, in order: the first `pages` of them all
 *  (searchplan.py vector_files). */
export function vectorFiles(chosen, pages) {
  let left = pages;
  return chosen.map((t) => {
    const own = topicPages(t).slice(0, Math.max(0, left));
    left -= own.length;
    return own;
  });
}

/** How many vector files a query may still fetch: `requestBudget` less the requests it made so far
 *  (at least one); null: no cap, every chosen document's shard (searchplan.py vector_budget). */
export function vectorBudget(site, requestBudget) {
  if (requestBudget === null) return LEX_DOCUMENTS;
  return Math.max(1, requestBudget - ((site._searchFetches ?? 0) - (site._searchSettled ?? 0)));
}
