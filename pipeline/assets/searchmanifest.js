// The _search/ manifest and its packed records, read and checked: the twin of
// pipeline/client/searchmanifest.py (and of pipeline/siteformat/packedrecords.py's unpack). A reader
// fetches, this checks: every problem is a SiteError that says to rebuild the site.

import { SiteError } from "./errors.js";
import { lastAtMost } from "./searchplan.js";

const DOC_FIELDS = ["document_title", "type", "tags", "promotion_level"];

/** records.json's packed records as the records pack() took: pipeline/siteformat/packedrecords.py's
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
