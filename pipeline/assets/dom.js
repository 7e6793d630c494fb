// DOM builders of the search page: values become text nodes or attribute values, never HTML.

/** An element with attributes and children; strings become text nodes. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "onclick") node.addEventListener("click", value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** highlight()/excerpt() segments as text nodes and <mark> elements. */
export function marked(segments) {
  return segments.map((s) => (s.hit ? el("mark", {}, s.text) : document.createTextNode(s.text)));
}
