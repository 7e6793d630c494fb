// The rankings of a _search/ query, each over the files the fetch plan names: the twin of
// pipeline/client/searchrankings.py. SimHash prompt matches (prompts, from the manifest alone),
// BM25F (lexical: the postings of the query's terms from term shards, records.json, a small
// site's parts or a scope's topic files) and cosines (vectorCandidates over the closest topics'
// _embeddings.bin, documentVector over the vector shards of the lexical hits' documents). The
// scoring itself is lexical.js's (= pipeline/siteformat/searchrank.py); fusing is searchindex.js's.

import { DEFAULT_MAX_DISTANCE } from "./client.js";
import { SiteError } from "./errors.js";
import { decodeEmbeddings } from "./vectors.js";
import {
  SEARCH_DIR, VECTOR_ROWS, decodeDocumentPostings, decodePostings, lexicalRanking, promptRanking, vectorRanking,
} from "./lexical.js";
import { collection, lexicalDocuments, partFiles, scopedFiles, searchPath, termFile, topicPages, topicRanges, vectorFiles, vectorShard } from "./searchplan.js";
import { simhash64 } from "./simhash.js";

/** A vector shard's bytes (pipeline/siteformat/vectorshards.py): rows of a float32 scale then
 *  `dimension` 4-bit values packed two a byte (value + 8, low nibble first), rescaled to unit
 *  length as decodeEmbeddings does: {vectors, present} (present[r]: row r holds a vector; a zero
 *  scale means the chunk has none). */
export function decodeRows(buffer, dimension, url) {
  const bytes = new Uint8Array(buffer);
  const width = 4 + ((dimension + 1) >> 1);
  if (bytes.length % width) {
    throw new SiteError(`vector shard: ${bytes.length} bytes is not a whole number of ${width}-byte rows; rebuild the site`, url, "corrupt-index");
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = bytes.length / width;
  const vectors = new Float32Array(count * dimension);
  const present = new Uint8Array(count);
  for (let r = 0; r < count; r++) {
    const scale = view.getFloat32(r * width, true);
    let norm = 0;
    for (let j = 0; j < dimension; j++) {
      const byte = bytes[r * width + 4 + (j >> 1)];
      const v = scale * ((j & 1 ? byte >> 4 : byte & 15) - 8);
      if (!Number.isFinite(v)) throw new SiteError("vector shard: rows contain NaN or infinity; rebuild the site", url, "corrupt-index");
      vectors[r * dimension + j] = v;
      norm += v * v;
    }
    present[r] = norm > 0 ? 1 : 0;
    norm = Math.sqrt(norm) || 1;
    for (let j = 0; j < dimension; j++) vectors[r * dimension + j] /= norm;
  }
  return { vectors, present };
}

/** [[chunk number, distance]] of the SimHash prompt matches in the topics `filters` allows (no
 *  fetch beyond the manifest). The radius: `maxDistance` if given, else the topic's published
 *  one, else DEFAULT_MAX_DISTANCE. */
export function prompts(meta, filters, query, maxDistance) {
  const ranges = topicRanges(meta, filters);
  const entries = [];
  for (const [hex, n] of meta.prompts) {
    const range = ranges.find(([a, b]) => a <= n && n < b);
    if (!range) continue;
    const published = range[2].radius;
    entries.push([BigInt(`0x${hex}`), n, maxDistance ?? (Number.isInteger(published) ? published : DEFAULT_MAX_DISTANCE)]);
  }
  return promptRanking(entries, simhash64(query));
}

/** [[chunk number, score]] by BM25F for `terms` in the topics `filters` allows, from the files
 *  lexicalFiles names (fetched already, or now): a scope's own files, a small site's parts, else
 *  each term's shard or a held records.json (`lookup`: the query's RecordLookup). */
export async function lexical(site, meta, lookup, terms, filters) {
  const { starts, scope } = lookup;
  const postings = new Map();
  if (scope) {
    // topics are contiguous ranges in site order (the scope ascends), so the concatenation stays sorted
    for (const term of terms) {
      const entries = [];
      for (const i of scope) {
        const t = meta.topics[i];
        if (t.segments) {
          for (const [first, , name] of t.segments) {
            const held = (await site._data(searchPath("segments", name))).terms;
            if (Object.hasOwn(held, term)) entries.push(...decodePostings(held[term], starts[first]));
          }
        } else {
          const held = await site._data(scopedFiles(meta, [i], [term])[0]);
          if (Object.hasOwn(held, term)) entries.push(...decodeDocumentPostings(held[term], starts, t.first));
        }
      }
      postings.set(term, entries);
    }
  } else if (meta.parts) {
    const parts = partFiles(meta);
    for (const term of terms) {
      const entries = [];
      for (const [k, [first]] of meta.parts.entries()) {
        const held = (await site._data(parts[k])).terms;
        if (Object.hasOwn(held, term)) entries.push(...decodePostings(held[term], starts[first]));
      }
      postings.set(term, entries);
    }
  } else {
    for (const term of terms) {
      const rel = termFile(meta, lookup.heldStart(), term);
      const shard = rel === null ? lookup.heldStart().terms : await site._data(rel);
      postings.set(term, Object.hasOwn(shard, term) ? decodeDocumentPostings(shard[term], starts) : []);
    }
  }
  const ranges = topicRanges(meta, filters);
  return lexicalRanking(postings, (n) => ranges.some(([a, b]) => a <= n && n < b), collection(meta, filters));
}

/** [(chunk number, cosine)] over the rows of the lexical hits' documents whose shards the
 *  budget reaches: in document order, a held shard free, at most `budget` others fetched
 *  (searchindex.py document_vector). */
export async function documentVector(site, meta, starts, lexical, q, budget) {
  const d = meta.vectors.dimension;
  const kept = [];
  const todo = [];
  const chosen = lexicalDocuments(meta, lexical, starts);
  for (const doc of chosen) {
    const [r] = vectorShard(meta, starts, doc[0]);
    if (!site._docs.has(r) && !todo.includes(r)) {
      if (todo.length >= budget) continue; // over the budget: this document gets no vector evidence
      todo.push(r);
    }
    kept.push(doc);
  }
  await Promise.all(todo.map((r) => site._data(r, "shard").catch((error) => {
    if (error.kind !== "not-found") throw error;
    site._docs.set(r, null); // removed since the index was built: its documents have no vectors
  })));
  const numbers = [];
  const rows = [];
  for (const [first, count] of kept) {
    const [r, start] = vectorShard(meta, starts, first);
    const shard = site._docs.get(r);
    if (!shard) continue;
    const { vectors, present } = shard;
    const offset = first - start;
    for (let j = 0; j < count; j++) {
      if (present[offset + j]) {
        numbers.push(first + j);
        rows.push(vectors.subarray((offset + j) * d, (offset + j) * d + d));
      }
    }
  }
  // partial: the budget left some chosen documents without vectors (searchindex.py _indexed_search)
  return { vector: vectorRanking(numbers, (r) => rows[r], d, q), partial: kept.length < chosen.length };
}

/** {ranking: [(chunk number, cosine)] over the rows of the closest topics' vector pages, at most
 *  `pages` of them (null: vectorTopics; searchplan.py vector_topics, vector_files; searchrankings.py
 *  vector), chosen: the chosen topics with a file, held: those whose first page was there}. */
export async function vectorCandidates(site, meta, q, filters, vectorTopics, pages = null) {
  if (pages === null) pages = vectorTopics;
  // inline in meta.json (base64 of the _embeddings.bin format): decoded once, no request;
  // a site of many topics links centroids.bin instead
  if (meta.vectors.href) site._docs.set(`${SEARCH_DIR}/meta.json#centroids`, await site._data(`${SEARCH_DIR}/${meta.vectors.href}`, "vectors"));
  if (!site._docs.has(`${SEARCH_DIR}/meta.json#centroids`)) {
    const bytes = Uint8Array.from(atob(meta.vectors.centroids), (c) => c.charCodeAt(0));
    site._docs.set(`${SEARCH_DIR}/meta.json#centroids`, decodeEmbeddings(bytes.buffer, site.locate(`${SEARCH_DIR}/meta.json`)));
  }
  const centroids = site._docs.get(`${SEARCH_DIR}/meta.json#centroids`);
  if (centroids.dimension !== q.length) {
    throw new SiteError(`query has ${q.length} dimensions, embeddings have ${centroids.dimension}`, site.url, "error");
  }
  const byId = new Map(meta.topics.map((t) => [t.id, t]));
  const names = centroids.documents.map(([name]) => name);
  const d = centroids.dimension;
  const order = vectorRanking(names.map((_, i) => i), (r) => centroids.vectors.subarray(r * d, r * d + d), d, q);
  const chosen = [];
  let rowsTaken = 0;
  let pagesTaken = 0;
  for (const [r] of order) {
    const t = byId.get(names[r]);
    if (!t || !filters.topicOk(t.id)) continue;
    const own = topicPages(t).length;
    if (chosen.length === vectorTopics || (chosen.length && (rowsTaken + t.count > VECTOR_ROWS || pagesTaken + own > pages))) break;
    chosen.push(t);
    rowsTaken += t.count;
    pagesTaken += own;
  }
  const numbers = [];
  const rows = [];
  const files = vectorFiles(chosen, pages);
  const fetched = await Promise.all(files.map((own) => Promise.all(own.map((rel) => site._data(rel, "vectors").catch((error) => {
    if (error.kind === "not-found") return null; // removed since the index was built: no vectors there
    throw error;
  })))));
  for (const [ti, t] of chosen.entries()) {
    const tables = [];
    for (const table of fetched[ti]) {
      if (!table) break; // a page removed since the index was built ends what is read
      tables.push(table);
    }
    const offsets = new Map();
    let start = t.start;
    // documents null: the pages' rows are the topic's chunks in order
    for (const [name, count] of t.documents ?? tables.flatMap((table) => table.documents)) {
      offsets.set(name, [start, count]);
      start += count;
    }
    for (const table of tables) {
      let row = 0;
      for (const [name, count] of table.documents) {
        const [first, listed] = offsets.get(name) ?? [null, 0];
        for (let i = 0; i < count; i++) {
          if (first !== null && i < listed) {
            numbers.push(first + i);
            rows.push(table.vectors.subarray(row * d, row * d + d));
          }
          row++;
        }
      }
    }
  }
  const held = fetched.filter((own) => own.length && own[0]).length;
  return { ranking: vectorRanking(numbers, (r) => rows[r], d, q), chosen: chosen.filter((t) => t.embeddings).length, held };
}
