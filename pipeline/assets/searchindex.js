// Search over a site's _search/ index: the browser twin of pipeline/client/searchindex.py.
//
// Same fetches (records.json, the manifest with the centroids inline and, on a site small enough,
// every chunk record packed, or meta.json for a topic-scoped query; on a small site every part,
// which holds every record and term; else one term shard per distinct query term's shard or, for
// a topic-scoped query, the matched topics' own files: their segments, or the topic's own term
// shards and then the record blocks of its hits (scopedFiles, recordContainer); then the vector
// shards of the first lexical hits' documents within the request budget left, or without a
// lexical hit the closest topics' _embeddings.bin; the record blocks of the hits on a site too big
// for records.json to hold its records) and the same rankings (lexical.js = pipeline/search/rank.py),
// so both clients return the same hits in the same order (tests/test_search_js.py). Every file but
// the manifest, records.json and nodes.json is named by its content; the manifest lists the names.
// Called by Site.search in client.js.

import { DEFAULT_MAX_DISTANCE, NO_EMBEDDINGS, NO_ENCODER, SiteError, cited, decodeEmbeddings, hit, normKeyword, publicBase } from "./client.js";
import {
  BUNDLE_TOPICS, DEFAULT_FUSION, LEX_DOCUMENTS, REQUEST_BUDGET, RERANK_DEPTH, SEARCH_DIR, VECTOR_ROWS, VECTOR_TOPICS,
  cleanHeading, decodeDocumentPostings, decodePostings, fuse, lexicalRanking, promptRanking, queryTerms, sentenceRerank,
  sentences as splitSentences, shardOf, vectorRanking, withinSlots,
} from "./lexical.js";
import { simhash64 } from "./simhash.js";
import { staticEncoder } from "./staticencoder.js";

const DOC_FIELDS = ["document_title", "type", "tags", "promotion_level"];

/** records.json's packed records as the records pack() took: pipeline/search/records.py's
 *  unpack, rule for rule (the same derived fields, the lines from each row's gap and span,
 *  overrides applied last). */
export function unpackRecords(packed, topicOf) {
  const out = [];
  const rows = packed.chunks;
  for (const [name, count, ...values] of packed.documents) {
    const doc = Object.fromEntries(DOC_FIELDS.map((f, i) => [f, values[i]]));
    let end = null; // the previous row's end_line in this document
    for (let position = 0; position < count; position++) {
      const number = out.length;
      const [headerPath, isCode, keywords, gap, span, extra] = rows[number];
      let startLine = null;
      let endLine = null;
      if (gap !== null && span !== null) {
        startLine = (end ?? 0) + gap;
        endLine = startLine + span;
      }
      end = endLine;
      const topic = topicOf(number);
      const folder = topic ? `${topic}/` : "";
      const last = headerPath.split(" > ").pop().replace(/^#+/, "").replace(/^ +| +$/g, "");
      out.push({
        topic, document: name, index: position, source: `${folder}${name}.md`, path: `${folder}_chunks/${name}-${position}.md`,
        title: last || doc.document_title, prompt_hashes: [], ...doc,
        header_path: headerPath, is_code: isCode, keywords, start_line: startLine, end_line: endLine, ...(extra ?? {}),
      });
    }
  }
  return out;
}

/** A content-named file's path from the site root (pipeline/siteformat/searchlayout.py content_path). */
export function searchPath(kind, name) {
  return `${SEARCH_DIR}/${kind}/${name}.${kind === "vectors" || kind === "centroids" ? "bin" : "json"}`;
}

/** What is wrong with a manifest of the right format and version, or null (searchmanifest.py meta_problem). */
export function metaProblem(meta) {
  const count = (v) => Number.isInteger(v) && v >= 0;
  const ranges = (v) => Array.isArray(v) && v.every((e) => Array.isArray(e) && e.length === 3 && count(e[0]) && count(e[1]) && typeof e[2] === "string");
  const names = (v) => Array.isArray(v) && v.length > 0 && v.every((h) => typeof h === "string");
  if (!count(meta.chunks)) return "chunks: expected a count";
  if (!Array.isArray(meta.documents) || !meta.documents.every(count) || meta.documents.reduce((a, b) => a + b, 0) !== meta.chunks) {
    return "documents: expected each document's chunk count, summing to chunks";
  }
  if (typeof meta.scoring?.scale !== "number") return "scoring.scale: expected a number";
  if (!Array.isArray(meta.prompts) || !Array.isArray(meta.topics)) return "prompts and topics: expected lists";
  const keys = ["id", "start", "count", "first", "docs", "documents", "embeddings", "segments", "shards", "blocks"];
  for (const [i, t] of meta.topics.entries()) {
    if (!t || typeof t !== "object" || !keys.every((k) => k in t)) return `topics[${i}]: expected ${keys.join(", ")}`;
    if ((t.segments !== null && !ranges(t.segments)) || (t.blocks !== null && !ranges(t.blocks))) return `topics[${i}]: segments and blocks: expected [[first document, documents, name]]`;
    if (t.shards !== null && !names(t.shards)) return `topics[${i}].shards: expected a list of names or null`;
  }
  if (meta.records !== null && meta.records !== "records.json") return "records: expected \"records.json\" or null";
  if (typeof meta.base_url !== "string" || !meta.base_url) return "base_url: expected the site's base URL";
  if (meta.parts !== null && !ranges(meta.parts)) return "parts: expected [[first document, documents, name]]";
  if (meta.terms !== null && !names(meta.terms)) return "terms: expected a list of names or null";
  if ((meta.parts === null) === (meta.terms === null)) return "parts and terms: expected exactly one";
  const v = meta.vectors;
  if (v !== null && v !== undefined) {
    if (typeof v.centroids !== "string" && typeof v.href !== "string") return "vectors: expected centroids (base64 text) or href";
    if (!Number.isInteger(v.dimension) || !ranges(v.shards)) return "vectors: expected dimension and shards";
    if (v.shards.reduce((a, [, n]) => a + n, 0) !== meta.documents.length) return "vectors: shards must cover every document";
  }
  return null;
}

/** Each document's first chunk number, and the chunk count last (searchfiles.py doc_starts). */
export function documentStarts(meta) {
  const starts = [0];
  for (const c of meta.documents) starts.push(starts[starts.length - 1] + c);
  return starts;
}

/** Packed records of chunk numbers first .. first + count - 1 (a file's) unpacked and checked
 *  (searchmanifest.py unpacked). */
export function unpackedRecords(packed, meta, first, count, url) {
  let records;
  try {
    const starts = meta.topics.map((t) => t.start);
    records = unpackRecords(packed, (n) => meta.topics[lastAtMost(starts, first + n)].id);
  } catch (error) {
    throw new SiteError(`records: cannot unpack (${error.message}); rebuild the site`, url, "corrupt-index");
  }
  if (records.length !== count) {
    throw new SiteError(`records: ${records.length} records for ${count} chunks; rebuild the site`, url, "corrupt-index");
  }
  return records;
}

/** records.json (parsed, `held`) as pipeline/client/searchindex.py's StartFile, with its checks
 *  (a SiteError naming `url`): {records (unpacked, by chunk number; null on a site whose parts or
 *  blocks hold them), terms (the postings it holds)}. */
export function checkedStart(held, meta, url) {
  const { terms } = held ?? {};
  if (typeof terms !== "object" || terms === null || Array.isArray(terms)) {
    throw new SiteError("terms: expected an object; rebuild the site", url, "corrupt-index");
  }
  if (!meta.records) return { records: null, terms };
  return { records: unpackedRecords(held.records, meta, 0, meta.chunks, url), terms };
}

/** A vector shard's bytes (pipeline/search/vectorshards.py): rows of a float32 scale then
 *  `dimension` int8 values, rescaled to unit length as decodeEmbeddings does: {vectors, present}
 *  (present[r]: row r holds a vector; a zero scale means the chunk has none). */
export function decodeRows(buffer, dimension, url) {
  const bytes = new Uint8Array(buffer);
  const width = 4 + dimension;
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
      const v = scale * view.getInt8(r * width + 4 + j);
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
function lastAtMost(starts, n) {
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

/** [(chunk number, cosine)] over the rows of the lexical hits' documents whose shards the
 *  budget reaches: in document order, a held shard free, at most `budget` others fetched
 *  (searchindex.py document_vector). */
async function documentVector(site, meta, starts, lexical, q, budget) {
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

export async function indexedSearch(site, meta, query, options) {
  try {
    return await search(site, meta, query, options);
  } finally {
    site._searchSettled = site._searchFetches ?? 0; // the next query's requests count from here
  }
}

async function search(site, meta, query, options) {
  const {
    k = 5, keyword = null, isCode = null, topic = null, maxDistance = null, method = "auto",
    headerPath = null, entryType = null, tags = [], fusion = DEFAULT_FUSION, queryVector = null, embed = null, sentences = false,
    promotionLevel = null,
    vectorTopics = VECTOR_TOPICS,
    requestBudget = REQUEST_BUDGET, // null: no cap, every chosen document's shard (searchindex.py request_budget)
    staticEncoder: useStatic = true, // false: no static encoder (without queryVector or embed: lexical)
  } = options;
  const prefix = topic === null || topic === undefined ? null : topic.replace(/^\/+|\/+$/g, "");
  const topicOk = (id) => prefix === null || prefix === "" || id === prefix || id.startsWith(`${prefix}/`);
  const ranges = meta.topics.filter((t) => topicOk(t.id)).map((t) => [t.start, t.start + t.count, t]);
  const allowed = (n) => ranges.some(([a, b]) => a <= n && n < b);
  // the collection the idf counts: the chunks the topic filter allows (searchindex.py collection)
  const collection = prefix === null ? meta.chunks : ranges.reduce((sum, [a, b]) => sum + b - a, 0);
  site._searchStarts ??= documentStarts(meta);
  const starts = site._searchStarts;
  // a topic-scoped query reads the matched topics' own files (postings and records of those
  // topics only: segments, or topic shards and blocks) instead of site-wide files: the same
  // levels and the same collection, so the same ranking
  const matched = prefix === null ? [] : ranges.map(([, , t]) => t);
  const scope = scopeOf(meta, prefix);
  const segments = scope ? scope.flatMap((i) => (meta.topics[i].segments ?? []).map(([, , name]) => searchPath("segments", name))) : [];
  const parts = (meta.parts ?? []).map(([, , name]) => searchPath("parts", name));
  // records.json when it holds the records (a site small enough), else a part, segment or block
  const recordsRel = meta.records ? `${SEARCH_DIR}/${meta.records}` : null;
  const recordFile = (n) => recordContainer(meta, starts, scope, n)?.[0] ?? recordsRel;
  const fetchRecords = (rel) => site._data(rel, rel === recordsRel ? "records" : "json");
  const record = async (n) => {
    const container = recordContainer(meta, starts, scope, n);
    if (container === null) return (await fetchRecords(recordsRel)).records[n];
    const [rel, first, count] = container;
    const key = `${rel}#records`;
    if (!site._docs.has(key)) {
      const held = await site._data(rel);
      site._docs.set(key, unpackedRecords(held.terms ? held.records : held, meta, first, count, site.locate(rel)));
    }
    return site._docs.get(key)[n - first];
  };
  const passesRecord = (r) => {
    if (isCode !== null && isCode !== undefined && Boolean(r.is_code) !== isCode) return false;
    if (keyword !== null && keyword !== undefined) {
      const wanted = normKeyword(keyword);
      if (!r.keywords.some(([name]) => normKeyword(name) === wanted)) return false;
    }
    if (headerPath !== null && headerPath !== undefined) {
      if (!cleanHeading(r.header_path).toLowerCase().startsWith(cleanHeading(headerPath).toLowerCase())) return false;
    }
    if (entryType !== null && entryType !== undefined && r.type !== entryType) return false;
    if (promotionLevel !== null && promotionLevel !== undefined && (r.promotion_level ?? "standard") !== promotionLevel) return false;
    return tags.every((t) => (r.tags ?? []).includes(t));
  };
  const select = async (numbers, limit) => {
    const out = [];
    const seen = new Set();
    const first = [...new Set(numbers)].slice(0, limit).map(recordFile);
    await Promise.all([...new Set(first)].map(fetchRecords));
    for (const n of numbers) {
      if (out.length >= limit) break;
      if (seen.has(n)) continue;
      seen.add(n);
      const r = await record(n);
      if (passesRecord(r)) out.push([n, r]);
    }
    return out;
  };
  const base = publicBase(meta.base_url, site.root);
  const ref = (r) => cited({
    topic: r.topic, document: r.document, source: r.source, index: r.index, path: r.path, href: site.locate(r.path),
    title: r.title, headerPath: r.header_path, isCode: r.is_code, documentTitle: r.document_title,
    keywords: r.keywords.map(([name, score]) => ({ name, score })), promptHashes: r.prompt_hashes.map((h) => BigInt(`0x${h}`)),
    promotionLevel: r.promotion_level ?? "standard", pageUrl: r.page_url ?? null,
  }, r.start_line, r.end_line, base);
  const spent = () => (site._searchFetches ?? 0) - (site._searchSettled ?? 0); // this query's requests so far
  if (method === "embedding") {
    // the vector ranking alone (searchindex.py embedding_search): the closest topics' rows, no lexical side
    if (!meta.vectors) throw new SiteError(NO_EMBEDDINGS, site.url, "error");
    const q = await queryVectorOf(site, meta, query, { queryVector, embed, useStatic });
    if (!q) throw new SiteError(NO_ENCODER, site.url, "error");
    if (!Array.from(q).some((x) => x !== 0)) return []; // no word of the query has a row
    const budget = requestBudget === null ? LEX_DOCUMENTS : Math.max(1, requestBudget - spent());
    const { ranking, chosen, held } = await vectorCandidates(site, meta, Array.from(q), topicOk, Math.min(vectorTopics, budget));
    if (!ranking.length && chosen && !held) throw new SiteError(NO_EMBEDDINGS, site.locate(`${SEARCH_DIR}/meta.json`), "error");
    const score = new Map(ranking);
    return (await select(ranking.map(([n]) => n), k)).map(([n, r]) => hit(ref(r), score.get(n), "embedding"));
  }
  const out = [];
  const taken = new Set();
  if (method !== "simhash") await Promise.all(segments.map((rel) => site._data(rel))); // prompt hits read records there too
  if (method === "auto" || method === "simhash") {
    const prompts = [];
    for (const [hex, n] of meta.prompts) {
      const range = ranges.find(([a, b]) => a <= n && n < b);
      if (!range) continue;
      const published = range[2].radius;
      prompts.push([BigInt(`0x${hex}`), n, maxDistance ?? (Number.isInteger(published) ? published : DEFAULT_MAX_DISTANCE)]);
    }
    const matches = promptRanking(prompts, simhash64(query));
    const distance = new Map(matches);
    for (const [n, r] of await select(matches.map(([m]) => m), k)) {
      out.push(hit(ref(r), 1 - distance.get(n) / 64, "simhash", distance.get(n)));
      taken.add(n);
    }
    if (method === "simhash" || out.length >= k) return out.slice(0, k);
  }
  const postings = new Map();
  const terms = queryTerms(query);
  // a fetched records.json holds the postings of the rarest terms: no shard for them
  const startHeld = () => (recordsRel && site._docs.has(recordsRel) ? site._docs.get(recordsRel) : null);
  const shardRel = (term) => {
    const start = startHeld();
    return start && Object.hasOwn(start.terms, term) ? null : searchPath("terms", meta.terms[shardOf(term, meta.terms.length)]);
  };
  // the term shards (or the parts, or the scope's own files) in one concurrent round trip
  const lexicalFiles = scope ? scopedFiles(meta, scope, terms) : meta.parts ? parts : [...new Set(terms.map(shardRel).filter((rel) => rel))];
  // the records too, in the same round: with records.json no hit waits for a record block
  const lexicalReady = Promise.all([...lexicalFiles.map((rel) => site._data(rel)), ...(!scope && recordsRel ? [fetchRecords(recordsRel)] : [])]);
  lexicalReady.catch(() => {}); // awaited below; a failure must not count as unhandled meanwhile
  const q = (method === "auto" || method === "hybrid") && meta.vectors ? await queryVectorOf(site, meta, query, { queryVector, embed, useStatic }) : null;
  await lexicalReady; // then cached
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
      const rel = shardRel(term);
      const shard = rel === null ? startHeld().terms : await site._data(rel);
      postings.set(term, Object.hasOwn(shard, term) ? decodeDocumentPostings(shard[term], starts) : []);
    }
  }
  const lexical = lexicalRanking(postings, allowed, collection);
  let vector = [];
  let partial = false; // whether the budget left some chosen documents without vectors
  if (q) {
    // then the vectors, in a second round: those of the lexical hits' documents, within the
    // requests left; without a lexical hit, those of the closest topics
    const budget = requestBudget === null ? LEX_DOCUMENTS : Math.max(1, requestBudget - spent());
    // a scope small enough (searchindex.py whole_topics) reads its topics' files whole
    const wholeTopics = matched.length > 0 && matched.length <= VECTOR_TOPICS
      && matched.reduce((sum, t) => sum + t.count, 0) <= VECTOR_ROWS && matched.every((t) => t.embeddings);
    if (lexical.length && !wholeTopics) {
      ({ vector, partial } = await documentVector(site, meta, starts, lexical, Array.from(q), budget));
    } else {
      ({ ranking: vector } = await vectorCandidates(site, meta, Array.from(q), topicOk, Math.min(vectorTopics, budget)));
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
    // as searchindex.py: the first RERANK_DEPTH fused chunks that pass the filters, re-ordered
    // with their best sentence's cosine (texts fetched, each sentence embedded with `embed`)
    if (sentences && fusion === "score" && embed) {
      const head = (await select(ranked.map(([n]) => n).filter((n) => !taken.has(n)), RERANK_DEPTH)).map(([n]) => n);
      const texts = await Promise.all(head.map(async (n) => site._get((await record(n)).path, "text")));
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
      ranked = sentenceRerank(reordered, lexical, vector, best, { depth: head.length });
    }
    label = "hybrid";
  }
  const score = new Map(ranked);
  const rest = ranked.map(([n]) => n).filter((n) => !taken.has(n));
  for (const [n, r] of await select(rest, k - out.length)) out.push(hit(ref(r), score.get(n), label));
  return out;
}

/** The query's vector: the caller's (`queryVector`, else `embed(query)`), else the site's static
 *  encoder's (staticencoder.js) unless `useStatic` is false or the site has none: then null. */
async function queryVectorOf(site, meta, query, { queryVector, embed, useStatic }) {
  if (queryVector) return queryVector;
  if (embed) return embed(query);
  const encoder = useStatic && meta.encoder && meta.encoder.model === meta.vectors.model ? staticEncoder(site, meta.encoder) : null;
  return encoder ? encoder.embed(query) : null;
}

/** {ranking: [(chunk number, cosine)] over the rows of the closest topics' _embeddings.bin
 *  (searchindex.py vector_topics, vector), chosen: the chosen topics with a file, held: those
 *  whose file was there}. */
async function vectorCandidates(site, meta, q, topicOk, vectorTopics) {
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
  for (const [r] of order) {
    const t = byId.get(names[r]);
    if (!t || !topicOk(t.id)) continue;
    if (chosen.length === vectorTopics || (chosen.length && rowsTaken + t.count > VECTOR_ROWS)) break;
    chosen.push(t);
    rowsTaken += t.count;
  }
  const numbers = [];
  const rows = [];
  const tables = await Promise.all(chosen.map((t) => (t.embeddings
    ? site._data(t.embeddings, "vectors").catch((error) => {
      if (error.kind === "not-found") return null; // removed since the index was built: no vectors there
      throw error;
    })
    : null)));
  for (const [ti, t] of chosen.entries()) {
    const table = tables[ti];
    if (!table) continue;
    const offsets = new Map();
    let start = t.start;
    // documents null: the table's rows are the topic's chunks in order
    for (const [name, count] of t.documents ?? table.documents) {
      offsets.set(name, [start, count]);
      start += count;
    }
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
  return { ranking: vectorRanking(numbers, (r) => rows[r], d, q), chosen: chosen.filter((t) => t.embeddings).length, held: tables.filter(Boolean).length };
}
