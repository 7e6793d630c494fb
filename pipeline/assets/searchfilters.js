// What a _search/ hit must satisfy besides its rank: the twin of pipeline/client/searchfilters.py.
// The query's conditions, tested on a topic id (topicOk: the topic filter, which narrows every
// ranking) or on a chunk record (passes: the rest, which select among the ranked chunks).
// No fetch, no state.

import { normKeyword } from "./ranking.js";
import { cleanHeading } from "./lexical.js";

export class Filters {
  /** Search options (camelCase, as Site.search takes them); null or absent: no condition. */
  constructor({ topic = null, keyword = null, isCode = null, headerPath = null, entryType = null, tags = [], promotionLevel = null } = {}) {
    this.topic = topic === null || topic === undefined ? null : topic.replace(/^\/+|\/+$/g, ""); // the prefix, trimmed
    this.keyword = keyword ?? null;
    this.isCode = isCode ?? null;
    this.headerPath = headerPath ?? null; // prefix of the cleaned header path, case-insensitive
    this.entryType = entryType ?? null; // front matter `type`
    this.tags = tags ?? []; // every one among the front matter `tags`
    this.promotionLevel = promotionLevel ?? null; // the document's level, exactly
  }

  topicOk(id) {
    const prefix = this.topic;
    return prefix === null || prefix === "" || id === prefix || id.startsWith(`${prefix}/`);
  }

  passes(r) {
    if (this.isCode !== null && Boolean(r.is_code) !== this.isCode) return false;
    if (this.keyword !== null) {
      const wanted = normKeyword(this.keyword);
      if (!r.keywords.some(([name]) => normKeyword(name) === wanted)) return false;
    }
    if (this.headerPath !== null) {
      if (!cleanHeading(r.header_path).toLowerCase().startsWith(cleanHeading(this.headerPath).toLowerCase())) return false;
    }
    if (this.entryType !== null && r.type !== this.entryType) return false;
    if (this.promotionLevel !== null && (r.promotion_level ?? "standard") !== this.promotionLevel) return false;
    return this.tags.every((t) => (r.tags ?? []).includes(t));
  }
}
