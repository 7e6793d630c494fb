// The search page (index.html): search as you type with excerpts and highlighted terms, browse
// sections and topics in stripe order, read chunks and whole documents rendered as markdown.
// Deep links live in the hash: #q=<query>[&topic=<id>], #topic=<id>, #topic=<id>&doc=<name>[&chunk=<i>].
//
// Values from the site are inserted as text nodes or attribute values; markdown is rendered by
// render.js (markdown-it without raw HTML, then DOMPurify), never assigned as HTML here. The
// page's Content-Security-Policy forbids inline scripts as a further guard.

import { openSite, readingOrder } from "./client.js";
import { renderMarkdown, stripFrontMatter } from "./render.js";
import { breadcrumb, cleanHeading, excerpt, highlight, plainText, queryTerms } from "./text.js";
import { el, marked } from "./dom.js";
import { engineSearch, modelStatus, startModel, vectorIfReady } from "./search-ui.js";

const PAGE = 3; // chunks shown per document in a topic, and added by "Show more"
const DOCUMENTS = 20; // documents a topic shows at first, and added by "Show more documents"
const SHOW = 10; // results fetched and shown at first, and added by "Show more results"
const DEBOUNCE_MS = 150;

const state = { site: null, order: "conceptual", seq: 0, texts: new Map(), dirs: new Map(), last: null, nav: Promise.resolve() };

function view(...children) {
  const main = document.getElementById("view");
  main.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
  delete main.dataset.query;
  delete main.dataset.done;
  return main;
}

function showError(error) {
  console.error(error);
  view(el("h1", {}, state.site?.title ?? "Error"), el("p", { class: "error", role: "alert" }, String(error.message ?? error)));
}

const params = () => new URLSearchParams(location.hash.slice(1));
const hashOf = (values) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== null && v !== undefined && v !== "") p.set(k, v);
  const s = p.toString();
  return s ? `#${s}` : location.pathname + location.search; // no "#" left behind on the home view
};

// --- text of chunks and documents -------------------------------------------------------------

/** A chunk's text, fetched once per page. */
function chunkText(chunk) {
  if (!state.texts.has(chunk.href)) {
    const p = state.site.read(chunk).then((c) => c.text);
    p.catch(() => state.texts.delete(chunk.href));
    state.texts.set(chunk.href, p);
  }
  return state.texts.get(chunk.href);
}

/** The page link of a markdown document at absolute `url` of this site, or null. */
function docLink(url) {
  if (!url.href.startsWith(state.site.root) || !/\.md$/iu.test(url.pathname)) return null;
  const rel = decodeURIComponent(url.href.slice(state.site.root.length).split(/[?#]/u)[0]);
  const slash = rel.lastIndexOf("/");
  const topic = state.dirs.get(slash < 0 ? "" : rel.slice(0, slash));
  return topic === undefined ? null : hashOf({ topic, doc: rel.slice(slash + 1).replace(/\.md$/iu, "") });
}

/** Render `markdown` read from the absolute URL `baseUrl` into `box` (its relative links resolve
 *  against that URL: a chunk file's own URL, whose links the build relocated for `_chunks/`, or a
 *  document's); raw text in a <pre> if the renderer fails. */
async function renderInto(box, markdown, baseUrl, fragmentLink = null) {
  await state.nav.catch(() => {}); // docLink needs the folders the navigation lists
  try {
    const rendered = await renderMarkdown(markdown, { sourceUrl: baseUrl, docLink, fragmentLink });
    box.replaceChildren(...rendered.childNodes);
  } catch (error) {
    console.error(error);
    box.replaceChildren(el("pre", { class: "raw-text" }, markdown));
  }
  box.dataset.rendered = "true";
}

function chunkArticle(chunk, docTitle = null) {
  const crumbs = breadcrumb(chunk.headerPath || chunk.title);
  const body = el("div", { class: "chunk-text markdown" });
  const article = el(
    "article",
    { class: "chunk", "data-document": chunk.document, "data-index": chunk.index },
    el(
      "header",
      {},
      el("span", { class: "index" }, `#${chunk.index}`),
      el("strong", {}, crumbs.join(" › ") || docTitle || chunk.document),
      chunk.isCode ? el("span", { class: "badge" }, "code") : null,
      chunk.keywords.length ? el("span", { class: "keywords" }, chunk.keywords.map((k) => k.name).join(", ")) : null,
      el("a", { href: hashOf({ topic: chunk.topic, doc: chunk.document, chunk: chunk.index }), class: "in-doc" }, "in document"),
      el("a", { href: chunk.href, class: "raw" }, "raw"),
    ),
    body,
  );
  const fill = chunk.text !== undefined ? Promise.resolve(chunk.text) : chunkText(chunk);
  fill.then((text) => renderInto(body, text, new URL(chunk.href, state.site.root).href, hashOf({ topic: chunk.topic, doc: chunk.document }))).catch(showError);
  return article;
}

// --- navigation -------------------------------------------------------------------------------

async function renderNav() {
  const nodes = await state.site.navigation();
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const n of nodes) state.dirs.set(n.path.replace(/\/?index\.json$/u, ""), n.id);
  const item = (node) => {
    const kids = node.children.map((id) => byId.get(id)).filter(Boolean);
    const label = node.documents
      ? el("a", { class: "topic", href: hashOf({ topic: node.id }), "data-topic": node.id }, node.title || node.id)
      : el("span", { class: "section" }, node.title || node.id);
    return el("li", { "data-node": node.id }, label, kids.length ? el("ul", {}, kids.map(item)) : null);
  };
  const root = nodes[0];
  const top = root.documents ? [root] : root.children.map((id) => byId.get(id)).filter(Boolean);
  document.getElementById("nav").replaceChildren(el("ul", {}, top.map(item)));
}

function markCurrent(topicId) {
  for (const a of document.querySelectorAll("nav a.topic")) {
    if (a.dataset.topic === topicId) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function route() {
  const p = params();
  const box = document.getElementById("query");
  if (p.get("q")?.trim()) {
    if (box.value !== p.get("q")) box.value = p.get("q");
    return runSearch(p.get("q"), p.get("topic"));
  }
  if (document.activeElement !== box) box.value = "";
  if (p.has("doc") && p.has("topic")) return showDocument(p.get("topic"), p.get("doc"), p.get("chunk"));
  if (p.has("topic")) return showTopic(p.get("topic"));
  markCurrent(null);
  const topics = (await state.site.navigation()).filter((n) => n.documents > 0);
  view(
    el("h1", {}, state.site.title),
    el("p", { class: "muted" }, `${topics.length} topics. Type to search (press / from anywhere), or pick a topic to read its chunks in stripe order.`),
  );
}

// --- reading ----------------------------------------------------------------------------------

async function showTopic(topicId, count = DOCUMENTS) {
  markCurrent(topicId);
  // the topic's listing a page at a time (a folder may hold thousands of documents), and the
  // resources of the documents shown
  const entries = (await state.site.listing(topicId, { most: count })).slice(0, count);
  const documents = await Promise.all(entries.map((e) => state.site.document(topicId, e.name)));
  const node = (await state.site.navigation()).find((n) => n.id === topicId);
  const total = node?.documents ?? documents.length;
  const technical = documents.some((d) => d.stripeOrderTechnical?.length);
  if (!technical) state.order = "conceptual";
  const orderPicker = technical
    ? el("label", {}, "Order: ", el("select", { id: "order" },
        el("option", { value: "conceptual", selected: state.order === "conceptual" }, "conceptual"),
        el("option", { value: "technical", selected: state.order === "technical" }, "technical")))
    : null;
  const sections = documents.map((doc) =>
    el(
      "section",
      { class: "document", "data-document": doc.name },
      el("h2", {}, el("a", { href: hashOf({ topic: topicId, doc: doc.name }) }, cleanHeading(doc.title))),
      el("p", { class: "muted" }, el("a", { href: state.site.locate(doc.source) }, doc.source), ` · ${doc.items.length} chunks`,
        // said, not silently swapped: the client refuses a technical order a document lacks
        orderOf(doc) === state.order ? "" : " · no technical order: conceptual order"),
      el("div", { class: "chunks" }),
    ),
  );
  const more = total > documents.length
    ? el("button", { class: "more more-documents", type: "button", onclick: () => showTopic(topicId, count + DOCUMENTS).catch(showError) },
        `Show more documents (${total - documents.length} left)`)
    : null;
  view(el("h1", {}, node?.title || topicId), orderPicker, ...sections, more);
  orderPicker?.querySelector("select").addEventListener("change", (event) => {
    state.order = event.target.value;
    showTopic(topicId, count).catch(showError);
  });
  await Promise.all(documents.map((doc, i) => showMore(topicId, doc, sections[i])));
}

/** The order to read `doc` in: the one picked, unless it is technical and `doc` has none. */
function orderOf(doc) {
  return state.order === "technical" && !doc.stripeOrderTechnical ? "conceptual" : state.order;
}

async function showMore(topicId, doc, section) {
  const list = section.querySelector(".chunks");
  const shown = list.children.length;
  const chunks = await state.site.sample(topicId, shown + PAGE, { document: doc.name, order: orderOf(doc) });
  list.append(...chunks.slice(shown).map((c) => chunkArticle(c, doc.title)));
  section.querySelector("button.more")?.remove();
  const total = readingOrder(doc, orderOf(doc)).length;
  if (list.children.length < total) {
    section.append(
      el("button", { class: "more", type: "button", onclick: () => showMore(topicId, doc, section).catch(showError) },
        `Show more (${total - list.children.length} left)`),
    );
  }
}

/** A whole source document, rendered; with `chunk`, scrolled to that chunk's lines, marked. */
async function showDocument(topicId, name, chunk) {
  markCurrent(topicId);
  const doc = await state.site.document(topicId, name);
  const title = (await state.site.navigation()).find((n) => n.id === topicId)?.title;
  const response = await fetch(state.site.locate(doc.source));
  if (!response.ok) throw new Error(`${state.site.locate(doc.source)}: HTTP ${response.status}`);
  const body = el("div", { class: "document-text markdown" });
  view(
    el("p", { class: "crumbs" }, el("a", { href: hashOf({ topic: topicId }) }, title || topicId)),
    el("p", { class: "muted" }, el("a", { href: state.site.locate(doc.source) }, doc.source), ` · ${doc.items.length} chunks`),
    body,
  ).dataset.document = doc.source;
  await renderInto(body, stripFrontMatter(await response.text()), state.site.locate(doc.source), hashOf({ topic: topicId, doc: name }));
  if (!body.querySelector("h1")) body.prepend(el("h1", {}, cleanHeading(doc.title)));
  const lines = chunk === null ? null : await chunkLines(topicId, name, Number(chunk));
  if (lines) {
    const blocks = [...body.querySelectorAll("[data-line]")].filter((b) => {
      const line = Number(b.dataset.line) + 1;
      return line >= lines[0] && line <= lines[1];
    });
    blocks.forEach((b) => b.classList.add("in-chunk"));
    blocks[0]?.scrollIntoView({ block: "start" });
  }
}

/** [start_line, end_line] (1-based) of a chunk, from its document's resource (already fetched). */
async function chunkLines(topicId, name, i) {
  const item = await state.site.item({ topic: topicId, document: name, index: i });
  return Number.isInteger(item?.start_line) && Number.isInteger(item?.end_line) ? [item.start_line, item.end_line] : null;
}

// --- search -----------------------------------------------------------------------------------

function options() {
  const code = document.getElementById("code").value;
  return { mode: document.getElementById("mode").value, isCode: code === "code" ? true : code === "prose" ? false : null };
}

async function runSearch(query, topic, vector = null) {
  const seq = ++state.seq;
  query = query.trim();
  if (!query) return;
  delete document.getElementById("view").dataset.done; // the results shown are no longer the answer
  markCurrent(null);
  vector = vector ?? (await vectorIfReady(query));
  if (seq !== state.seq) return;
  const opts = { ...options(), topic };
  const first = await engineSearch(state.site, query, opts, vector, SHOW);
  if (seq !== state.seq) return; // a newer query is under way
  state.last = { query, topic, reranked: vector !== null };
  const found = first.hits;
  let more = first.more;
  const terms = queryTerms(query);
  const scopeTitle = topic ? (await state.site.navigation()).find((n) => n.id === topic)?.title || topic : null;
  const titles = new Map();
  if (seq !== state.seq) return;
  const list = el("ol", { class: "hits", id: "results" });
  const counted = () => `${found.length}${more ? "+" : ""} ${found.length === 1 && !more ? "result" : "results"}`;
  const count = el("span", { id: "count-text" }, counted());
  const scope = topic
    ? el("span", { class: "chip" }, `in ${scopeTitle} `,
        el("a", { href: hashOf({ q: query }), "aria-label": "Search everywhere" }, "×"))
    : null;
  const main = view(
    el("h1", { class: "results-title" }, "Results for “", query, "”"),
    el("p", { id: "result-count", role: "status" }, count, " ", scope),
    el("p", { id: "model-status", class: "muted" }, modelStatus(vector !== null, found.some((hit) => hit.method === "hybrid"))),
    found.length ? list : el("p", { class: "muted", id: "no-hits" }, "No matching chunks. Try other words or the keyword mode."),
  );
  main.dataset.query = query;
  main.dataset.ranking = found.some((hit) => hit.method === "hybrid") ? "hybrid" : "lexical"; // vectors took part or not
  // Hits are fetched as they are shown: SHOW at first, SHOW more per click (the engine's order
  // does not depend on how many are asked for, so the list only grows at its end).
  const showMore = async () => {
    const start = list.children.length;
    if (start >= found.length && more) {
      const next = await engineSearch(state.site, query, opts, vector, start + SHOW);
      if (seq !== state.seq) return;
      found.push(...next.hits.slice(found.length));
      more = next.more;
      count.textContent = counted();
    }
    const batch = found.slice(start, start + SHOW);
    for (const hit of batch) titles.set(hit, await documentTitle(hit));
    if (seq !== state.seq) return;
    list.append(...batch.map((hit, i) => hitItem(hit, titles.get(hit), terms, found[start + i - 1])));
    main.querySelector("button.more-hits")?.remove();
    if (more || list.children.length < found.length) {
      const button = el("button", { class: "more more-hits", type: "button" }, "Show more results");
      button.addEventListener("click", () => {
        button.disabled = true;
        showMore().catch(showError);
      });
      main.append(button);
    }
    await Promise.all(batch.map((hit) => fillExcerpt(hit, list, terms)));
  };
  await showMore();
  if (seq === state.seq) main.dataset.done = "true";
  if (vector === null) startModel(query, (v) => seq === state.seq && runSearch(query, topic, v));
}

/** A hit's document title: from its search record when the index carries it, else from its
 *  document's resource (a site built before _search/; fetched once per document). */
async function documentTitle(hit) {
  const title = hit.chunk.documentTitle;
  if (typeof title === "string" && title) return cleanHeading(title);
  const doc = await state.site.document(hit.topic, hit.chunk.document).catch(() => null);
  return cleanHeading(doc?.title ?? hit.chunk.document);
}

function hitItem(hit, docTitle, terms, previous) {
  const crumbs = breadcrumb(hit.headerPath || hit.title).filter((c) => c !== docTitle);
  const sameDoc = previous && previous.topic === hit.topic && previous.chunk.document === hit.chunk.document;
  const body = el("div", { class: "hit-body" });
  // A later hit of the document just above is grouped under it: its section heading is its title.
  const label = sameDoc && crumbs.length ? crumbs.pop() : docTitle;
  const button = el("button", { class: "open", type: "button", "aria-expanded": "false" }, marked(highlight(label, terms)));
  const toggle = async () => {
    if (body.childElementCount) {
      button.setAttribute("aria-expanded", "false");
      return body.replaceChildren();
    }
    button.setAttribute("aria-expanded", "true");
    body.replaceChildren(chunkArticle(hit.chunk, docTitle));
  };
  button.addEventListener("click", () => toggle().catch(showError));
  const score = hit.method === "simhash" ? `distance ${hit.distance}` : `score ${Number(hit.score).toFixed(3)}`;
  return el(
    "li",
    { class: sameDoc ? "hit same-doc" : "hit", "data-method": hit.method, "data-topic": hit.topic, "data-index": hit.index,
      "data-source": hit.source, title: `${hit.method}, ${score}` },
    button,
    crumbs.length ? el("p", { class: "crumbs" }, marked(highlight(crumbs.join(" › "), terms))) : null,
    el("p", { class: "excerpt" }, "…"),
    el("p", { class: "meta" }, `${hit.source}${hit.isCode ? " · code" : ""}`,
      // a document MkDocs also published: the page a person would open, at the chunk's heading
      hit.pageUrl ? [" · ", el("a", { class: "page", href: hit.pageUrl }, "page")] : null),
    body,
  );
}

async function fillExcerpt(hit, list, terms) {
  const text = await chunkText(hit.chunk).catch(() => "");
  const li = [...list.children].find((n) => n.dataset.source === hit.source && n.dataset.index === String(hit.index));
  li?.querySelector(".excerpt").replaceChildren(...marked(excerpt(plainText(text), terms)));
}

// --- input: as-you-type, deep links, keyboard -------------------------------------------------

let timer = null;

function onInput(now = false) {
  clearTimeout(timer);
  const go = () => {
    const query = document.getElementById("query").value.trim();
    const p = params();
    const topic = p.has("q") ? p.get("topic") : p.get("doc") ? null : p.get("topic"); // typing in a topic searches it
    if (!query) {
      if (!p.has("q")) return null; // nothing was searched: stay where the reader is
      history.replaceState(null, "", hashOf({ topic: p.get("topic") }));
      return route().catch(showError);
    }
    const hash = hashOf({ q: query, topic });
    if (p.has("q")) history.replaceState(null, "", hash); // one history entry per search, not per key
    else history.pushState(null, "", hash);
    return runSearch(query, topic).catch(showError);
  };
  if (now) go();
  else timer = setTimeout(go, DEBOUNCE_MS);
}

function typing(target) {
  return target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement || target?.isContentEditable;
}

function onKey(event) {
  const box = document.getElementById("query");
  const results = [...document.querySelectorAll("#results button.open")];
  const at = results.indexOf(document.activeElement);
  if (event.key === "/" && !typing(event.target)) {
    event.preventDefault();
    box.focus();
    box.select();
  } else if (event.key === "ArrowDown" && (event.target === box || at >= 0) && results.length) {
    event.preventDefault();
    results[Math.min(at + 1, results.length - 1)].focus();
  } else if (event.key === "ArrowUp" && at >= 0) {
    event.preventDefault();
    if (at === 0) box.focus();
    else results[at - 1].focus();
  } else if (event.key === "Escape") {
    if (at >= 0 || document.activeElement?.closest?.("#results")) box.focus();
    else if (event.target === box && box.value) {
      event.preventDefault(); // the search box would clear itself; do it here to also reset the view
      box.value = "";
      onInput(true);
    }
  }
}

// --- start ------------------------------------------------------------------------------------

async function main() {
  try {
    state.site = await openSite(new URL("./", document.baseURI).href);
    // The navigation reads every index.json, one after another; a search does not need it, so a
    // page opened at #q=… answers first and fills the navigation alongside (other views wait).
    state.nav = renderNav();
    state.nav.catch(() => {}); // handled below (await state.nav), not an "uncaught" rejection meanwhile
    if (!params().get("q")?.trim()) await state.nav;
    window.addEventListener("hashchange", () => route().catch(showError));
    document.getElementById("query").addEventListener("input", () => onInput());
    document.getElementById("search-form").addEventListener("submit", (e) => {
      e.preventDefault();
      onInput(true);
    });
    for (const id of ["mode", "code"]) document.getElementById(id).addEventListener("change", () => onInput(true));
    document.addEventListener("keydown", onKey);
    await route();
    await state.nav;
  } catch (error) {
    showError(error);
  } finally {
    document.body.dataset.ready = "true";
  }
}

main();
