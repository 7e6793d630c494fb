// Citations: pipeline/siteformat/citations.py, rule for rule (tests/vectors/citations.json): a chunk's
// public URL, its section link on the search page, the site's base.

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
