// pipeline/assets/client.js on an in-memory site behind a fake fetch.
// Run: node --test tests/js/
import { test } from "node:test";
import assert from "node:assert/strict";

import {
  SiteError,
  cleanRel,
  decodeEmbeddings,
  interleave,
  keywordHits,
  openSite,
  passes,
  readingOrder,
  simhashHits,
  siteRelative,
} from "../../pipeline/assets/client.js";
import { simhash64, toHex } from "../../pipeline/assets/simhash.js";
import { PAGE_DOCUMENTS, joinEmbeddings, pageName, pageNames } from "../../pipeline/assets/vectors.js";

const ROOT = "http://site.test/docs/";
const QUESTION = "How does a stripe order spread chunks across a document?";

function item(index, title, { isCode = false, keywords = [], questions = null } = {}) {
  const out = {
    index,
    href: `_chunks/a-${index}.md`,
    title,
    header_path: index ? `## ${title}` : "",
    is_code: isCode,
    keywords,
  };
  if (questions) out.prompt_hashes_hex = questions.map((q) => toHex(simhash64(q)));
  return out;
}

/** A document resource (index_version 2, one page): items in reading order (overview, stripe order). */
function resource(base, key, fields, items) {
  const order = [fields.baseline_conceptual, ...fields.stripe_order];
  return {
    index_version: 2, topic: "guide/t", key, ...fields, page: 1, pages: 1,
    _links: { self: { href: `${base}guide/t/_index/${key}.doc.json` }, up: { href: `${base}guide/t/index.json` } },
    items: order.map((i) => items[i]),
  };
}

/** A listing entry of a document (its first chunks and its resource). */
function entry(base, key, title, count, sample) {
  return { key, title, source: `${key}.md`, count, sample: sample.map((index) => ({ index, href: `_chunks/${key}-${index}.md`, title: "" })),
    _links: { self: { href: `${base}guide/t/_index/${key}.doc.json` } } };
}

/** Files of a small site built for base path `base` ("/" or "/repo/"), by site-relative path. */
function siteFiles(base = "/") {
  const a = [
    item(0, "Alpha Handbook"),
    item(1, "Quick Reference", { isCode: true, keywords: [{ name: "build", score: 3 }] }),
    item(2, "Stripe Orders", { keywords: [{ name: "stripe order", score: 9 }], questions: [QUESTION] }),
    item(3, "Caching Vectors", { keywords: [{ name: "cache", score: 4 }] }),
    item(4, "Serving", { keywords: [{ name: "Cache", score: 4 }] }),
  ];
  const b = [item(0, "Beta Guide"), item(1, "Hosting on Pages", { keywords: [{ name: "deployment", score: 6 }] })]
    .map((it) => ({ ...it, href: it.href.replace("a-", "b-") }));
  const files = {
    "index.json": {
      index_version: 2,
      id: "",
      title: "Docs <b>",
      topics: 1, documents: 0, page: 1, pages: 1,
      _links: { self: { href: `${base}index.json` } },
      _embedded: {
        topics: [{ id: "guide", title: "Guide", documents: 0, _links: { self: { href: `${base}guide/index.json` } } }],
        documents: [],
      },
    },
    "guide/index.json": {
      index_version: 2,
      id: "guide",
      title: "Guide",
      topics: 1, documents: 0, page: 1, pages: 1,
      _links: { self: { href: `${base}guide/index.json` }, parent: { href: `${base}index.json` } },
      _embedded: {
        topics: [{ id: "guide/t", title: "T", documents: 2, _links: { self: { href: `${base}guide/t/index.json` } } }],
        documents: [],
      },
    },
    "guide/t/index.json": {
      index_version: 2,
      id: "guide/t",
      title: "T",
      prompt_matching: { algorithm: "simhash64-w3-v1", max_distance: 12 },
      topics: 0, documents: 2, page: 1, pages: 1,
      _links: { self: { href: `${base}guide/t/index.json` }, parent: { href: `${base}guide/index.json` },
                document: { href: `${base}guide/t/_index/{key}.doc.json`, templated: true } },
      _embedded: { topics: [], documents: [entry(base, "a", "Alpha", 5, [3, 1, 4]), entry(base, "b", "Beta", 2, [1, 0])] },
    },
    "guide/t/_index/a.doc.json": resource(base, "a", { source: "a.md", title: "Alpha", count: 5, baseline_conceptual: 0, baseline_technical: 1,
      stripe_order: [3, 1, 4, 2], stripe_order_technical: [4, 3, 2] }, a),
    "guide/t/_index/b.doc.json": resource(base, "b", { source: "b.md", title: "Beta", count: 2, baseline_conceptual: 0, stripe_order: [1] }, b),
  };
  for (let i = 0; i < 5; i++) files[`guide/t/_chunks/a-${i}.md`] = `# Alpha\n\nchunk a-${i}\n`;
  for (let i = 0; i < 2; i++) files[`guide/t/_chunks/b-${i}.md`] = `# Beta\n\nchunk b-${i}\n`;
  return files;
}

/** A fetch over `files` served at `root`; records the URLs asked for. */
function fakeFetch(files, root = ROOT) {
  const calls = [];
  const fetch = async (url, { signal } = {}) => {
    calls.push(url);
    if (signal?.aborted) throw new DOMException("aborted", "AbortError");
    const rel = decodeURIComponent(url.slice(root.length));
    const body = url.startsWith(root) ? files[rel] : undefined;
    if (body === undefined) return { ok: false, status: 404, text: async () => "not found" };
    const bytes = body instanceof Uint8Array ? body : new TextEncoder().encode(typeof body === "string" ? body : JSON.stringify(body));
    return {
      ok: true,
      status: 200,
      text: async () => new TextDecoder().decode(bytes),
      arrayBuffer: async () => bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    };
  };
  fetch.calls = calls;
  return fetch;
}

async function open(files = siteFiles(), options = {}) {
  const fetch = fakeFetch(files);
  const site = await openSite(ROOT, { fetch, ...options });
  return { site, fetch };
}

test("nodes follow links from the root; topics are nodes with documents", async () => {
  const { site } = await open();
  assert.equal(site.title, "Docs <b>");
  const nodes = await site.nodes();
  assert.deepEqual(nodes.map((n) => [n.id, n.parent, n.documents, n.path]), [
    ["", null, 0, "index.json"],
    ["guide", "", 0, "guide/index.json"],
    ["guide/t", "guide", 2, "guide/t/index.json"],
  ]);
  assert.deepEqual((await site.topics()).map((n) => n.id), ["guide/t"]);
});

test("openSite accepts the root index.json and a root without a trailing slash", async () => {
  for (const location of [`${ROOT}index.json`, ROOT.slice(0, -1)]) {
    const site = await openSite(location, { fetch: fakeFetch(siteFiles()) });
    assert.equal(site.root, ROOT);
  }
});

test("a site built for another base path reads from this one", async () => {
  const { site } = await open(siteFiles("/repo/"));
  assert.equal(site.basePath, "/repo/");
  assert.deepEqual((await site.topics()).map((n) => n.id), ["guide/t"]);
});

test("a site built for an absolute base URL reads from wherever it is served (issue 34)", async () => {
  const { site, fetch } = await open(siteFiles("https://example.org/docs/"));
  assert.equal(site.baseUrl, "https://example.org/docs/");
  assert.deepEqual((await site.topics()).map((n) => n.id), ["guide/t"]);
  const chunks = await site.sample("guide/t", 2, { document: "a" });
  assert.equal(chunks.length, 2);
  assert.ok(fetch.calls.every((url) => url.startsWith(ROOT)), fetch.calls.join(" ")); // never example.org
  assert.equal(siteRelative("/docs/guide/t/index.json", site.baseUrl), "guide/t/index.json");
  assert.equal(siteRelative("https://other.org/docs/x", site.baseUrl), null);
  assert.throws(() => site.resolve("https://other.org/x.json", "index.json"), /points outside the site/);
});

test("no silent fallbacks: a technical order nothing has, an unknown promotion level (issue 34)", async () => {
  const { site } = await open();
  await assert.rejects(site.planSample("guide/t", 2, { document: "b", order: "technical" }), /document "b" has no technical order/);
  assert.equal((await site.planSample("guide/t", 2, { order: "technical" })).length, 2); // "a" has one
  await assert.rejects(site.search("stripe", { promotionLevel: "urgent" }), /promotion_level must be one of standard, important, critical/);
  assert.deepEqual(await site.search("stripe", { promotionLevel: "Standard" }), await site.search("stripe", { promotionLevel: "standard" }));
});

test("sample of a document is its stripe order with text; technical order when asked", async () => {
  const { site } = await open();
  const chunks = await site.sample("guide/t", 3, { document: "a" });
  assert.deepEqual(chunks.map((c) => c.index), [3, 1, 4]);
  assert.equal(chunks[0].text, "# Alpha\n\nchunk a-3\n");
  assert.equal(chunks[0].href, `${ROOT}guide/t/_chunks/a-3.md`);
  assert.equal(chunks[0].source, "guide/t/a.md");
  const technical = await site.sample("guide/t", 3, { document: "a", order: "technical" });
  assert.deepEqual(technical.map((c) => c.index), [4, 3, 2]);
  const beta = await site.sample("guide/t", 2, { document: "b" });
  assert.deepEqual(beta.map((c) => c.index), [1, 0]); // conceptual, then the baseline
});

test("sample of a topic interleaves documents: its index.json, the resources it needs, the chunks", async () => {
  for (const n of [0, 1, 3, 7, 20]) {
    const { site, fetch } = await open();
    const before = fetch.calls.length;
    const chunks = await site.sample("guide/t", n);
    assert.equal(fetch.calls.length - before, 1 + Math.min(n, 2) + Math.min(n, 7));
    assert.deepEqual(
      chunks.map((c) => `${c.document}${c.index}`),
      ["a3", "b1", "a1", "b0", "a4", "a2", "a0"].slice(0, n),
    );
  }
});

test("readingOrder lists every chunk once: stripe order, then what it leaves out", () => {
  const doc = { stripeOrder: [3, 1, 3, 9], stripeOrderTechnical: null, items: [0, 1, 2, 3, 4] };
  assert.deepEqual(readingOrder(doc), [3, 1, 0, 2, 4]);
  assert.deepEqual(readingOrder(doc, "technical"), [3, 1, 0, 2, 4]);
  assert.throws(() => readingOrder(doc, "sideways"), RangeError);
});

test("interleave is round robin", () => {
  assert.deepEqual(interleave([[1, 2, 3], ["a"], [true, false]]), [1, "a", true, 2, false, 3]);
  assert.deepEqual(interleave([]), []);
});

test("search: SimHash finds the chunk holding the question, then a paraphrase", async () => {
  const { site } = await open();
  const [top] = await site.search(QUESTION);
  assert.deepEqual([top.method, top.distance, top.score, top.index, top.topic], ["simhash", 0, 1, 2, "guide/t"]);
  assert.equal(top.headerPath, "## Stripe Orders");
  assert.equal(top.source, "guide/t/a.md");
  assert.equal(top.href, `${ROOT}guide/t/_chunks/a-2.md`);
  const paraphrase = "how does the stripe order spread chunks over a document";
  const [near] = await site.search(paraphrase, { method: "simhash" });
  assert.equal(near.index, 2);
  assert.ok(near.distance > 0 && near.distance <= 12);
  assert.deepEqual(await site.search(paraphrase, { method: "simhash", maxDistance: near.distance - 1 }), []);
});

test("search: the topic's published radius applies unless the caller sets one", async () => {
  const files = siteFiles();
  files["guide/t/index.json"].prompt_matching.max_distance = 0;
  const { site } = await open(files);
  const paraphrase = "how does the stripe order spread chunks over a document";
  assert.deepEqual(await site.search(paraphrase, { method: "simhash" }), []);
  assert.equal((await site.search(paraphrase, { method: "simhash", maxDistance: 64 }))[0].index, 2);
});

test("search: no hash match falls back to keyword scoring, with filters", async () => {
  const { site } = await open();
  const hits = await site.search("cache settings");
  assert.deepEqual(hits.map((h) => [h.method, h.document ?? h.chunk.document, h.index, h.score]), [
    ["keyword", "a", 3, 4],
    ["keyword", "a", 4, 4],
  ]);
  assert.deepEqual((await site.search("cache settings", { keyword: "CACHE " })).map((h) => h.index), [3, 4]);
  const code = await site.search("quick reference build", { isCode: true });
  assert.ok(code.length && code.every((h) => h.isCode));
  assert.deepEqual(await site.search("cache", { topic: "other" }), []);
});

test("pure ranking: ties go to more hashes in range, then to site order", () => {
  const h = simhash64(QUESTION);
  const chunk = (name, hashes) => ({ topic: "t", document: name, index: 0, keywords: [], promptHashes: hashes });
  const entries = [[chunk("x", [h]), 3], [chunk("y", [h, h ^ 1n]), 3], [chunk("z", [h ^ 0xffn]), 3]];
  assert.deepEqual(simhashHits(entries, h).map((x) => x.chunk.document), ["y", "x"]);
  assert.deepEqual(simhashHits(entries, 0n), []);
  const c = { title: "Stripe Orders", headerPath: "## Stripe Orders", keywords: [{ name: "stripe order", score: 9 }] };
  assert.equal(keywordHits([c], "the stripe order")[0].score, 10);
  assert.equal(passes({ isCode: true, keywords: [] }, { isCode: false }), false);
  const promoted = { isCode: false, keywords: [], promotionLevel: "critical" };
  assert.equal(passes(promoted, { promotionLevel: "critical" }), true);
  assert.equal(passes(promoted, { promotionLevel: "standard" }), false);
  assert.equal(passes(promoted, {}), true);
});

test("not a site: a missing root, HTML, or JSON without links, each naming the URL", async () => {
  const cases = [{}, { "index.json": "<!doctype html><p>a blog</p>" }, { "index.json": { hello: "world" } }, { "index.json": [] }];
  for (const files of cases) {
    await assert.rejects(openSite(ROOT, { fetch: fakeFetch(files) }), (error) => {
      assert.ok(error instanceof SiteError);
      assert.equal(error.kind, "not-a-site");
      assert.equal(error.url, `${ROOT}index.json`);
      assert.ok(error.message.startsWith(`${ROOT}index.json: `));
      return true;
    });
  }
});

test("sample of one document: its topic's index.json, its resource, the chunks", async () => {
  const { site, fetch } = await open();
  const before = fetch.calls.length;
  assert.equal((await site.sample("guide/t", 3, { document: "a" })).length, 3);
  assert.deepEqual(fetch.calls.slice(before, before + 2), [`${ROOT}guide/t/index.json`, `${ROOT}guide/t/_index/a.doc.json`]);
  assert.equal(fetch.calls.length - before, 2 + 3);
});

test("a document not on the listing's first page is found through the templated document link", async () => {
  const files = siteFiles();
  files["guide/t/index.json"]._embedded.documents = []; // as if it were listed on a later page
  const { site, fetch } = await open(files);
  const before = fetch.calls.length;
  assert.deepEqual((await site.sample("guide/t", 2, { document: "b" })).map((c) => c.index), [1, 0]);
  assert.equal(fetch.calls.length - before, 2 + 2);
  await assert.rejects(site.sample("guide/t", 1, { document: "zzz" }), /no document "zzz"/);
});

test("a site of the previous index format is named so", async () => {
  const files = siteFiles();
  delete files["index.json"].index_version;
  await assert.rejects(openSite(ROOT, { fetch: fakeFetch(files) }), /older pipeline.*rebuild the site/);
});

test("a corrupt topic index and a malformed item are reported with URL and field", async () => {
  const broken = siteFiles();
  broken["guide/t/index.json"] = '{"_embedded": ';
  const { site } = await open(broken);
  await assert.rejects(site.topic("guide/t"), { kind: "corrupt-index", url: `${ROOT}guide/t/index.json` });
  const malformed = siteFiles();
  delete malformed["guide/t/_index/a.doc.json"].items.find((i) => i.index === 2).href;
  await assert.rejects((await open(malformed)).site.topic("guide/t"), /items\[\d\]\.href: missing/);
  const escaping = siteFiles();
  escaping["guide/t/_index/a.doc.json"].items.find((i) => i.index === 2).href = "../../secret.md";
  await assert.rejects((await open(escaping)).site.topic("guide/t"), /leaves the topic directory/);
});

test("a missing chunk or topic is not-found with its URL", async () => {
  const files = siteFiles();
  delete files["guide/t/_chunks/a-3.md"];
  const { site } = await open(files);
  await assert.rejects(site.sample("guide/t", 1, { document: "a" }), {
    kind: "not-found",
    url: `${ROOT}guide/t/_chunks/a-3.md`,
  });
  await assert.rejects(site.topic("nope"), { kind: "not-found", url: `${ROOT}nope/index.json` });
  await assert.rejects(site.sample("guide/t", 1, { document: "zzz" }), /no document "zzz"/);
});

test("a request that never answers is aborted after timeoutMs", async () => {
  const hanging = (url, { signal }) =>
    new Promise((_, reject) => signal.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
  await assert.rejects(openSite(ROOT, { fetch: hanging, timeoutMs: 30 }), (error) => {
    assert.equal(error.kind, "fetch");
    assert.match(error.message, /timed out after 0.03 s/);
    assert.equal(error.url, `${ROOT}index.json`);
    return true;
  });
});

test("cleanRel refuses paths above the root", () => {
  assert.equal(cleanRel("a/./b/../c"), "a/c");
  assert.equal(cleanRel("../x"), null);
  assert.equal(cleanRel("a\\b"), null);
});

/** A page of a topic's embeddings with float32 rows, laid out as pipeline/siteformat/vectors.py
 *  writes it (page 1, _embeddings.bin, unless told). */
function embeddingsFile(documents, rows, dimension, { page = 1, next = null, model = "m" } = {}) {
  const header = new TextEncoder().encode(
    JSON.stringify({
      format: "pipeline-embeddings", version: 2, model, dtype: "float32", dimension, count: rows.length,
      documents: documents.map(([name, count]) => ({ name, count })), data_bytes: rows.length * dimension * 4,
      page, ...(next === null ? {} : { next }),
    }),
  );
  const start = 12 + header.length;
  const offset = start + ((8 - (start % 8)) % 8);
  const out = new Uint8Array(offset + rows.length * dimension * 4);
  out.set(new TextEncoder().encode("PIPEVEC1"));
  const view = new DataView(out.buffer);
  view.setUint32(8, header.length, true);
  out.set(header, 12);
  rows.flat().forEach((v, i) => view.setFloat32(offset + 4 * i, v, true));
  return out;
}

test("embeddings: decoded, truncation reported, and searchByVector ranks by cosine", async () => {
  const file = embeddingsFile([["a", 5], ["b", 2]], [[1, 0], [0, 1], [3, 4], [1, 1], [-1, 0], [0, 2], [1, 0]], 2);
  const table = decodeEmbeddings(file.buffer);
  assert.deepEqual(table.documents, [["a", 5], ["b", 2]]);
  assert.ok(Math.abs(table.vectors[4] - 0.6) < 1e-6 && Math.abs(table.vectors[5] - 0.8) < 1e-6);
  assert.throws(() => decodeEmbeddings(file.slice(0, file.length - 3).buffer, "u"), /truncated: expected/);
  assert.throws(() => decodeEmbeddings(new TextEncoder().encode("<html>").buffer, "u"), { kind: "corrupt-embeddings" });

  const files = siteFiles();
  files["guide/t/_embeddings.bin"] = file;
  const { site } = await open(files);
  const hits = await site.searchByVector([1, 0], { k: 3 });
  assert.deepEqual(hits.map((h) => `${h.chunk.document}${h.index}`), ["a0", "b1", "a3"]);
  assert.equal(hits[0].method, "embedding");
  const linked = siteFiles();
  linked["guide/t/_vectors.bin"] = file;
  linked["guide/t/index.json"]._links.embeddings = { href: "/guide/t/_vectors.bin" };
  const { site: viaLink } = await open(linked);
  assert.equal((await viaLink.searchByVector([1, 0], { k: 1 }))[0].index, 0);
  const { site: bare } = await open();
  assert.deepEqual(await bare.searchByVector([1, 0]), []); // no _embeddings.bin: nothing to rank
});

test("embeddings pages: named by number, joined in order, and refused when they are not one table", () => {
  assert.equal(pageName(1), "_embeddings.bin");
  assert.equal(pageName(3), "_index/embeddings-3.bin");
  assert.deepEqual(pageNames(0), ["_embeddings.bin"]);
  assert.deepEqual(pageNames(65), ["_embeddings.bin", "_index/embeddings-2.bin", "_index/embeddings-3.bin"]);
  const docs = (from, n) => Array.from({ length: n }, (_, i) => [`d${from + i}`, 1]);
  const rows = (n, v) => Array.from({ length: n }, () => [v, 1]);
  const one = decodeEmbeddings(embeddingsFile(docs(0, PAGE_DOCUMENTS), rows(PAGE_DOCUMENTS, 1), 2, { next: pageName(2) }).buffer);
  const two = decodeEmbeddings(embeddingsFile(docs(PAGE_DOCUMENTS, 2), rows(2, -1), 2, { page: 2 }).buffer);
  assert.equal(one.next, "_index/embeddings-2.bin");
  assert.equal(two.next, null);
  const table = joinEmbeddings([one, two]);
  assert.equal(table.documents.length, PAGE_DOCUMENTS + 2);
  assert.equal(table.vectors.length, (PAGE_DOCUMENTS + 2) * 2);
  assert.ok(table.vectors[PAGE_DOCUMENTS * 2] < 0 && table.vectors[0] > 0);
  assert.throws(() => joinEmbeddings([two]), /page 2 where page 1 was expected/);
  assert.throws(() => joinEmbeddings([one]), /page 1 is the last but|names a next page|is the last/);
  const short = decodeEmbeddings(embeddingsFile(docs(0, 3), rows(3, 1), 2, { next: pageName(2) }).buffer);
  assert.throws(() => joinEmbeddings([short, two]), /holds 3 documents, expected 32/);
  const other = decodeEmbeddings(embeddingsFile(docs(PAGE_DOCUMENTS, 2), rows(2, 1), 2, { page: 2, model: "x" }).buffer);
  assert.throws(() => joinEmbeddings([one, other]), { kind: "corrupt-embeddings" });
  assert.throws(() => decodeEmbeddings(embeddingsFile(docs(0, 1), rows(1, 1), 2, { next: pageName(3) }).buffer), /is not _index\/embeddings-2.bin/);
});

test("a chunk's page_url (a document MkDocs also published) reaches its hits; absent, it is null", async () => {
  const files = siteFiles();
  // index format 2: a chunk's item, page_url with it, is in its document's resource
  files["guide/t/_index/a.doc.json"].items.find((i) => i.index === 2).page_url = "https://docs.test/guide/a/#stripe-orders";
  const { site } = await open(files);
  const [top] = await site.search(QUESTION);
  assert.equal(top.index, 2);
  assert.equal(top.pageUrl, "https://docs.test/guide/a/#stripe-orders");
  const [other] = await site.search("cache settings");
  assert.equal(other.pageUrl, null);
});
