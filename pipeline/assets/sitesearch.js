// Search over a built site (Site.search): the twin of pipeline/client/sitesearch.py. One job: a
// query to hits, by one of METHODS (the Python client's list). On a site with _search/, every
// method but "keyword" runs searchindex.js (the query embedded by the site's static encoder where
// vectors are asked for); on one without, and always for "keyword", every topic is read and its
// chunks ranked by SimHash or keywords (ranking.js). Navigating and reading the site is
// client.js's job.

import { ALGORITHM, simhash64, words } from "./simhash.js";
import { DEFAULT_MAX_DISTANCE } from "./client.js";
import { SiteError } from "./errors.js";
import { rowOf } from "./vectors.js";
import { hit, keywordHits, passes, simhashHits } from "./ranking.js";
import { indexedSearch } from "./searchindex.js";

export const METHODS = ["auto", "simhash", "embedding", "keyword", "lexical", "hybrid"]; // as pipeline/client/sitesearch.py
export const PROMOTION_LEVELS = ["standard", "important", "critical"]; // as pipeline/promotion.py LEVELS

/** [[topic, its chunks that pass the filters]] of every topic under `topic`: a walk, each topic read whole. */
async function walkCandidates(site, { keyword = null, isCode = null, topic = null, promotionLevel = null } = {}) {
  const prefix = topic === null || topic === undefined ? null : topic.replace(/^\/+|\/+$/g, "");
  const within = (id) => prefix === null || prefix === "" || id === prefix || id.startsWith(`${prefix}/`);
  const indexes = [];
  for (const node of await site.topics()) if (within(node.id)) indexes.push(await site.topic(node));
  return indexes.map((ti) => [ti, ti.documents.flatMap((d) => d.items).filter((c) => passes(c, { keyword, isCode, promotionLevel }))]);
}

/**
 * The `k` best chunks for `query` by `method` (METHODS, as Site.search in Python). With a
 * _search/ index every method but "keyword" runs searchindex.js (docs/ARCHITECTURE.md,
 * "`_search/`"): "auto" gives SimHash prompt matches, then the lexical and vector rankings
 * fused; "hybrid", "lexical", "simhash" one part; "embedding" the vector ranking alone (the
 * query's vector: queryVector, embed, else the site's static encoder; without any of them a
 * SiteError). Without an index (a walk of every topic): "auto" tries SimHash prompt matching
 * (radius: maxDistance, else the topic's prompt_matching.max_distance, else
 * DEFAULT_MAX_DISTANCE), then keyword scoring; "simhash" or "keyword" runs one; "lexical",
 * "hybrid" and "embedding" need the index. Filters: keyword, isCode, topic (and below),
 * promotionLevel (the document's level, exactly), and with the index headerPath, entryType, tags.
 */
export async function siteSearch(site, query, options = {}) {
  if (options.promotionLevel !== null && options.promotionLevel !== undefined) {
    // a level no document can have is a mistake, not "no hits" (as the build and the Python client)
    const level = String(options.promotionLevel).trim().toLowerCase();
    if (!PROMOTION_LEVELS.includes(level)) {
      throw new RangeError(`promotion_level must be one of ${PROMOTION_LEVELS.join(", ")}, not ${JSON.stringify(options.promotionLevel)}`);
    }
    options = { ...options, promotionLevel: level };
  }
  const { k = 5, keyword = null, isCode = null, topic = null, promotionLevel = null, maxDistance = null, method = "auto" } = options;
  if (!METHODS.includes(method)) throw new RangeError(`method must be one of ${METHODS.join(", ")}, got ${method}`);
  if (k <= 0 || words(query).length === 0) return []; // a query without words has no hits
  // an unscoped query starts from records.json (the manifest with every record, on a site small
  // enough): its hits' records then cost no request of their own
  const unscoped = topic === null || topic === undefined;
  const index = method === "keyword" ? null : await site.searchIndex({ records: unscoped });
  if (index) return indexedSearch(site, index, query, options);
  if (method === "lexical" || method === "hybrid" || method === "embedding") {
    throw new SiteError("this site has no search index (_search/meta.json); rebuild it", site.url, "error");
  }
  const groups = await walkCandidates(site, { keyword, isCode, topic, promotionLevel });
  if (method !== "keyword") {
    const entries = [];
    for (const [ti, chunks] of groups) {
      if ((ti.matching.algorithm ?? ALGORITHM) !== ALGORITHM) continue;
      const published = ti.matching.max_distance;
      const radius = maxDistance ?? (Number.isInteger(published) ? published : DEFAULT_MAX_DISTANCE);
      for (const chunk of chunks) entries.push([chunk, radius]);
    }
    const hits = simhashHits(entries, simhash64(query));
    if (hits.length || method === "simhash") return hits.slice(0, k);
  }
  return keywordHits(groups.flatMap(([, chunks]) => chunks), query).slice(0, k);
}

/** Rank a walk's chunks by cosine with a query vector the caller computed with the site's model. */
export async function searchByVector(site, vector, { k = 5, keyword = null, isCode = null, topic = null, promotionLevel = null } = {}) {
  const scored = [];
  for (const [ti, chunks] of await walkCandidates(site, { keyword, isCode, topic, promotionLevel })) {
    const table = await site.embeddings(ti.node);
    if (!table) continue;
    if (table.dimension !== vector.length) {
      throw new SiteError(`query has ${vector.length} dimensions, embeddings have ${table.dimension}`, ti.node.url, "error");
    }
    let qn = Math.hypot(...vector) || 1;
    for (const chunk of chunks) {
      const r = rowOf(table, chunk.document, chunk.index);
      if (r === null) continue;
      let dot = 0;
      for (let j = 0; j < table.dimension; j++) dot += table.vectors[r * table.dimension + j] * vector[j];
      scored.push({ chunk, score: dot / qn, position: scored.length });
    }
  }
  scored.sort((a, b) => b.score - a.score || a.position - b.position);
  return scored.slice(0, k).map((s) => hit(s.chunk, s.score, "embedding"));
}
