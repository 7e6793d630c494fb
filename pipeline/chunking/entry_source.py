"""Read a knowledge-base entry (seed 004) with the source span of each of its fields.

An entry is a YAML or JSON mapping (``id``, ``type``, ``title``, fields, optionally nested in
``rawFormData``), or markdown whose front matter has ``type:`` and whose headings name the
sections. Every span points into the file text exactly as read. A markdown entry's chunk shows
its span verbatim (``content`` ends with ``text[start:end]``); a YAML/JSON entry's shows the
markdown rendering of its span (``entry_render.py``), which ``Entry.body`` and each
``EntrySection.rendering`` hold.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import yaml

from pipeline.chunking.entry_render import Rendering, SourceNode, render_fields, render_section
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import BOM, ParsedDocument
from pipeline.parsing.yamlsafe import json_safe, load_yaml, load_yaml_node

# Canonical section name, its label, and the field names / headings that mean it (compared
# lowercase with everything but letters and digits removed).
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("overview", "Overview", ("overview", "description", "summary", "introduction", "intro")),
    ("prerequisites", "Prerequisites", ("prerequisites", "prereqs", "requirements", "beforeyoubegin")),
    ("steps", "Steps", ("steps", "instructions", "procedure")),
    ("issues", "Common Issues", ("commonissues", "issues", "knownissues", "troubleshooting")),
    ("tips", "Tips", ("tips", "besttips", "bestpractices", "tipsandtricks")),
)
FORM_KEYS = ("rawformdata", "formdata", "fields")
STRUCTURAL_KEYS = {"id", "type", "entrytype", "title", *FORM_KEYS}
# Seed 004's standard metadata: in every chunk's metadata, so not in the text of one whose
# fields sit at the top level (no ``rawFormData``).
METADATA_KEYS = {"usertype", "category", "subcategory", "product", "tags"}
STRUCTURED_SUFFIXES = {".json", ".yaml", ".yml"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}


@dataclass(frozen=True)
class EntrySection:
    """``text[start:end]`` is the source of one section; ``summary_text`` is it as plain prose;
    ``rendering`` (a YAML/JSON entry's) is what its chunks show instead of the source."""

    name: str
    label: str
    start: int
    end: int
    summary_text: str
    rendering: Rendering | None = None


@dataclass(frozen=True)
class Entry:
    type: str  # '' when the input has none
    title: str
    entry_id: str
    whole: tuple[int, int]  # the span a single-chunk entry covers
    sections: tuple[EntrySection, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)  # other top-level fields, snake_case keys
    body: Rendering | None = None  # a YAML/JSON entry's fields as markdown (what ``whole`` shows)
    source_format: str = "markdown"  # or "yaml", "json"


def key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def section_for(name: str) -> tuple[str, str] | None:
    """``(canonical name, label)`` when ``name`` (a field or heading) names a section."""
    k = key(name)
    for canonical, label, aliases in SECTIONS:
        if k in aliases:
            return canonical, label
    return None


def snake(name: str) -> str:
    """``userType`` -> ``user_type``; ``Some Field`` -> ``some_field``."""
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", str(name))
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()


def to_string(value: Any) -> str:
    """A field value as prose (seed 004 ``_to_string``): lists one item a line (steps given as
    mappings are numbered), mappings as ``key: value`` lines, None as ''."""
    if value is None:
        return ""
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return "\n".join(f"{i}. {to_string(_first_text(v))}" for i, v in enumerate(value, 1))
        return "\n".join(to_string(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(f"{k}: {to_string(v)}" for k, v in value.items())
    return str(value).strip()


def _first_text(item: dict) -> Any:
    for name in ("action", "step", "text", "description", "title"):
        if name in item:
            return item[name]
    return next(iter(item.values()), "")


def read_entry(document: ParsedDocument) -> Entry:
    """The entry in ``document``: structured (YAML/JSON by suffix, or sniffed when the path has
    no markdown suffix) or markdown."""
    suffix = PurePath(document.path).suffix.lower()
    if suffix in STRUCTURED_SUFFIXES:
        return _read_structured(document, json_input=suffix == ".json")
    if suffix not in MARKDOWN_SUFFIXES and not document.front_matter:
        body = document.text[document.body_start :].lstrip()
        if body.startswith("{"):
            return _read_structured(document, json_input=True)
        try:
            data = load_yaml(document.text[document.body_start :], document.path)
        except PipelineError:
            data = None
        if isinstance(data, dict) and "type" in data:
            return _read_structured(document, json_input=False)
    return _read_markdown(document)


# -- markdown ---------------------------------------------------------------------------------


def _read_markdown(document: ParsedDocument) -> Entry:
    text, fm = document.text, document.front_matter
    whole = _trim(text, document.body_start, len(text))
    starts: list[tuple[int, str, str, int]] = []  # (start, name, label, heading end)
    for block in document.blocks:
        if block.kind == "heading":
            found = section_for(block.heading)
            if found:
                starts.append((block.start, *found, block.end))
    sections = []
    for n, (start, name, label, heading_end) in enumerate(starts):
        begin = whole[0] if n == 0 else start  # text before the first section belongs to it
        end = starts[n + 1][0] if n + 1 < len(starts) else len(text)
        begin, end = _trim(text, begin, end)
        if begin < end:
            sections.append(EntrySection(name, label, begin, end, _prose(text[heading_end:end])))
    metadata = {snake(k): v for k, v in fm.items() if key(k) not in STRUCTURAL_KEYS and key(k) != "chunking"}
    return Entry(
        type=str(fm.get("type") or fm.get("entryType") or fm.get("entry_type") or ""),
        title=document.title,
        entry_id=str(fm.get("id") or PurePath(document.path).stem),
        whole=whole,
        sections=tuple(sections),
        metadata=metadata,
    )


_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[`~]*[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)


def _prose(markdown: str) -> str:
    """Markdown as one line of prose for a summary: code blocks, headings, list markers and
    emphasis dropped."""
    markdown = _FENCED.sub(" ", markdown)
    lines = [re.sub(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+[.)]\s+|>\s?)", "", line) for line in markdown.splitlines()]
    return re.sub(r"\s+", " ", re.sub(r"[*_`]{1,3}", "", " ".join(lines))).strip()


# -- YAML / JSON ------------------------------------------------------------------------------


def _read_structured(document: ParsedDocument, *, json_input: bool) -> Entry:
    text = document.text
    origin = len(BOM) if text.startswith(BOM) else 0
    root = _json_root(text, origin, document.path) if json_input else _yaml_root(text, origin, document.path)
    whole = _trim(text, origin, len(text))
    stem = PurePath(document.path).stem
    source_format = "json" if json_input else "yaml"
    if root is None or not isinstance(root.value, dict):
        return Entry(type="", title="", entry_id=stem, whole=whole, source_format=source_format)
    data = root.value
    form_key = next((k for k in root.children if key(k) in FORM_KEYS and isinstance(root.children[k].value, dict)), None)
    form = root.children[form_key] if form_key else root
    sections = []
    seen = set()
    for name, child in form.children.items():
        found = section_for(name)
        if not found or found[0] in seen or not to_string(child.value):
            continue
        seen.add(found[0])
        start, end = _trim(text, child.start, child.end)
        if start < end:
            rendering = render_section(text, child, numbered=found[0] == "steps")
            sections.append(EntrySection(found[0], found[1], start, end, re.sub(r"\s+", " ", to_string(child.value)), rendering))
    order = [s[0] for s in SECTIONS]
    sections.sort(key=lambda s: order.index(s.name))
    metadata = {snake(k): v for k, v in data.items() if key(k) not in STRUCTURAL_KEYS}
    shown = [(k, node) for k, node in form.children.items() if form_key or key(k) not in STRUCTURAL_KEYS | METADATA_KEYS]
    body = render_fields(text, shown)
    span = body.source_span(0, len(body.text)) if body.text.strip() else None
    return Entry(
        type=str(data.get("type") or data.get("entryType") or data.get("entry_type") or ""),
        title=str(data.get("title") or _first_text_field(form.value) or ""),
        entry_id=str(data.get("id") or stem),
        # nothing to render (only an id, a type, a title): the source is shown as it is
        whole=span or (_trim(text, form.start, form.end) if form_key else whole),
        sections=tuple(sections),
        metadata=metadata,
        body=body if span else None,
        source_format=source_format,
    )


def _first_text_field(form: Any) -> str:
    if isinstance(form, dict):
        for name in ("term", "name", "errorCode", "error_code"):
            if isinstance(form.get(name), (str, int)):
                return str(form[name])
    return ""


def _yaml_root(text: str, origin: int, path: str) -> SourceNode | None:
    # Composed without the BOM: libyaml's marks do not count it (PyYAML's do).
    node, data = load_yaml_node(text[origin:], path)
    if node is None:
        return None
    return _from_yaml_node(text, node, data, origin)


def _from_yaml_node(text: str, node: yaml.Node, value: Any, origin: int, key_node: yaml.Node | None = None) -> SourceNode:
    children: dict[str, SourceNode] = {}
    items = None
    if isinstance(node, yaml.MappingNode) and isinstance(value, dict):
        for k, value_node in node.value:
            name = k.value
            if name in value:
                children[name] = _from_yaml_node(text, value_node, value[name], origin, k)
    elif isinstance(node, yaml.SequenceNode) and isinstance(value, list) and len(value) == len(node.value):
        items = tuple(_from_yaml_node(text, n, v, origin) for n, v in zip(node.value, value))
    keys = (key_node.start_mark.index + origin, key_node.end_mark.index + origin) if key_node is not None else (-1, -1)
    style = node.style if isinstance(node, yaml.ScalarNode) else None
    start, end = node.start_mark.index + origin, node.end_mark.index + origin
    # a block collection's or scalar's end mark lies past the line breaks after it
    return SourceNode(value, start, _trim(text, start, end)[1], children, items, style, *keys)


def _json_root(text: str, origin: int, path: str) -> SourceNode:
    try:
        data = json_safe(json.loads(text[origin:]), path)
    except json.JSONDecodeError as exc:
        raise PipelineError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise PipelineError("JSON nested too deeply", path=path, line=1) from None
    start = _skip_ws(text, origin)
    if isinstance(data, (dict, list)):
        return _json_value(text, start, data, _trim(text, start, len(text))[1])
    return SourceNode(data, start, _trim(text, start, len(text))[1])


_DECODER = json.JSONDecoder()


def _json_value(text: str, pos: int, value: Any, end: int, keys: tuple[int, int] = (-1, -1)) -> SourceNode:
    """``text[pos:end]`` is a JSON value already decoded as ``value``: its node, with the spans
    of an object's members and an array's items."""
    if isinstance(value, dict):
        return _json_object(text, pos, value, keys)
    if isinstance(value, list):
        return _json_array(text, pos, value, keys)
    return SourceNode(value, pos, end, style='"' if isinstance(value, str) else None, key_start=keys[0], key_end=keys[1])


def _json_object(text: str, pos: int, data: dict, keys: tuple[int, int] = (-1, -1)) -> SourceNode:
    """``text[pos]`` opens an object already decoded as ``data``: the spans of its members."""
    start = pos
    children: dict[str, SourceNode] = {}
    pos = _skip_ws(text, pos + 1)
    if text[pos] == "}":
        return SourceNode(data, start, pos + 1, key_start=keys[0], key_end=keys[1])
    while True:
        name_start = pos
        name, pos = _DECODER.raw_decode(text, pos)
        name_end = pos
        pos = _skip_ws(text, _skip_ws(text, pos) + 1)  # past ':'
        value, end = _DECODER.raw_decode(text, pos)
        children[name] = _json_value(text, pos, value, end, (name_start, name_end))
        pos = _skip_ws(text, end)
        if text[pos] == "}":
            return SourceNode(data, start, pos + 1, children, key_start=keys[0], key_end=keys[1])
        pos = _skip_ws(text, pos + 1)  # past ','


def _json_array(text: str, pos: int, data: list, keys: tuple[int, int]) -> SourceNode:
    """``text[pos]`` opens an array already decoded as ``data``: the spans of its items."""
    start = pos
    items: list[SourceNode] = []
    pos = _skip_ws(text, pos + 1)
    if text[pos] == "]":
        return SourceNode(data, start, pos + 1, items=(), key_start=keys[0], key_end=keys[1])
    while True:
        value, end = _DECODER.raw_decode(text, pos)
        items.append(_json_value(text, pos, value, end))
        pos = _skip_ws(text, end)
        if text[pos] == "]":
            return SourceNode(data, start, pos + 1, items=tuple(items), key_start=keys[0], key_end=keys[1])
        pos = _skip_ws(text, pos + 1)  # past ','


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end
