// The index files of a site (index_version 2), parsed and checked: the twin of
// pipeline/siteformat/indexfiles.py (and records.py's readers): listing entries, document resources
// read page by page, chunk references with their citations, reading orders; site-relative paths
// (cleanRel, siteRelative: pipeline/siteformat/hrefs.py's rule). Every problem is a SiteError naming
// the file and the field.

import { cited } from "./citations.js";
import { SiteError } from "./errors.js";
import { fromHex } from "./simhash.js";

export const ORDERS = ["conceptual", "technical"];

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
 * null. The same rule as `site_relative` in pipeline/siteformat/hrefs.py.
 */
export function siteRelative(href, baseUrl) {
  const bases = /^https?:\/\//i.test(baseUrl) ? [baseUrl, new URL(baseUrl).pathname] : [baseUrl];
  for (const base of bases) {
    if (base.startsWith("/") && (!href.startsWith("/") || href.startsWith("//"))) continue;
    if (href.startsWith(base)) return decodeURIComponent(href.slice(base.length).split(/[?#]/u)[0]);
  }
  return null;
}

export function dirname(rel) {
  const i = rel.lastIndexOf("/");
  return i < 0 ? "" : rel.slice(0, i);
}

export function joinRel(base, rel) {
  return base ? `${base}/${rel}` : rel;
}

export function typeName(v) {
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

export function parseChildren(doc, url) {
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

export const INDEX_VERSION = 2; // as pipeline/siteformat/indexnames.py: the index files this client reads

/** A SiteError unless `doc` is an index file of the version this client reads. */
export function checkVersion(doc, url) {
  const version = doc?.index_version;
  if (version !== INDEX_VERSION) {
    const built = version === undefined ? "an older pipeline (index_version 1)" : `index_version ${JSON.stringify(version)}`;
    throw new SiteError(`built by ${built}; this client reads index_version ${INDEX_VERSION}: rebuild the site with \`pipeline build\``, url, "corrupt-index");
  }
}

/** `_embedded.documents` of one listing page (as pipeline/siteformat/indexfiles.py parse_entries). */
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

/** A document resource being read page by page (as DocumentPages in pipeline/siteformat/indexfiles.py). */
export function documentPages(topic, name, base, nextRel, siteUrl = null) {
  return { topic, name, base, siteUrl, source: "", title: "", count: 0, pages: 0, read: 0, nextRel, pageRels: [],
    orders: { stripe_order: [], stripe_order_technical: null }, refs: new Map() };
}

export function complete(pages) {
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
  const rel = decodeHref(href); // hrefs are percent-encoded (pipeline/siteformat/hrefs.py)
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

export function ordersComplete(pages) {
  const technical = pages.orders.stripe_order_technical;
  return complete(pages) || (pages.orders.stripe_order.length >= pages.count - 1 && (technical === null || technical.length >= pages.count - 2));
}

/** The document record of a resource read whole: {topic, name, source, title, stripeOrder, stripeOrderTechnical, items}. */
export function documentOf(pages) {
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
