// Read a pipeline site from a browser or Node: topics, stripe-order samples, search.
//
// ES module, no build step; the twin of pipeline/client (Python), with the same search methods
// (METHODS), rules and order of hits (tests/test_client_js.py, test_search_js.py and
// test_js_parity.py check both on one site). This module navigates and reads; Site.search is
// sitesearch.js's: through the site's _search/ index (searchindex.js), the query embedded by the
// site's static encoder (staticencoder.js), or on a site without one a walk (SimHash prompt
// matching, then keyword scoring: ranking.js). A caller that embeds its query itself can pass
// queryVector or embed, or rank a walk with searchByVector().
//
//   import { openSite } from "./client.js";
//   const site = await openSite("https://example.org/docs/");
//   const topics = await site.topics();                   // nodes that hold documents
//   const chunks = await site.sample("guide/chunking", 3); // first 3 of the stripe order, with text
//   const hits = await site.search("how big is a chunk?", { k: 5, isCode: false });
//
// Every failure is a SiteError naming the URL; every request is aborted after timeoutMs.

import { fromHex } from "./simhash.js";
import { FORMAT as SEARCH_FORMAT, SEARCH_DIR, TOKENIZER, VERSION as SEARCH_VERSION } from "./lexical.js";
import { interleave } from "./ranking.js";
import { checkedStart, metaProblem } from "./searchmanifest.js";
import { decodeRows } from "./searchrankings.js";
import { searchByVector, siteSearch } from "./sitesearch.js";

// the search API as the Python client's pipeline.client exports it
export { METHODS, NO_EMBEDDINGS, NO_ENCODER, PROMOTION_LEVELS } from "./sitesearch.js";
export { hit, interleave, keywordHits, normKeyword, passes, queryWords, simhashHits } from "./ranking.js";

export const DEFAULT_MAX_DISTANCE = 14; // as pipeline.topicspec.prompts.DEFAULT_POLICY; index.json may set its own
export const DEFAULT_TIMEOUT_MS = 10000;
export const ORDERS = ["conceptual", "technical"];
export const EMBEDDINGS_FILE = "_embeddings.bin";
const FETCH_BATCH = 8; // document resources fetched at once when a topic is read whole

/** A site could not be read; `url` names the address, `kind` says how it failed. */
export class SiteError extends Error {
  constructor(message, url, kind = "error") {
    super(`${url}: ${message}`);
    this.name = "SiteError";
    this.url = url;
    this.kind = kind; // "not-a-site" | "not-found" | "fetch" | "corrupt-index" | "corrupt-embeddings" | "error"
  }
}

// --- paths ----------------------------------------------------------------------------------

/** `rel` without "." / ".." segments or a leading "/", or null when it leaves the site. */
export function cleanRel(rel) {
  if (rel.includes("\\") || rel.includes("\0")) return null;
  const out = [];
  for (const part of rel.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (out.length === 0) return null;
      out.pop();
    } else out.push(part);
  }
  return out.join("/");
}

/**
 * Site-relative path (decoded, query and fragment dropped) of an absolute `href` under the site's
 * `baseUrl` ("/", "/repo/" or "https://host/docs/"; also, for an absolute one, under its path), else
 * null. The same rule as `site_relative` in pipeline/index/hrefs.py.
 */
export function siteRelative(href, baseUrl) {
  const bases = /^https?:\/\//i.test(baseUrl) ? [baseUrl, new URL(baseUrl).pathname] : [baseUrl];
  for (const base of bases) {
    if (base.startsWith("/") && (!href.startsWith("/") || href.startsWith("//"))) continue;
    if (href.startsWith(base)) return decodeURIComponent(href.slice(base.length).split(/[?#]/u)[0]);
  }
  return null;
}

function dirname(rel) {
  const i = rel.lastIndexOf("/");
  return i < 0 ? "" : rel.slice(0, i);
}

function joinRel(base, rel) {
  return base ? `${base}/${rel}` : rel;
}

// --- records --------------------------------------------------------------------------------

function typeName(v) {
  return v === null ? "null" : Array.isArray(v) ? "list" : typeof v;
}

class Fields {
  constructor(url) {
    this.url = url;
  }
  fail(where, message) {
    return new SiteError(`${where}: ${message}`, this.url, "corrupt-index");
  }
  get(obj, key, kind, where, optional = false) {
    if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw this.fail(where, "expected an object");
    const at = where ? `${where}.${key}` : key;
    if (!(key in obj)) {
      if (optional) return undefined;
      throw this.fail(at, "missing");
    }
    const v = obj[key];
    const ok =
      kind === "list" ? Array.isArray(v)
      : kind === "object" ? v !== null && typeof v === "object" && !Array.isArray(v)
      : kind === "int" ? Number.isInteger(v)
      : typeof v === kind;
    if (!ok) throw this.fail(at, `expected ${kind}, got ${typeName(v)}`);
    return v;
  }
}

/** The path of a relative href, percent-decoded; null when it is not valid percent-encoding. */
function decodeHref(href) {
  try {
    return decodeURIComponent(href.split(/[?#]/)[0]);
  } catch {
    return null;
  }
}

/** `_links[rel].href` when it is a string, else null. */
export function linkHref(doc, rel) {
  const href = doc?._links?.[rel]?.href;
  return typeof href === "string" ? href : null;
}

function parseChildren(doc, url) {
  const f = new Fields(url);
  const embedded = f.get(doc, "_embedded", "object", "");
  const topics = f.get(embedded, "topics", "list", "_embedded", true) ?? [];
  return topics.map((entry, i) => {
    const where = `_embedded.topics[${i}]`;
    const href = linkHref(entry, "self");
    if (href === null) throw f.fail(where, "no _links.self.href");
    return {
      id: f.get(entry, "id", "string", where),
      title: f.get(entry, "title", "string", where, true) ?? "",
      documents: f.get(entry, "documents", "int", where, true) ?? 0,
      href,
    };
  });
}

function parseHashes(f, item, where) {
  const hexes = f.get(item, "prompt_hashes_hex", "list", where, true);
  if (hexes === undefined) return []; // decimal prompt_hashes lose bits in JSON.parse: unusable here
  const out = [];
  for (const h of hexes) {
    let value;
    try {
      value = fromHex(h);
    } catch (error) {
      throw f.fail(`${where}.prompt_hashes_hex`, error.message);
    }
    if (value !== 0n) out.push(value); // 0 is the hash of "no words": never matched
  }
  return out;
}

export const INDEX_VERSION = 2; // as pipeline/index/names.py: the index files this client reads

/** A SiteError unless `doc` is an index file of the version this client reads. */
export function checkVersion(doc, url) {
  const version = doc?.index_version;
  if (version !== INDEX_VERSION) {
    const built = version === undefined ? "an older pipeline (index_version 1)" : `index_version ${JSON.stringify(version)}`;
    throw new SiteError(`built by ${built}; this client reads index_version ${INDEX_VERSION}: rebuild the site with \`pipeline build\``, url, "corrupt-index");
  }
}

/** `_embedded.documents` of one listing page (as pipeline/client/indexfiles.py parse_entries). */
export function parseEntries(doc, topic, base, url) {
  const f = new Fields(url);
  const embedded = f.get(doc, "_embedded", "object", "");
  return (f.get(embedded, "documents", "list", "_embedded", true) ?? []).map((entry, i) => {
    const where = `_embedded.documents[${i}]`;
    const href = linkHref(entry, "self");
    if (href === null) throw f.fail(where, "no _links.self.href");
    return {
      topic,
      name: f.get(entry, "key", "string", where),
      source: joinRel(base, f.get(entry, "source", "string", where)),
      title: f.get(entry, "title", "string", where, true) ?? "",
      count: f.get(entry, "count", "int", where),
      promotionLevel: f.get(entry, "promotion_level", "string", where, true) ?? "standard",
      sample: (f.get(entry, "sample", "list", where, true) ?? []).map((s, j) => f.get(s, "index", "int", `${where}.sample[${j}]`)),
      href,
    };
  });
}

/** A document resource being read page by page (as DocumentPages in pipeline/client/indexfiles.py). */
export function documentPages(topic, name, base, nextRel, siteUrl = null) {
  return { topic, name, base, siteUrl, source: "", title: "", count: 0, pages: 0, read: 0, nextRel, pageRels: [],
    orders: { stripe_order: [], stripe_order_technical: null }, refs: new Map() };
}

function complete(pages) {
  return pages.read === pages.pages && pages.pages > 0;
}

/** Add the next page (parsed) of a document resource to `pages`; `locate(rel)`: a chunk's href. */
export function addDocumentPage(pages, doc, url, locate) {
  checkVersion(doc, url);
  const f = new Fields(url);
  const number = f.get(doc, "page", "int", "");
  if (number !== pages.read + 1) throw f.fail("page", `expected page ${pages.read + 1}, got ${number}`);
  if (number === 1) {
    pages.source = joinRel(pages.base, f.get(doc, "source", "string", ""));
    pages.title = f.get(doc, "title", "string", "", true) || pages.name;
    pages.count = f.get(doc, "count", "int", "");
    pages.pages = f.get(doc, "pages", "int", "");
    if ("stripe_order_technical" in doc) pages.orders.stripe_order_technical = [];
  }
  for (const key of ["stripe_order", "stripe_order_technical"]) {
    const value = f.get(doc, key, "list", "", true);
    if (value === undefined) continue;
    if (!value.every((x) => Number.isInteger(x) && x >= 0 && x < pages.count)) throw f.fail(key, `expected chunk indexes below ${pages.count}`);
    if (pages.orders[key] === null) throw f.fail(key, "on a later page but not on the first");
    pages.orders[key].push(...value);
  }
  f.get(doc, "items", "list", "").forEach((item, i) => {
    const at = `items[${i}]`;
    const ref = chunkRef(f, item, at, pages, locate);
    if (ref.index >= pages.count || pages.refs.has(ref.index)) {
      throw f.fail(`${at}.index`, `${ref.index} is past the document's ${pages.count} chunks or listed twice`);
    }
    pages.refs.set(ref.index, ref);
  });
  pages.read = number;
  if (complete(pages) && pages.refs.size !== pages.count) throw f.fail("items", `the pages list ${pages.refs.size} chunks, the document has ${pages.count}`);
}

function chunkRef(f, item, at, pages, locate) {
  const index = f.get(item, "index", "int", at);
  const href = f.get(item, "href", "string", at);
  const rel = decodeHref(href); // hrefs are percent-encoded (pipeline/index/hrefs.py)
  const base = pages.base;
  const path = rel === null || rel.startsWith("/") ? null : cleanRel(joinRel(base, rel));
  if (path === null || (base && !path.startsWith(`${base}/`))) throw f.fail(`${at}.href`, `${JSON.stringify(href)} leaves the topic directory`);
  const keywords = (f.get(item, "keywords", "list", at, true) ?? []).map((kw, j) => ({
    name: f.get(kw, "name", "string", `${at}.keywords[${j}]`),
    score: f.get(kw, "score", "number", `${at}.keywords[${j}]`),
  }));
  const lines = ["start_line", "end_line"].map((key) => {
    const value = f.get(item, key, "int", at, true);
    if (value !== undefined && value < 1) throw f.fail(`${at}.${key}`, `expected a line number from 1, got ${value}`);
    return value;
  });
  return cited({
    topic: pages.topic,
    document: pages.name,
    source: pages.source,
    index,
    path,
    href: locate(path),
    title: f.get(item, "title", "string", at, true) ?? "",
    headerPath: f.get(item, "header_path", "string", at, true) ?? "",
    isCode: f.get(item, "is_code", "boolean", at, true) ?? false,
    keywords,
    promptHashes: parseHashes(f, item, at),
    promotionLevel: f.get(item, "promotion_level", "string", at, true) ?? "standard",
    pageUrl: f.get(item, "page_url", "string", at, true) ?? null, // MkDocs: its page + anchor
  }, ...lines, pages.siteUrl);
}

function ordersComplete(pages) {
  const technical = pages.orders.stripe_order_technical;
  return complete(pages) || (pages.orders.stripe_order.length >= pages.count - 1 && (technical === null || technical.length >= pages.count - 2));
}

/** The document record of a resource read whole: {topic, name, source, title, stripeOrder, stripeOrderTechnical, items}. */
function documentOf(pages) {
  return {
    topic: pages.topic,
    name: pages.name,
    source: pages.source,
    title: pages.title,
    count: pages.count,
    stripeOrder: pages.orders.stripe_order,
    stripeOrderTechnical: pages.orders.stripe_order_technical,
    items: Array.from({ length: pages.count }, (_, i) => pages.refs.get(i)),
  };
}

/**
 * Chunk indexes of `doc` in stripe order, then every chunk it leaves out (the baselines),
 * ascending; "technical" uses stripeOrderTechnical when present. Lists every chunk once.
 */
export function readingOrder(doc, order = "conceptual") {
  if (!ORDERS.includes(order)) throw new RangeError(`order must be one of ${ORDERS.join(", ")}, got ${order}`);
  const stripe = order === "technical" && doc.stripeOrderTechnical?.length ? doc.stripeOrderTechnical : doc.stripeOrder;
  const count = doc.count ?? doc.items.length;
  const seen = new Set();
  const out = [];
  for (const i of [...stripe, ...Array(count).keys()]) {
    if (!seen.has(i) && i >= 0 && i < count) {
      seen.add(i);
      out.push(i);
    }
  }
  return out;
}

// --- embeddings file (format: pipeline/site/vectors.py, docs/ARCHITECTURE.md) ---------------------

const MAGIC = "PIPEVEC1";

/**
 * Decode an `_embeddings.bin` (ArrayBuffer). Returns { model, dtype, dimension, documents:
 * [[name, count]], vectors: Float32Array rows of unit length }. Throws SiteError
 * ("corrupt-embeddings") on a wrong magic, a bad header or a truncated file.
 */
export function decodeEmbeddings(buffer, url = EMBEDDINGS_FILE) {
  const fail = (message) => new SiteError(`not a valid embeddings file: ${message}`, url, "corrupt-embeddings");
  const bytes = new Uint8Array(buffer);
  if (bytes.length < 12) throw fail(`truncated: ${bytes.length} bytes, shorter than the 12-byte prefix`);
  if (String.fromCharCode(...bytes.subarray(0, 8)) !== MAGIC) throw fail("wrong magic");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headLen = view.getUint32(8, true);
  const start = 12 + headLen;
  if (bytes.length < start) throw fail(`truncated: header needs ${start} bytes, file has ${bytes.length}`);
  let header;
  try {
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(12, start)));
  } catch (error) {
    throw fail(`header is not JSON (${error.message})`);
  }
  const { format, version, model, dtype, dimension, count, documents, data_bytes: dataBytes } = header ?? {};
  if (format !== "pipeline-embeddings" || version !== 1) throw fail("not format pipeline-embeddings version 1");
  const width = { int8: 1, float16: 2, float32: 4 }[dtype];
  if (!width || !Number.isInteger(dimension) || !Number.isInteger(count) || !Array.isArray(documents)) {
    throw fail("bad header fields");
  }
  const expectedData = dtype === "int8" ? count * 4 + count * dimension : count * dimension * width;
  if (dataBytes !== expectedData) throw fail(`data_bytes ${dataBytes} does not match ${count} rows of ${dimension} ${dtype}`);
  if (documents.reduce((s, d) => s + d.count, 0) !== count) throw fail("document counts do not add up to count");
  const offset = start + ((8 - (start % 8)) % 8);
  const expected = offset + dataBytes;
  if (bytes.length < expected) throw fail(`truncated: expected ${expected} bytes, got ${bytes.length}`);
  if (bytes.length > expected) throw fail(`${bytes.length - expected} unexpected bytes after the ${expected} announced`);
  const vectors = new Float32Array(count * dimension);
  for (let r = 0; r < count; r++) {
    let norm = 0;
    for (let j = 0; j < dimension; j++) {
      let v;
      if (dtype === "int8") v = view.getFloat32(offset + 4 * r, true) * view.getInt8(offset + 4 * count + r * dimension + j);
      else if (dtype === "float32") v = view.getFloat32(offset + 4 * (r * dimension + j), true);
      else v = float16(view.getUint16(offset + 2 * (r * dimension + j), true));
      vectors[r * dimension + j] = v;
      norm += v * v;
    }
    norm = Math.sqrt(norm) || 1;
    for (let j = 0; j < dimension; j++) vectors[r * dimension + j] /= norm;
  }
  return { model, dtype, dimension, documents: documents.map((d) => [d.name, d.count]), vectors };
}

function float16(bits) {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

/** The row of chunk `index` of `document` in an embeddings table, or null. */
export function rowOf(table, document, index) {
  let start = 0;
  for (const [name, count] of table.documents) {
    if (name === document) return index >= 0 && index < count ? start + index : null;
    start += count;
  }
  return null;
}

// --- citations: pipeline/client/citations.py, rule for rule (tests/vectors/citations.json) ---

/** `s` percent-encoded but for RFC 3986's unreserved characters (Python's `quote(s, safe="")`). */
function unreserved(s) {
  return encodeURIComponent(s).replace(/[!'()*]/gu, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The site's base URL from its root index.json's `_links.self` href (up to its last "/"). */
export function baseOf(selfHref) {
  const cut = selfHref.split("#")[0].split("?")[0];
  return cut.slice(0, cut.lastIndexOf("/") + 1) || "/";
}

/** The base public links start with: `baseUrl` when absolute, else resolved against `readingRoot`. */
export function publicBase(baseUrl, readingRoot = null) {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/u.test(baseUrl) || !readingRoot) return baseUrl;
  return new URL(baseUrl, readingRoot).href;
}

/** The public URL of the site file at `path` (site-relative, not encoded). */
export function fileUrl(base, path) {
  return base + path.split("/").map(unreserved).join("/");
}

/** The search page's link to chunk `index` of `document` (its name) in `topic`: the source
 *  document shown at the chunk's lines (app.js's deep link). */
export function sectionUrl(base, topic, document, index) {
  return `${base}#topic=${unreserved(topic)}&doc=${unreserved(document)}&chunk=${index}`;
}

/** `chunk` with what a citation needs besides its source and header path: startLine, endLine
 *  (null when the site has none), url and sectionUrl (null when `base` is unknown). */
export function cited(chunk, startLine, endLine, base) {
  chunk.startLine = Number.isInteger(startLine) ? startLine : null;
  chunk.endLine = Number.isInteger(endLine) ? endLine : null;
  chunk.url = base ? fileUrl(base, chunk.path) : null;
  chunk.sectionUrl = base ? sectionUrl(base, chunk.topic, chunk.document, chunk.index) : null;
  return chunk;
}

// --- the site -------------------------------------------------------------------------------

/**
 * Open the site at `location` (its root URL, or its root index.json). Options: `fetch` (a
 * fetch implementation; default globalThis.fetch), `timeoutMs` (per request, default 10 s).
 */
export async function openSite(location, { fetch: fetchImpl = globalThis.fetch, timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
  let url = new URL(String(location), globalThis.location?.href);
  let index = "index.json";
  if (url.pathname.endsWith(".json")) {
    index = decodeURIComponent(url.pathname.slice(url.pathname.lastIndexOf("/") + 1));
    url = new URL(".", url);
  } else if (!url.pathname.endsWith("/")) {
    url = new URL(`${url.pathname}/`, url);
  }
  url.search = "";
  url.hash = "";
  const site = new Site(url.href, index, fetchImpl, timeoutMs);
  await site._open();
  return site;
}

export class Site {
  constructor(root, index, fetchImpl, timeoutMs) {
    this.root = root; // URL of the site root, ending in "/"
    this.indexPath = index;
    this.requests = 0; // fetches made so far
    this._fetch = (...args) => fetchImpl(...args); // a bare window.fetch must not see `this` = Site
    this._timeoutMs = timeoutMs;
    this._docs = new Map();
    this._topics = new Map();
    this._documents = new Map();
    this._tables = new Map();
    this._nodes = null;
  }

  /** Absolute URL of site-relative `rel`. */
  locate(rel) {
    return new URL(rel.split("/").map(encodeURIComponent).join("/"), this.root).href;
  }

  get url() {
    return this.locate(this.indexPath);
  }

  async _get(rel, as = "text") {
    const url = this.locate(rel);
    this.requests++;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this._timeoutMs);
    try {
      const response = await this._fetch(url, { signal: controller.signal });
      if (response.status === 404 || response.status === 410) {
        throw new SiteError(`not found (HTTP ${response.status})`, url, "not-found");
      }
      if (!response.ok) throw new SiteError(`HTTP ${response.status}`, url, "fetch");
      return as === "bytes" ? await response.arrayBuffer() : await response.text();
    } catch (error) {
      if (error instanceof SiteError) throw error;
      if (controller.signal.aborted) throw new SiteError(`timed out after ${this._timeoutMs / 1000} s`, url, "fetch");
      throw new SiteError(`cannot fetch: ${error.message}`, url, "fetch");
    } finally {
      clearTimeout(timer);
    }
  }

  async _json(rel) {
    if (this._docs.has(rel)) return this._docs.get(rel);
    const text = await this._get(rel);
    let doc;
    try {
      doc = JSON.parse(text);
    } catch (error) {
      throw new SiteError(`not valid JSON (${error.message})`, this.locate(rel), "corrupt-index");
    }
    if (doc === null || typeof doc !== "object" || Array.isArray(doc)) {
      throw new SiteError(`expected a JSON object, got ${typeName(doc)}`, this.locate(rel), "corrupt-index");
    }
    this._docs.set(rel, doc);
    return doc;
  }

  async _open() {
    let root;
    try {
      root = await this._json(this.indexPath);
    } catch (error) {
      if (error.kind === "not-found") throw new SiteError("no index.json here: not a pipeline site", error.url, "not-a-site");
      if (error.kind === "corrupt-index") {
        throw new SiteError(`index.json is not a pipeline site index (${error.message})`, error.url, "not-a-site");
      }
      throw error;
    }
    const self = linkHref(root, "self");
    if (self === null || typeName(root._embedded) !== "object") {
      throw new SiteError("index.json lacks _links.self or _embedded: not a pipeline site index", this.url, "not-a-site");
    }
    checkVersion(root, this.url);
    const path = decodeURIComponent(new URL(self, "http://x/").pathname);
    this.basePath = path.slice(0, path.lastIndexOf("/") + 1);
    this.baseUrl = baseOf(self); // as the site was built (--base-url)
    this.siteUrl = publicBase(this.baseUrl, this.root); // where its public links start
    this.rootId = typeof root.id === "string" ? root.id : "";
    this.title = typeof root.title === "string" ? root.title : "";
  }

  /** Site-relative path of `href` found in the document at `fromRel` (rules as in Python). */
  resolve(href, fromRel) {
    const where = this.locate(fromRel);
    let rel;
    const underBase = /^(\/|https?:)/i.test(href) ? siteRelative(href, this.baseUrl) : null;
    if (underBase !== null) {
      rel = underBase;
    } else if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) {
      if (!href.startsWith(this.root)) throw new SiteError(`link ${JSON.stringify(href)} points outside the site`, where, "corrupt-index");
      rel = decodeURIComponent(new URL(href).pathname).slice(decodeURIComponent(new URL(this.root).pathname).length);
    } else if (href.startsWith("/")) {
      const path = decodeURIComponent(href.split(/[?#]/)[0]);
      if (!path.startsWith(this.basePath)) {
        throw new SiteError(`link ${JSON.stringify(href)} is not under the site's base path ${JSON.stringify(this.basePath)}`, where, "corrupt-index");
      }
      rel = path.slice(this.basePath.length);
    } else {
      rel = joinRel(dirname(fromRel), decodeURIComponent(href.split(/[?#]/)[0]));
    }
    const clean = cleanRel(rel);
    if (clean === null) throw new SiteError(`link ${JSON.stringify(href)} points outside the site`, where, "corrupt-index");
    return clean;
  }

  _nodePath(id) {
    for (const node of this._nodes ?? []) if (node.id === id) return node.path;
    let rel = id.replace(/^\/+|\/+$/g, "");
    if (this.rootId) {
      if (rel === this.rootId) rel = "";
      else if (rel.startsWith(`${this.rootId}/`)) rel = rel.slice(this.rootId.length + 1);
    }
    return rel ? `${rel}/index.json` : this.indexPath;
  }

  /** An index file, checked to be of the version this client reads. */
  async _page(rel) {
    const doc = await this._json(rel);
    checkVersion(doc, this.locate(rel));
    return doc;
  }

  /** [path, page] of every page of the listing whose index.json is `path`, following next links. */
  async *_listingPages(path) {
    const seen = new Set();
    let rel = path;
    while (rel !== null) {
      if (seen.has(rel)) throw new SiteError("its next links loop", this.locate(rel), "corrupt-index");
      seen.add(rel);
      const doc = await this._page(rel);
      yield [rel, doc];
      const href = linkHref(doc, "next");
      rel = href === null ? null : this.resolve(href, rel);
    }
  }

  /** Every directory of the site, breadth first from the root, following _embedded.topics links
   *  (each index.json, and its later pages while they list folders). */
  async nodes() {
    if (this._nodes) return this._nodes;
    const out = [];
    const seen = new Set([this.indexPath]);
    const queue = [[this.indexPath, null, null]];
    while (queue.length) {
      const [path, parent, listing] = queue.shift();
      const first = await this._page(path);
      const url = this.locate(path);
      const folders = Number.isInteger(first.topics) ? first.topics : 0;
      const children = [];
      for await (const [rel, page] of this._listingPages(path)) {
        children.push(...parseChildren(page, this.locate(rel)));
        if (children.length >= folders) break; // folders come first: later pages list documents
      }
      const id = typeof first.id === "string" ? first.id : (listing?.id ?? "");
      out.push({
        id,
        title: (typeof first.title === "string" && first.title) || listing?.title || "",
        documents: Number.isInteger(first.documents) ? first.documents : 0,
        path,
        url,
        parent,
        children: children.map((c) => c.id),
      });
      for (const child of children) {
        const rel = this.resolve(child.href, path);
        if (!seen.has(rel)) {
          seen.add(rel);
          queue.push([rel, id, child]);
        }
      }
    }
    this._nodes = out;
    return out;
  }

  /**
   * The same nodes for a page's navigation, from the search index's one-file tree
   * (_search/nodes.json, written by the same build as every index.json) when the site has one,
   * else by the walk of nodes(). Only the page uses it: a HAL client's walk stays a walk.
   */
  async navigation() {
    if (this._nodes) return this._nodes;
    let meta = null;
    try {
      // from records.json, as the page's first (unscoped) search will want it: that search then
      // finds the records and the rare terms' postings already here
      meta = await this.searchIndex({ records: true });
    } catch {
      return this.nodes(); // an index this client cannot read: walk the site instead
    }
    if (!meta || typeof meta.nodes !== "string") return this.nodes();
    const rows = await this._data(`${SEARCH_DIR}/${meta.nodes}`);
    const good = Array.isArray(rows) && rows.length > 0 && rows.every((r) => r && typeof r.id === "string"
      && typeof r.title === "string" && Number.isInteger(r.documents) && typeof r.path === "string"
      && (r.parent === null || typeof r.parent === "string") && Array.isArray(r.children));
    if (!good) throw new SiteError("nodes.json lacks fields readers need; rebuild the site", this.locate(`${SEARCH_DIR}/${meta.nodes}`), "corrupt-index");
    this._nodes = rows.map((r) => {
      const path = cleanRel(r.path);
      if (path === null) throw new SiteError(`node path ${JSON.stringify(r.path)} points outside the site`, this.locate(`${SEARCH_DIR}/${meta.nodes}`), "corrupt-index");
      return { id: r.id, title: r.title, documents: r.documents, path, url: this.locate(path), parent: r.parent, children: r.children.map(String) };
    });
    return this._nodes;
  }

  /** The nodes that hold documents. */
  async topics() {
    return (await this.nodes()).filter((n) => n.documents > 0);
  }

  async _topicNode(topic) {
    if (typeof topic !== "string") return topic;
    const known = (this._nodes ?? []).find((n) => n.id === topic);
    if (known) return known;
    const path = this._nodePath(topic);
    let doc;
    try {
      doc = await this._page(path);
    } catch (error) {
      if (error.kind === "not-found") throw new SiteError(`no topic ${JSON.stringify(topic)} in this site`, error.url, "not-found");
      throw error;
    }
    return { id: topic, title: typeof doc.title === "string" ? doc.title : "", documents: Number.isInteger(doc.documents) ? doc.documents : 0,
      path, url: this.locate(path), parent: null, children: [] };
  }

  /** The topic's documents as its listing names them (every page; with `most`, until that many). */
  async listing(topic, { most = null } = {}) {
    const node = await this._topicNode(topic);
    const out = [];
    for await (const [rel, page] of this._listingPages(node.path)) {
      out.push(...parseEntries(page, node.id, dirname(node.path), this.locate(rel)));
      if (most !== null && out.length >= most) break;
    }
    return out;
  }

  async _entryHref(node, name) {
    const first = await this._page(node.path);
    const entry = parseEntries(first, node.id, dirname(node.path), node.url).find((e) => e.name === name);
    if (entry) return [this.resolve(entry.href, node.path), false];
    const link = first._links?.document;
    if (link?.templated && typeof link.href === "string" && link.href.includes("{key}")) {
      return [this.resolve(link.href.replace("{key}", encodeURIComponent(name)), node.path), true];
    }
    const found = (await this.listing(node)).find((e) => e.name === name);
    if (found) return [this.resolve(found.href, node.path), false];
    throw await this._noDocument(node, name);
  }

  async _noDocument(node, name) {
    const names = (await this.listing(node, { most: 20 })).map((e) => e.name);
    const shown = names.length ? names.join(", ") + (names.length >= 20 ? ", ..." : "") : "none";
    return new SiteError(`no document ${JSON.stringify(name)} in topic ${JSON.stringify(node.id)} (documents: ${shown})`, node.url, "not-found");
  }

  /** Document `name`'s resource, its first page read (every page with `whole`). */
  async _documentPages(node, name, { whole = false, href = null } = {}) {
    const key = `${node.id}\u0000${name}`;
    let pages = this._documents.get(key);
    if (!pages) {
      const [rel, guessed] = href !== null ? [href, false] : await this._entryHref(node, name);
      pages = documentPages(node.id, name, dirname(node.path), rel, this.siteUrl);
      try {
        await this._readPage(pages);
      } catch (error) {
        if (!guessed || error.kind !== "not-found") throw error;
        throw await this._noDocument(node, name);
      }
      pages = this._documents.get(key) ?? pages;
      this._documents.set(key, pages);
    }
    while (whole && !complete(pages)) await this._readPage(pages);
    return pages;
  }

  async _readPage(pages) {
    const rel = pages.nextRel;
    if (rel === null) throw new SiteError(`document ${JSON.stringify(pages.name)} has ${pages.pages} pages but links ${pages.read}`, this.url, "corrupt-index");
    const doc = await this._page(rel);
    addDocumentPage(pages, doc, this.locate(rel), (r) => this.locate(r));
    pages.pageRels.push(rel);
    const next = linkHref(doc, "next");
    pages.nextRel = next !== null && !complete(pages) ? this.resolve(next, rel) : null;
  }

  /** One document with every chunk: {topic, name, source, title, count, stripeOrder, stripeOrderTechnical, items}. */
  async document(topic, name) {
    return documentOf(await this._documentPages(await this._topicNode(topic), name, { whole: true }));
  }

  /** The raw item of `chunk` in its document's resource (start_line, _links, ...), or null. */
  async item(chunk) {
    const pages = await this._documentPages(await this._topicNode(chunk.topic), chunk.document, { whole: true });
    for (const rel of pages.pageRels) {
      const found = ((await this._json(rel)).items ?? []).find((item) => item?.index === chunk.index);
      if (found) return found;
    }
    return null;
  }

  /** A topic read whole: every page of its listing and every document's resource (fetched once). */
  async topic(topic) {
    const node = await this._topicNode(topic);
    if (this._topics.has(node.id)) return this._topics.get(node.id);
    const entries = await this.listing(node);
    const documents = [];
    for (let i = 0; i < entries.length; i += FETCH_BATCH) { // a few at a time: a folder may hold thousands
      documents.push(...await Promise.all(entries.slice(i, i + FETCH_BATCH).map(async (e) =>
        documentOf(await this._documentPages(node, e.name, { whole: true, href: this.resolve(e.href, node.path) })))));
    }
    const first = await this._page(node.path);
    const parsed = { node: { ...node, documents: documents.length }, documents, embeddingsHref: linkHref(first, "embeddings") };
    parsed.matching = first.prompt_matching && typeof first.prompt_matching === "object" ? first.prompt_matching : {};
    this._topics.set(node.id, parsed);
    return parsed;
  }

  /** The chunk's text (one request). */
  async read(chunk) {
    return { ...chunk, text: await this._get(chunk.path) };
  }

  /** The chunks `sample` would read, without text: the topic's index.json and the first page
   *  of each document's resource it needs (later pages only for a chunk past them). */
  async planSample(topic, n, { order = "conceptual", document = null } = {}) {
    if (!ORDERS.includes(order)) throw new RangeError(`order must be one of ${ORDERS.join(", ")}, got ${order}`);
    const node = await this._topicNode(topic);
    if (n <= 0) return [];
    let heads;
    if (document !== null && document !== undefined) {
      heads = [await this._documentPages(node, document)];
    } else {
      const entries = (await this.listing(node, { most: n })).slice(0, n);
      heads = await Promise.all(entries.map((e) => this._documentPages(node, e.name, { href: this.resolve(e.href, node.path) })));
    }
    if (order === "technical" && heads.length > 0 && heads.every((p) => p.orders.stripe_order_technical === null)) {
      // as the Python client: asked for an order nothing sampled has, not silently the conceptual one
      const one = document !== null && document !== undefined;
      const subject = one ? `document ${JSON.stringify(document)}` : `topic ${JSON.stringify(node.id)}`;
      const where = !one && heads.length < node.documents ? ` in its first ${heads.length} of ${node.documents} documents` : "";
      throw new SiteError(`${subject} has no technical order${where}: no technical baseline (a chunk titled like 'Quick Reference' right after the overview); use the conceptual order`, node.url, "error");
    }
    const sequences = [];
    for (let pages of heads) {
      if (!ordersComplete(pages)) pages = await this._documentPages(node, pages.name, { whole: true });
      const wanted = readingOrder({ stripeOrder: pages.orders.stripe_order, stripeOrderTechnical: pages.orders.stripe_order_technical, count: pages.count }, order).slice(0, n);
      if (wanted.some((i) => !pages.refs.has(i))) pages = await this._documentPages(node, pages.name, { whole: true });
      sequences.push(wanted.map((i) => pages.refs.get(i)));
    }
    return interleave(sequences).slice(0, n);
  }

  /**
   * The first `n` chunks of the topic's stripe order, with text: one document's reading order,
   * or the documents' reading orders interleaved round robin. For one document 2 + n requests
   * (index.json, the resource's first page, the chunks).
   */
  async sample(topic, n, options = {}) {
    const refs = await this.planSample(topic, n, options);
    return Promise.all(refs.map((ref) => this.read(ref)));
  }

  /** The `k` best chunks for `query` (sitesearch.js siteSearch: the methods, filters and paths). */
  async search(query, options = {}) {
    return siteSearch(this, query, options);
  }

  // --- the _search/ index (same fetches and rankings as pipeline/client/searchindex.py) -------

  async _data(rel, as = "json") {
    if (this._docs.has(rel)) return this._docs.get(rel);
    const raw = await this._get(rel, as === "json" || as === "records" ? "text" : "bytes");
    // a query's requests so far decide how many vector shards it may still fetch (searchindex.js);
    // nodes.json is the page's navigation, not a search's
    if (!rel.endsWith("/nodes.json")) this._searchFetches = (this._searchFetches ?? 0) + 1;
    let value;
    if (as === "json" || as === "records") {
      try {
        value = JSON.parse(raw);
      } catch (error) {
        throw new SiteError(`invalid JSON: ${error.message}`, this.locate(rel), "corrupt-index");
      }
      // records.json fetched after the manifest: kept checked, its records unpacked
      if (as === "records") value = checkedStart(value, this._searchIndex, this.locate(rel));
    } else if (as === "shard") {
      value = decodeRows(raw, this._searchIndex.vectors.dimension, this.locate(rel));
    } else {
      value = decodeEmbeddings(raw, this.locate(rel));
    }
    this._docs.set(rel, value);
    return value;
  }

  /** The site's _search/ manifest (one request, then kept), or null when it has none. `records`:
   *  read it from records.json, which also holds every chunk record on a site small enough (kept
   *  as `${SEARCH_DIR}/records.json`, unpacked; searchindex.js reads them there), else meta.json. */
  async searchIndex({ records = false } = {}) {
    if (this._searchIndex !== undefined) return this._searchIndex;
    // one load at a time: the page's navigation and a #q= search ask at once, and records.json
    // is ~100 kB (a search that wanted it and gets meta.json's load fetches it with its terms)
    this._searchIndexLoading ??= this._loadSearchIndex(records).finally(() => { this._searchIndexLoading = null; });
    return this._searchIndexLoading;
  }

  async _loadSearchIndex(records) {
    const rel = `${SEARCH_DIR}/${records ? "records" : "meta"}.json`;
    let meta = null;
    try {
      meta = await this._data(rel);
    } catch (error) {
      if (error.kind !== "not-found") throw error;
      if (records) return this._loadSearchIndex(false); // a site built before records.json: meta.json says which version
    }
    let held = null;
    if (records && meta !== null) {
      if (typeof meta !== "object" || meta === null || typeof meta.meta !== "object" || meta.meta === null) {
        throw new SiteError("expected {meta, records, terms}; rebuild the site", this.locate(rel), "corrupt-index");
      }
      this._docs.delete(rel); // kept below, checked and unpacked, once the manifest checks out
      [meta, held] = [meta.meta, meta];
    }
    if (meta !== null && (meta.format !== SEARCH_FORMAT || meta.version !== SEARCH_VERSION || meta.tokenizer !== TOKENIZER)) {
      throw new SiteError(`not a ${SEARCH_FORMAT} version ${SEARCH_VERSION} (${TOKENIZER}) file`, this.locate(rel), "corrupt-index");
    }
    const problem = meta !== null ? metaProblem(meta) : null;
    if (problem) throw new SiteError(`${problem}; rebuild the site`, this.locate(rel), "corrupt-index");
    if (held) this._docs.set(rel, checkedStart(held, meta, this.locate(rel)));
    this._searchIndex = meta;
    return meta;
  }

  /** A topic's embeddings table, or null when it publishes none (404). */
  async embeddings(topic) {
    const index = await this.topic(topic);
    if (this._tables.has(index.node.id)) return this._tables.get(index.node.id);
    const rel = this.resolve(index.embeddingsHref ?? EMBEDDINGS_FILE, index.node.path);
    let table = null;
    try {
      table = decodeEmbeddings(await this._get(rel, "bytes"), this.locate(rel));
    } catch (error) {
      if (error.kind !== "not-found") throw error;
    }
    this._tables.set(index.node.id, table);
    return table;
  }

  /** Rank a walk's chunks by cosine with a query vector the caller computed with the site's model
   *  (sitesearch.js searchByVector). */
  async searchByVector(vector, options = {}) {
    return searchByVector(this, vector, options);
  }
}
