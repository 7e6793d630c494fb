// The search page's one door to the search engine (client.js) and to the query model (embed.js).
//
// engineSearch() is the ONLY place the page calls the engine: when client.js gains hybrid
// ranking (lexical + vectors fused), only this function changes; the page keeps its UI.
// The query model is optional: the site config ([search] model = false) turns it off, and the
// build only announces it (<meta name="pipeline-search-model" content="on">) when _assets/
// holds embed.js. The page answers lexically at once; when the model has loaded, it runs the
// query again with its vector and says so in the status line.

export const MAX_HITS = 200; // results counted per query ("200 results" means 200 or more)
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
 * The ranked hits for `query` (best first, one per chunk). `mode` "keyword" asks for keyword
 * scoring only; `isCode`, `topic` filter. With `vector` (the query embedded by the site's
 * model), the lexical ranking is fused with the vector ranking.
 */
export async function engineSearch(site, query, { mode = "question", isCode = null, topic = null } = {}, vector = null) {
  const filters = { isCode, topic: topic || null };
  const lexical = await site.search(query, { k: MAX_HITS, method: mode === "keyword" ? "keyword" : "auto", ...filters });
  if (!vector) return dedupe(lexical);
  const semantic = await site.searchByVector(vector, { k: MAX_HITS, ...filters });
  return fuse([lexical, semantic]);
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

/** The status line under the result count. */
export function modelStatus(reranked) {
  if (!model.enabled) return "Lexical ranking (the query model is off for this site).";
  if (reranked) return "Re-ranked with the query model.";
  if (model.status === "loading" || model.status === "idle") return "Lexical results; loading the query model to re-rank…";
  if (model.status === "failed") return `Lexical results (query model unavailable: ${model.error}).`;
  return "Lexical results; re-ranking with the query model…";
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
