// The chunk records of a _search/ query's hits, found where the fetch plan says, filtered: the
// twin of pipeline/client/recordlookup.py. A chunk number to its record (record: from
// records.json, a small site's part, a scope topic's segment or a record block, as
// recordContainer names), a record to the client's chunk reference (chunkRef), and the first k
// ranked chunks whose records pass the filters (select, which fetches the files its first k need
// in one round trip). Files are fetched once per site (site._data keeps them).

import { cited, publicBase } from "./citations.js";
import { SEARCH_DIR } from "./lexical.js";
import { unpackedRecords } from "./searchmanifest.js";
import { recordContainer } from "./searchplan.js";

export class RecordLookup {
  /** The records of one query: `starts` (documentStarts(meta)) and `scope` (scopeOf) say where. */
  constructor(site, meta, starts, scope) {
    this.site = site;
    this.meta = meta;
    this.starts = starts;
    this.scope = scope;
    // records.json when it holds the records (a site small enough), else a part, segment or block
    this.recordsRel = meta.records ? `${SEARCH_DIR}/${meta.records}` : null;
    this.base = publicBase(meta.base_url, site.root); // where the hits' public links start
  }

  /** The file chunk `n`'s record comes from. */
  recordFile(n) {
    return recordContainer(this.meta, this.starts, this.scope, n)?.[0] ?? this.recordsRel;
  }

  fetchRecords(rel) {
    return this.site._data(rel, rel === this.recordsRel ? "records" : "json");
  }

  /** records.json ({records, terms}) when it is fetched and holds records, else null. */
  heldStart() {
    return this.recordsRel && this.site._docs.has(this.recordsRel) ? this.site._docs.get(this.recordsRel) : null;
  }

  /** The record of chunk `n` (its file fetched and unpacked once). */
  async record(n) {
    const container = recordContainer(this.meta, this.starts, this.scope, n);
    if (container === null) return (await this.fetchRecords(this.recordsRel)).records[n];
    const [rel, first, count] = container;
    const key = `${rel}#records`;
    if (!this.site._docs.has(key)) {
      const held = await this.site._data(rel);
      this.site._docs.set(key, unpackedRecords(held.terms ? held.records : held, this.meta, first, count, this.site.locate(rel)));
    }
    return this.site._docs.get(key)[n - first];
  }

  /** The chunk reference a hit carries, with its citation. */
  chunkRef(r) {
    return cited({
      topic: r.topic, document: r.document, source: r.source, index: r.index, path: r.path, href: this.site.locate(r.path),
      title: r.title, headerPath: r.header_path, isCode: r.is_code, documentTitle: r.document_title,
      keywords: r.keywords.map(([name, score]) => ({ name, score })), promptHashes: r.prompt_hashes.map((h) => BigInt(`0x${h}`)),
      promotionLevel: r.promotion_level ?? "standard", pageUrl: r.page_url ?? null,
    }, r.start_line, r.end_line, this.base);
  }

  /** [[n, record]] of the first `limit` of `numbers` (deduplicated) whose records pass `filters`. */
  async select(numbers, filters, limit) {
    const out = [];
    const seen = new Set();
    const first = [...new Set(numbers)].slice(0, limit).map((n) => this.recordFile(n));
    await Promise.all([...new Set(first)].map((rel) => this.fetchRecords(rel)));
    for (const n of numbers) {
      if (out.length >= limit) break;
      if (seen.has(n)) continue;
      seen.add(n);
      const r = await this.record(n);
      if (filters.passes(r)) out.push([n, r]);
    }
    return out;
  }
}
