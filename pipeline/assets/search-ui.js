// The search page's one door to the search engine (client.js) and to the full query model (embed.js).
//
// engineSearch() is the ONLY place the page calls the engine. The engine embeds the query with
// the site's static query encoder (staticencoder.js: a table lookup, only the rows of the query's
// word pieces fetched) and fuses lexical and vector rankings itself. The full query model is
// optional and off by default: the site config ([search] model = true) ships it, and the build
// then announces it (<meta name="pipeline-search-model" content="on">). With it, the page answers
// with the static encoder at once; when the model has loaded, it runs the query again with the
// model's vector and says so in the status line.

// The page asks the engine for the hits it shows, plus one to know whether there are more
// ("Show more results" asks again for the next ones). The _search/ rankings do not depend on how
// many hits are asked for (the engine ranks every match, then reads the records of the first k),
// so hit n is the same whether k is 11 or 200; asking for 200 cost the record blocks of 200 hits
// on every keystroke (docs/decisions/search.md, "Search page"). Only a site built before _search/
// fuses two k-long lists here, whose order depends on k: it still asks for MAX_HITS and shows a prefix.
export const MAX_HITS = 200;
const RRF_K = 60;

/** A hit's identity: one result per chunk, whichever rankings found it. */
export const hitKey = (hit) => `${hit.topic}\u0000${hit.source}\u0000${hit.index}`;

/** `hits` with each chunk once, at its best place. */
export function dedupe(hits) {
  const seen = new Set();
  return hits.filter((hit) => {
    const key = hitKey(hit);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Reciprocal-rank fusion of ranked hit lists (each chunk once); ties keep the first list's order. */
export function fuse(lists) {
  const scores = new Map();
  lists.forEach((list) =>
    dedupe(list).forEach((hit, rank) => {
      const key = hitKey(hit);
      const entry = scores.get(key) ?? { hit, score: 0, first: scores.size };
      entry.score += 1 / (RRF_K + rank + 1);
      scores.set(key, entry);
    }),
  );
  return [...scores.values()].sort((a, b) => b.score - a.score || a.first - b.first).map((e) => e.hit);
}

/**
 * The first `k` ranked hits for `query` (best first, one per chunk) and whether more follow:
 * `{ hits, more }`. The first n hits are the same for every `k` >= n, so a page can ask for the
 * hits it shows and ask again for more. `mode` "keyword" asks for keyword scoring only; `isCode`,
 * `topic` filter. With `vector` (the query embedded by the site's model), the lexical ranking is
 * fused with the vector ranking.
 */
export async function engineSearch(site, query, { mode = "question", isCode = null, topic = null } = {}, vector = null, k = MAX_HITS) {
  const filters = { isCode, topic: topic || null };
  const method = mode === "keyword" ? "keyword" : "auto";
  const page = (hits) => ({ hits: hits.slice(0, k), more: hits.length > k });
  // With the site's _search/ index, client.js fuses lexical and vector rankings itself
  // (SimHash matches first) and fetches only the closest topics' vectors.
  const legacyFusion = vector && method !== "keyword" && !(await site.searchIndex({ records: !filters.topic }));
  const asked = legacyFusion ? Math.max(MAX_HITS, k + 1) : k + 1;
  const hits = await site.search(query, { k: asked, method, queryVector: vector, ...filters });
  if (!legacyFusion) return page(dedupe(hits));
  const semantic = await site.searchByVector(vector, { k: asked, ...filters }); // a site built before _search/
  return page(fuse([hits, semantic]));
}

// --- the query model --------------------------------------------------------------------------

const model = {
  // Read from the page on first use (this module also loads under node, for its tests).
  get enabled() {
    return globalThis.document?.querySelector('meta[name="pipeline-search-model"]')?.content === "on";
  },
  status: "idle", // idle | loading | ready | failed
  embed: null,
  error: null,
  loading: null,
};

/** The query's vector when the model is already loaded (no second render needed), else null. */
export async function vectorIfReady(query) {
  if (!model.enabled || model.status !== "ready") return null;
  try {
    return await model.embed(query);
  } catch (error) {
    model.status = "failed";
    model.error = String(error.message ?? error);
    return null;
  }
}

/** The status line under the result count; `hybrid`: whether the engine's own ranking used
 *  vectors (the site's static query encoder: hits say method "hybrid"). */
export function modelStatus(reranked, hybrid = false) {
  if (!model.enabled) {
    return hybrid ? "Hybrid ranking with the static query encoder (the full query model is off for this site)."
      : "Lexical ranking (the query model is off for this site).";
  }
  if (reranked) return "Re-ranked with the query model.";
  if (model.status === "loading" || model.status === "idle") return "Results; loading the query model to re-rank…";
  if (model.status === "failed") return `Results without the query model (unavailable: ${model.error}).`;
  return "Results; re-ranking with the query model…";
}

function setStatus(text) {
  const line = document.getElementById("model-status");
  if (line) line.textContent = text;
  document.body.dataset.model = model.status;
}

/**
 * After a lexical answer: load embed.js once (lazily, on the first search), embed `query`, and
 * hand the vector to `rerank`. Does nothing when the model is off; a failure only changes the
 * status line (the lexical results stay).
 */
export function startModel(query, rerank) {
  if (!model.enabled) {
    document.body.dataset.model = "off";
    return;
  }
  if (!model.loading) {
    model.status = "loading";
    model.loading = import("./embed.js").then(
      (module) => {
        model.embed = module.embedQuery;
        model.status = "ready";
        document.body.dataset.model = model.status;
      },
      (error) => {
        model.status = "failed";
        model.error = String(error.message ?? error);
        document.body.dataset.model = model.status;
      },
    );
  }
  setStatus(modelStatus(false));
  model.loading
    .then(async () => {
      if (model.status !== "ready") return setStatus(modelStatus(false));
      const vector = await model.embed(query);
      await rerank(vector);
    })
    .catch((error) => {
      model.status = "failed";
      model.error = String(error.message ?? error);
      setStatus(modelStatus(false));
    });
}
