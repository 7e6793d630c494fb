// The search page (index.html): browse sections and topics, read chunks in stripe order,
// search by question (SimHash) or keyword. Uses ./client.js only.
//
// Chunk text, titles and every other value from the site are inserted with textContent or
// as attribute values, never as HTML: a chunk containing <script> shows that text and runs
// nothing. (The page's Content-Security-Policy forbids inline scripts as a second guard.)

import { openSite, readingOrder } from "./client.js";

const PAGE = 3; // chunks shown per document, and added by "Show more"
const HITS = 10;

const state = { site: null, topic: null, order: "conceptual" };

/** An element with attributes and children; strings become text nodes. */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("data-")) node.setAttribute(key, String(value));
    else if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function view(...children) {
  const main = document.getElementById("view");
  main.replaceChildren(...children.filter((child) => child !== null && child !== undefined));
  return main;
}

function showError(error) {
  console.error(error);
  view(el("h1", {}, state.site?.title ?? "Error"), el("p", { class: "error", role: "alert" }, String(error.message ?? error)));
}

// --- navigation -------------------------------------------------------------------------------

async function renderNav() {
  const nodes = await state.site.nodes();
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const item = (node) => {
    const kids = node.children.map((id) => byId.get(id)).filter(Boolean);
    const label = node.documents
      ? el("a", { class: "topic", href: `#topic=${encodeURIComponent(node.id)}`, "data-topic": node.id }, node.title || node.id)
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
  const params = new URLSearchParams(location.hash.slice(1));
  const topic = params.get("topic");
  if (topic !== null) return showTopic(topic);
  markCurrent(null);
  const topics = await state.site.topics();
  view(
    el("h1", {}, state.site.title),
    el("p", { class: "muted" }, `${topics.length} topics. Pick one to read its chunks in stripe order, or search above.`),
  );
}

// --- reading ----------------------------------------------------------------------------------

function chunkArticle(chunk) {
  return el(
    "article",
    { class: "chunk", "data-document": chunk.document, "data-index": chunk.index },
    el(
      "header",
      {},
      el("span", { class: "index" }, `#${chunk.index}`),
      el("strong", {}, chunk.headerPath || chunk.title),
      chunk.isCode ? el("span", { class: "badge" }, "code") : null,
      chunk.keywords.length ? el("span", { class: "keywords" }, chunk.keywords.map((k) => k.name).join(", ")) : null,
      el("a", { href: chunk.href, class: "raw" }, "raw"),
    ),
    el("pre", { class: "chunk-text" }, chunk.text),
  );
}

async function showTopic(topicId) {
  markCurrent(topicId);
  const index = await state.site.topic(topicId);
  const technical = index.documents.some((d) => d.stripeOrderTechnical?.length);
  if (!technical) state.order = "conceptual";
  const orderPicker = technical
    ? el(
        "label",
        {},
        "Order: ",
        el(
          "select",
          { id: "order" },
          el("option", { value: "conceptual", selected: state.order === "conceptual" }, "conceptual"),
          el("option", { value: "technical", selected: state.order === "technical" }, "technical"),
        ),
      )
    : null;
  const sections = index.documents.map((doc) =>
    el(
      "section",
      { class: "document", "data-document": doc.name },
      el("h2", {}, doc.title),
      el("p", { class: "muted" }, el("a", { href: state.site.locate(doc.source) }, doc.source), ` · ${doc.items.length} chunks`),
      el("div", { class: "chunks" }),
    ),
  );
  view(el("h1", {}, index.node.title || topicId), orderPicker, ...sections);
  orderPicker?.querySelector("select").addEventListener("change", (event) => {
    state.order = event.target.value;
    showTopic(topicId).catch(showError);
  });
  await Promise.all(index.documents.map((doc, i) => showMore(topicId, doc, sections[i])));
}

async function showMore(topicId, doc, section) {
  const list = section.querySelector(".chunks");
  const shown = list.children.length;
  const chunks = await state.site.sample(topicId, shown + PAGE, { document: doc.name, order: state.order });
  list.append(...chunks.slice(shown).map(chunkArticle));
  section.querySelector("button.more")?.remove();
  const total = readingOrder(doc, state.order).length;
  if (list.children.length < total) {
    section.append(
      el("button", { class: "more", type: "button", onclick: () => showMore(topicId, doc, section).catch(showError) },
        `Show more (${total - list.children.length} left)`),
    );
  }
}

// --- search -----------------------------------------------------------------------------------

function hitItem(hit) {
  const body = el("div", { class: "hit-body" });
  const open = async () => {
    if (body.childElementCount) return body.replaceChildren();
    const chunk = await state.site.read(hit.chunk);
    body.replaceChildren(chunkArticle(chunk));
  };
  const score = hit.method === "simhash" ? `distance ${hit.distance}` : `score ${hit.score.toFixed(2)}`;
  return el(
    "li",
    { class: "hit", "data-method": hit.method, "data-topic": hit.topic, "data-index": hit.index, "data-source": hit.source },
    el("button", { class: "open", type: "button", onclick: () => open().catch(showError) }, hit.headerPath || hit.title),
    el("div", { class: "meta" }, `${hit.topic} · ${hit.source} · ${hit.method}, ${score}${hit.isCode ? " · code" : ""}`),
    body,
  );
}

async function onSearch(event) {
  event.preventDefault();
  const query = document.getElementById("query").value.trim();
  if (!query) return;
  const mode = document.getElementById("mode").value;
  const code = document.getElementById("code").value;
  const hits = await state.site.search(query, {
    k: HITS,
    method: mode === "keyword" ? "keyword" : "auto",
    isCode: code === "code" ? true : code === "prose" ? false : null,
  });
  markCurrent(null);
  view(
    el("h1", {}, `Results for “${query}”`),
    hits.length
      ? el("ol", { class: "hits" }, hits.map(hitItem))
      : el("p", { class: "muted", id: "no-hits" }, "No matching chunks. Try other words or the keyword mode."),
  );
}

// --- start ------------------------------------------------------------------------------------

async function main() {
  try {
    state.site = await openSite(new URL("./", document.baseURI).href);
    await renderNav();
    window.addEventListener("hashchange", () => route().catch(showError));
    document.getElementById("search-form").addEventListener("submit", (e) => onSearch(e).catch(showError));
    await route();
  } catch (error) {
    showError(error);
  } finally {
    document.body.dataset.ready = "true";
  }
}

main();
