// The _embeddings.bin format (pipeline/siteformat/vectors.py, docs/ARCHITECTURE.md) decoded for a
// reader: a topic's vectors, rescaled to unit length.

import { SiteError } from "./errors.js";

export const EMBEDDINGS_FILE = "_embeddings.bin";
export const PAGE_DOCUMENTS = 32; // as vectors.py PAGE_DOCUMENTS (the listing's LISTING_ENTRIES)

/** The file of page `page` (from 1) of a topic's table, relative to the topic's directory. */
export function pageName(page) {
  return page === 1 ? EMBEDDINGS_FILE : `_index/embeddings-${page}.bin`;
}

/** The files of a table of `documents` documents, in page order (vectors.py page_names). */
export function pageNames(documents) {
  const pages = Math.max(1, Math.ceil(documents / PAGE_DOCUMENTS));
  return Array.from({ length: pages }, (_, i) => pageName(i + 1));
}

const MAGIC = "PIPEVEC1";

/**
 * Decode one page of a topic's embeddings (ArrayBuffer). Returns { model, dtype, dimension,
 * documents: [[name, count]], vectors: Float32Array rows of unit length, page, next (the next
 * page's href relative to the topic's directory, or null) }. Throws SiteError
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
  const { format, version, model, dtype, dimension, count, documents, data_bytes: dataBytes, page, next = null } = header ?? {};
  if (format !== "pipeline-embeddings" || version !== 2) throw fail("not format pipeline-embeddings version 2");
  if (!Number.isInteger(page) || page < 1) throw fail(`header page must be a positive integer, got ${page}`);
  if (next !== null && next !== pageName(page + 1)) throw fail(`header next ${next} of page ${page} is not ${pageName(page + 1)}`);
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
  return { model, dtype, dimension, documents: documents.map((d) => [d.name, d.count]), vectors, page, next };
}

/** One table of a topic's decoded pages, in order (vectors.py join): throws SiteError
 *  ("corrupt-embeddings") unless they are pages 1..n of one model, dtype and dimension, each but
 *  the last holding PAGE_DOCUMENTS documents and naming the next, no document twice. */
export function joinEmbeddings(pages, url = EMBEDDINGS_FILE) {
  const fail = (message) => new SiteError(`not a valid embeddings table: ${message}`, url, "corrupt-embeddings");
  if (!pages.length) throw fail("no page");
  const [first] = pages;
  pages.forEach((p, i) => {
    const number = i + 1;
    const last = number === pages.length;
    if (p.page !== number) throw fail(`page ${p.page} where page ${number} was expected`);
    if (p.model !== first.model || p.dtype !== first.dtype || (p.vectors.length && first.vectors.length && p.dimension !== first.dimension)) {
      throw fail(`page ${number} is ${p.model} ${p.dtype} x${p.dimension}, page 1 ${first.model} ${first.dtype} x${first.dimension}`);
    }
    if ((p.next === null) !== last) throw fail(`page ${number} ${last ? "names a next page" : "is the last"} but ${pages.length} pages were read`);
    if (!last && p.documents.length !== PAGE_DOCUMENTS) throw fail(`page ${number} holds ${p.documents.length} documents, expected ${PAGE_DOCUMENTS}`);
  });
  if (pages.length === 1) return first;
  const documents = pages.flatMap((p) => p.documents);
  if (new Set(documents.map(([name]) => name)).size !== documents.length) throw fail("a document is listed on two pages");
  const vectors = new Float32Array(pages.reduce((s, p) => s + p.vectors.length, 0));
  let at = 0;
  for (const p of pages) {
    vectors.set(p.vectors, at);
    at += p.vectors.length;
  }
  return { model: first.model, dtype: first.dtype, dimension: first.dimension, documents, vectors, page: 1, next: null };
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
