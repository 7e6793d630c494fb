// Markdown to safe DOM for the search page: markdown-it (raw HTML off, so "<script>" in a chunk
// is text) and then DOMPurify over its output as a second guard; both are the packages' own
// minified builds, copied into _assets/ at build time (pipeline/site/vendor.py) and loaded on
// first use. Links and images are resolved against the SOURCE document's URL: a chunk file lives
// in _chunks/ one level below its source, so its relative links would otherwise point wrong.

const ASSETS = new URL("./", import.meta.url);
const SCRIPTS = ["markdown-it.min.js", "purify.min.js"];
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

let libraries = null;

function loadScript(name) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = new URL(name, ASSETS).href;
    script.onload = resolve;
    script.onerror = () => reject(new Error(`cannot load ${script.src}`));
    document.head.append(script);
  });
}

/** MkDocs attribute lists ("## Title { #id }") are not markdown-it syntax: drop them from headings. */
function stripHeadingAttributes(md) {
  md.core.ruler.push("strip_heading_attributes", (state) => {
    state.tokens.forEach((token, i) => {
      if (token.type !== "heading_open") return;
      const inline = state.tokens[i + 1];
      const last = inline?.children?.at(-1);
      if (last?.type === "text") last.content = last.content.replace(/\s*\{\s*[#.:][^{}]*\}\s*$/u, "");
    });
  });
}

/** A paragraph that is only a MkDocs snippet include ("{* ../src/app.py hl[3] *}") names its file. */
function snippetIncludes(md) {
  md.core.ruler.push("snippet_includes", (state) => {
    state.tokens.forEach((token, i) => {
      const inline = state.tokens[i + 1];
      const m = token.type === "paragraph_open" && /^\{\*\s*(\S+)[^]*\*\}$/u.exec(inline?.content ?? "");
      if (!m) return;
      token.attrJoin("class", "include");
      const text = new state.Token("text", "", 0);
      text.content = `Code sample: ${m[1]} (not part of these pages)`;
      inline.children = [text];
    });
  });
}

/** Every top-level block carries data-line="<first source line, 0-based>" (to scroll to a chunk). */
function sourceLines(md) {
  md.core.ruler.push("source_lines", (state) => {
    for (const token of state.tokens) {
      if (token.map && token.level === 0 && token.nesting !== -1) token.attrSet("data-line", String(token.map[0]));
    }
  });
}

/** markdown-it and DOMPurify, loaded once from _assets/ (a rejected promise is retried next time). */
export function loadRenderer() {
  if (!libraries) {
    libraries = Promise.all(SCRIPTS.map(loadScript)).then(() => {
      const md = globalThis.markdownit({ html: false, linkify: true, typographer: false });
      md.linkify.set({ fuzzyLink: false, fuzzyEmail: false }); // "main.py" is a file name, not a link to Paraguay
      stripHeadingAttributes(md);
      snippetIncludes(md);
      sourceLines(md);
      return { md, purify: globalThis.DOMPurify };
    });
    libraries.catch(() => {
      libraries = null;
    });
  }
  return libraries;
}

/**
 * Front matter ("---" ... "---" at the top) is data for the pipeline, not text for readers:
 * replaced by as many empty lines, so line numbers (data-line, a chunk's start_line) still match.
 */
export function stripFrontMatter(text) {
  const m = /^---\r?\n[\s\S]*?\r?\n(?:---|\.\.\.)\r?\n/u.exec(text);
  return m ? "\n".repeat(m[0].split("\n").length - 1) + text.slice(m[0].length) : text;
}

/**
 * `markdown` rendered into a new <div class="markdown">. `sourceUrl`: absolute URL of the
 * source document (relative links and images resolve against it); `docLink(url)`: a page URL
 * for a link to another markdown document of the site, or null to keep the link as it is.
 */
export async function renderMarkdown(markdown, { sourceUrl, docLink = () => null, fragmentLink = null }) {
  const { md, purify } = await loadRenderer();
  const html = md.render(String(markdown));
  const fragment = purify.sanitize(html, { RETURN_DOM_FRAGMENT: true, FORBID_TAGS: ["style", "form"], FORBID_ATTR: ["style"] });
  const box = document.createElement("div");
  box.className = "markdown";
  box.append(fragment);
  for (const a of box.querySelectorAll("a[href]")) {
    const href = a.getAttribute("href");
    if (href.startsWith("#")) {
      // An in-document anchor: the page's own hash is its router, so go to the document instead.
      if (fragmentLink) a.setAttribute("href", fragmentLink);
      continue;
    }
    const url = new URL(href, sourceUrl);
    const page = SCHEME.test(href) ? null : docLink(url);
    a.setAttribute("href", page ?? url.href);
    if (url.origin !== location.origin) a.setAttribute("rel", "noopener noreferrer");
  }
  for (const img of box.querySelectorAll("img[src]")) {
    img.setAttribute("src", new URL(img.getAttribute("src"), sourceUrl).href);
    img.setAttribute("loading", "lazy");
  }
  for (const table of box.querySelectorAll("table")) {
    const wrap = document.createElement("div");
    wrap.className = "table-wrap"; // tables scroll inside the page, never the page itself
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return box;
}
