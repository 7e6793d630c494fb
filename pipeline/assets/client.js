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

import { baseOf, publicBase } from "./citations.js";
import { SiteError } from "./errors.js";
import {
  ORDERS, addDocumentPage, checkVersion, cleanRel, complete, dirname, documentOf, documentPages, joinRel, linkHref,
  ordersComplete, parseChildren, parseEntries, readingOrder, siteRelative, typeName,
} from "./indexfiles.js";
import { FORMAT as SEARCH_FORMAT, SEARCH_DIR, TOKENIZER, VERSION as SEARCH_VERSION } from "./lexical.js";
import { interleave } from "./ranking.js";
import { checkedStart, metaProblem } from "./searchmanifest.js";
import { decodeRows } from "./searchrankings.js";
import { searchByVector, siteSearch } from "./sitesearch.js";
import { EMBEDDINGS_FILE, decodeEmbeddings, joinEmbeddings } from "./vectors.js";

// the client's API, as pipeline.client exports its modules'
export { METHODS, PROMOTION_LEVELS } from "./sitesearch.js";
export { NO_EMBEDDINGS, NO_ENCODER, SiteError } from "./errors.js";
export { baseOf, cited, fileUrl, publicBase, sectionUrl } from "./citations.js";
export {
  INDEX_VERSION, ORDERS, addDocumentPage, checkVersion, cleanRel, documentPages, linkHref, parseEntries, readingOrder, siteRelative,
} from "./indexfiles.js";
export { EMBEDDINGS_FILE, decodeEmbeddings, joinEmbeddings, rowOf } from "./vectors.js";
export { hit, interleave, keywordHits, normKeyword, passes, queryWords, simhashHits } from "./ranking.js";

export const DEFAULT_MAX_DISTANCE = 14; // as pipeline/siteformat/indexnames.py DEFAULT_MAX_DISTANCE; index.json may set its own
export const DEFAULT_TIMEOUT_MS = 10000;
const FETCH_BATCH = 8; // document resources fetched at once when a topic is read whole

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
    // one fetch for concurrent askers: a query's lexical side and its static encoder read the same term shards
    this._loading ??= new Map();
    if (!this._loading.has(rel)) this._loading.set(rel, this._load(rel, as).finally(() => this._loading.delete(rel)));
    return this._loading.get(rel);
  }

  async _load(rel, as) {
    const raw = await this._get(rel, as === "json" || as === "records" ? "text" : "bytes");
    // a query's requests so far decide how many vector shards it may still fetch (searchindex.js);
    // nodes.json is the page's navigation, not a search's, and word files are the query encoder's
    // (staticencoder.js), outside the budget as its own files are
    if (!rel.endsWith("/nodes.json") && !rel.includes("/words/")) this._searchFetches = (this._searchFetches ?? 0) + 1;
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

  /** A topic's embeddings table, every page read (`_embeddings.bin`, then each page's `next`,
   *  relative to the topic's directory), or null when it publishes none (404 on the first page). */
  async embeddings(topic) {
    const index = await this.topic(topic);
    if (this._tables.has(index.node.id)) return this._tables.get(index.node.id);
    const rel = this.resolve(index.embeddingsHref ?? EMBEDDINGS_FILE, index.node.path);
    let table = null;
    let raw = null;
    try {
      raw = await this._get(rel, "bytes");
    } catch (error) {
      if (error.kind !== "not-found") throw error;
    }
    if (raw !== null) {
      const pages = [decodeEmbeddings(raw, this.locate(rel))];
      while (pages[pages.length - 1].next !== null) {
        const next = this.resolve(pages[pages.length - 1].next, rel); // beside page 1: the topic's directory
        let bytes;
        try {
          bytes = await this._get(next, "bytes");
        } catch (error) {
          if (error.kind !== "not-found") throw error;
          throw new SiteError(`page ${pages.length + 1} of the embeddings table is missing`, this.locate(next), "corrupt-embeddings");
        }
        pages.push(decodeEmbeddings(bytes, this.locate(next)));
      }
      table = joinEmbeddings(pages, this.locate(rel));
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
