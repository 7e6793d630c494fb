// Errors a site reader raises, each naming the URL it is about: the twin of
// pipeline/siteformat/readerrors.py (one class, SiteError, whose `kind` says what Python's subclass does).

/** A site could not be read; `url` names the address, `kind` says how it failed. */
export class SiteError extends Error {
  constructor(message, url, kind = "error") {
    super(`${url}: ${message}`);
    this.name = "SiteError";
    this.url = url;
    this.kind = kind; // "not-a-site" | "not-found" | "fetch" | "corrupt-index" | "corrupt-embeddings" | "error"
  }
}

export const NO_EMBEDDINGS = "no topic publishes embeddings (_embeddings.bin); rebuild the site"; // as pipeline/siteformat/readerrors.py
export const NO_ENCODER = "this site publishes no static query encoder (_search/encoder/); rebuild it, or pass queryVector or embed";
