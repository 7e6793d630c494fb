// Search over a site's _search/ index: the browser twin of pipeline/client/searchindex.py, built,
// as it is, of one module a job named as their Python twins:
//
// - searchmanifest.js: the manifest and records.json checked, packed records unpacked;
// - searchplan.js: which files a query reads and its request budget;
// - searchrankings.js: the SimHash, lexical and vector rankings;
// - recordlookup.js: the hits' records, filtered (searchfilters.js: Filters).
//
// Same fetches as the Python client (records.json, the manifest with the centroids inline and, on
// a site small enough, every chunk record packed, or meta.json for a topic-scoped query; on a
// small site every part; else one term shard per distinct query term's shard or, for a
// topic-scoped query, the matched topics' own files; then the vector shards of the first lexical
// hits' documents within the request budget left, or without a lexical hit the closest topics'
// _embeddings.bin; the record blocks of the hits on a site too big for records.json to hold its
// records) and the same rankings (lexical.js = pipeline/siteformat/searchrank.py), so both clients return
// the same hits in the same order (tests/test_search_js.py, tests/test_js_parity.py). Called by
// Site.search in client.js.

import { SiteError } from "./errors.js";
import { hit } from "./ranking.js";
import { NO_EMBEDDINGS, NO_ENCODER } from "./errors.js";
import {
  DEFAULT_FUSION, RERANK_DEPTH, REQUEST_BUDGET, SEARCH_DIR, VECTOR_TOPICS, fuse, queryTerms, sentenceRerank,
  sentences as splitSentences, vectorRanking, withinSlots,
} from "./lexical.js";
import { RecordLookup } from "./recordlookup.js";
import { Filters } from "./searchfilters.js";
import { documentStarts, lexicalFiles, scopeOf, segmentFiles, vectorBudget, wholeTopics } from "./searchplan.js";
import { documentVector, lexical as lexicalRanking, prompts, vectorCandidates } from "./searchrankings.js";
import { staticEncoder } from "./staticencoder.js";

/** The `k` best hits for `query` by `options.method` ("auto", "hybrid", "lexical", "simhash",
 *  "embedding"; searchindex.py indexed_search); the request budget of the next query counts
 *  from the end of this one. */
export async function indexedSearch(site, meta, query, options) {
  try {
    return await search(site, meta, query, options);
  } finally {
    site._searchSettled = site._searchFetches ?? 0; // the next query's requests count from here
  }
}

async function search(site, meta, query, options) {
  const {
    k = 5, maxDistance = null, method = "auto", fusion = DEFAULT_FUSION, queryVector = null, embed = null, sentences = false,
    vectorTopics = VECTOR_TOPICS,
    requestBudget = REQUEST_BUDGET, // null: no cap, every chosen document's shard (searchindex.py request_budget)
    staticEncoder: useStatic = true, // false: no static encoder (without queryVector or embed: lexical)
  } = options;
  const filters = new Filters(options);
  site._searchStarts ??= documentStarts(meta);
  // a topic-scoped query reads the matched topics' own files (postings and records of those
  // topics only: segments, or topic shards and blocks) instead of site-wide files: the same
  // levels and the same collection, so the same ranking
  const lookup = new RecordLookup(site, meta, site._searchStarts, scopeOf(meta, filters.topic));
  const embedding = { queryVector, embed, useStatic };
  if (method === "embedding") return embeddingSearch(site, meta, lookup, query, k, filters, embedding, { vectorTopics, requestBudget });
  const out = [];
  const taken = new Set();
  if (method !== "simhash") await Promise.all(segmentFiles(meta, lookup.scope).map((rel) => site._data(rel))); // prompt hits read records there too
  if (method === "auto" || method === "simhash") {
    const matches = prompts(meta, filters, query, maxDistance);
    const distance = new Map(matches);
    for (const [n, r] of await lookup.select(matches.map(([m]) => m), filters, k)) {
      out.push(hit(lookup.chunkRef(r), 1 - distance.get(n) / 64, "simhash", distance.get(n)));
      taken.add(n);
    }
    if (method === "simhash" || out.length >= k) return out.slice(0, k);
  }
  const terms = queryTerms(query);
  // the term shards (or the parts, or the scope's own files) in one concurrent round trip, and
  // the records too: with records.json no hit waits for a record block
  const lexicalReady = Promise.all([
    ...lexicalFiles(meta, lookup.scope, lookup.heldStart(), terms).map((rel) => site._data(rel)),
    ...(!lookup.scope && lookup.recordsRel ? [lookup.fetchRecords(lookup.recordsRel)] : []),
  ]);
  lexicalReady.catch(() => {}); // awaited below; a failure must not count as unhandled meanwhile
  const q = (method === "auto" || method === "hybrid") && meta.vectors ? await queryVectorOf(site, meta, query, embedding) : null;
  await lexicalReady; // then cached
  const lexical = await lexicalRanking(site, meta, lookup, terms, filters);
  let vector = [];
  let partial = false; // whether the budget left some chosen documents without vectors
  if (q) {
    // then the vectors, in a second round: those of the lexical hits' documents, within the
    // requests left; without a lexical hit, or in a scope small enough, those of the closest topics
    const budget = vectorBudget(site, requestBudget);
    if (lexical.length && !wholeTopics(meta, filters)) {
      ({ vector, partial } = await documentVector(site, meta, lookup.starts, lexical, Array.from(q), budget));
    } else {
      ({ ranking: vector } = await vectorCandidates(site, meta, Array.from(q), filters, Math.min(vectorTopics, budget), budget));
    }
  }
  let ranked;
  let label;
  if (method === "lexical" || !vector.length) {
    ranked = lexical.map(([n, s]) => [n, s * meta.scoring.scale]);
    label = "lexical";
  } else {
    ranked = fuse(lexical, vector, fusion);
    // the vectors re-order only the chunks that have one, within their lexical places
    if (partial) ranked = withinSlots(lexical, ranked, new Set(vector.map(([n]) => n)));
    if (sentences && fusion === "score" && embed) ranked = await rerankBySentences(site, lookup, filters, { ranked, lexical, vector, q, embed, taken });
    label = "hybrid";
  }
  const score = new Map(ranked);
  const rest = ranked.map(([n]) => n).filter((n) => !taken.has(n));
  for (const [n, r] of await lookup.select(rest, filters, k - out.length)) out.push(hit(lookup.chunkRef(r), score.get(n), label));
  return out;
}

/** "embedding": the vector ranking alone (searchindex.py embedding_search): the closest topics'
 *  rows, no lexical side; hits say "embedding". */
async function embeddingSearch(site, meta, lookup, query, k, filters, embedding, { vectorTopics, requestBudget }) {
  if (!meta.vectors) throw new SiteError(NO_EMBEDDINGS, site.url, "error");
  const q = await queryVectorOf(site, meta, query, embedding);
  if (!q) throw new SiteError(NO_ENCODER, site.url, "error");
  if (!Array.from(q).some((x) => x !== 0)) return []; // no word of the query has a row
  const budget = vectorBudget(site, requestBudget);
  const { ranking, chosen, held } = await vectorCandidates(site, meta, Array.from(q), filters, Math.min(vectorTopics, budget), budget);
  if (!ranking.length && chosen && !held) throw new SiteError(NO_EMBEDDINGS, site.locate(`${SEARCH_DIR}/meta.json`), "error");
  const score = new Map(ranking);
  return (await lookup.select(ranking.map(([n]) => n), filters, k)).map(([n, r]) => hit(lookup.chunkRef(r), score.get(n), "embedding"));
}

/** As searchindex.py: the first RERANK_DEPTH fused chunks that pass the filters (and were not
 *  prompt hits), re-ordered with their best sentence's cosine (texts fetched, each sentence
 *  embedded with `embed`; lexical.js sentenceRerank). */
async function rerankBySentences(site, lookup, filters, { ranked, lexical, vector, q, embed, taken }) {
  const head = (await lookup.select(ranked.map(([n]) => n).filter((n) => !taken.has(n)), filters, RERANK_DEPTH)).map(([n]) => n);
  const texts = await Promise.all(head.map(async (n) => site._get((await lookup.record(n)).path, "text")));
  const best = new Map();
  for (const [i, n] of head.entries()) {
    const vectors = [];
    for (const s of splitSentences(texts[i])) {
      const v = await embed(s);
      if (v) vectors.push(Array.from(v));
    }
    if (vectors.length) best.set(n, vectorRanking(vectors.map((_, r) => r), (r) => vectors[r], q.length, Array.from(q))[0][1]);
  }
  const headSet = new Set(head);
  const score = new Map(ranked);
  const reordered = [...head.map((n) => [n, score.get(n)]), ...ranked.filter(([n]) => !headSet.has(n))];
  return sentenceRerank(reordered, lexical, vector, best, { depth: head.length });
}

/** The query's vector: the caller's (`queryVector`, else `embed(query)`), else the site's static
 *  encoder's (staticencoder.js) unless `useStatic` is false or the site has none: then null. */
async function queryVectorOf(site, meta, query, { queryVector, embed, useStatic }) {
  if (queryVector) return queryVector;
  if (embed) return embed(query);
  const encoder = useStatic && meta.encoder && meta.encoder.model === meta.vectors.model ? staticEncoder(site, meta.encoder, meta) : null;
  return encoder ? encoder.embed(query) : null;
}
