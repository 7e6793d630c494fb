"""Read a knowledge-base entry (seed 004) with the source span of each of its fields.

An entry is a YAML or JSON mapping (``id``, ``type``, ``title``, fields, optionally nested in
``rawFormData``), or markdown whose front matter has ``type:`` and whose headings name the
sections. Every span points into the file text exactly as read, so a chunk's content can end
with ``text[start:end]``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import yaml

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
STRUCTURED_SUFFIXES = {".json", ".yaml", ".yml"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdx"}


@dataclass(frozen=True)
class EntrySection:
    """``text[start:end]`` is the source of one section; ``summary_text`` is it as plain prose."""

    name: str
    label: str
    start: int
    end: int
    summary_text: str


@dataclass(frozen=True)
class Entry:
    type: str  # '' when the input has none
    title: str
    entry_id: str
    whole: tuple[int, int]  # the span a single-chunk entry covers
    sections: tuple[EntrySection, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)  # other top-level fields, snake_case keys


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


@dataclass(frozen=True)
class _Field:
    value: Any
    start: int
    end: int
    children: dict[str, "_Field"] = field(default_factory=dict)


def _read_structured(document: ParsedDocument, *, json_input: bool) -> Entry:
    text = document.text
    origin = len(BOM) if text.startswith(BOM) else 0
    root = _json_root(text, origin, document.path) if json_input else _yaml_root(text, document.path)
    whole = _trim(text, origin, len(text))
    stem = PurePath(document.path).stem
    if root is None or not isinstance(root.value, dict):
        return Entry(type="", title="", entry_id=stem, whole=whole)
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
            sections.append(EntrySection(found[0], found[1], start, end, re.sub(r"\s+", " ", to_string(child.value))))
    order = [s[0] for s in SECTIONS]
    sections.sort(key=lambda s: order.index(s.name))
    metadata = {snake(k): v for k, v in data.items() if key(k) not in STRUCTURAL_KEYS}
    return Entry(
        type=str(data.get("type") or data.get("entryType") or data.get("entry_type") or ""),
        title=str(data.get("title") or _first_text_field(form.value) or ""),
        entry_id=str(data.get("id") or stem),
        whole=_trim(text, form.start, form.end) if form_key else whole,
        sections=tuple(sections),
        metadata=metadata,
    )


def _first_text_field(form: Any) -> str:
    if isinstance(form, dict):
        for name in ("term", "name", "errorCode", "error_code"):
            if isinstance(form.get(name), (str, int)):
                return str(form[name])
    return ""


def _yaml_root(text: str, path: str) -> _Field | None:
    node, data = load_yaml_node(text, path)
    if node is None:
        return None
    return _from_yaml_node(node, data)


def _from_yaml_node(node: yaml.Node, value: Any) -> _Field:
    children: dict[str, _Field] = {}
    if isinstance(node, yaml.MappingNode) and isinstance(value, dict):
        for key_node, value_node in node.value:
            name = key_node.value
            if name in value:
                children[name] = _from_yaml_node(value_node, value[name])
    return _Field(value, node.start_mark.index, node.end_mark.index, children)


def _json_root(text: str, origin: int, path: str) -> _Field:
    try:
        data = json_safe(json.loads(text[origin:]), path)
    except json.JSONDecodeError as exc:
        raise PipelineError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except RecursionError:
        raise PipelineError("JSON nested too deeply", path=path, line=1) from None
    start = _skip_ws(text, origin)
    if isinstance(data, dict):
        return _json_object(text, start, data)
    return _Field(data, start, _trim(text, start, len(text))[1])


_DECODER = json.JSONDecoder()


def _json_object(text: str, pos: int, data: dict) -> _Field:
    """``text[pos]`` opens an object already decoded as ``data``: the spans of its members."""
    start = pos
    children: dict[str, _Field] = {}
    pos = _skip_ws(text, pos + 1)
    if text[pos] == "}":
        return _Field(data, start, pos + 1)
    while True:
        name, pos = _DECODER.raw_decode(text, pos)
        pos = _skip_ws(text, _skip_ws(text, pos) + 1)  # past ':'
        value, end = _DECODER.raw_decode(text, pos)
        children[name] = _json_object(text, pos, value) if isinstance(value, dict) else _Field(value, pos, end)
        pos = _skip_ws(text, end)
        if text[pos] == "}":
            return _Field(data, start, pos + 1, children)
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
