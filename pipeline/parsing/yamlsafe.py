"""Load untrusted YAML (front matter, knowledge-base entries) into JSON-safe data, or fail clearly.

Guarantees of ``load_yaml``:

- the result holds only ``dict`` (string keys), ``list``, ``str``, ``int`` (64-bit), finite
  ``float``, ``bool`` and ``None``, so every later step (manifests, orjson, browsers) can write it;
- anything else the safe loader accepts is converted (dates -> ISO strings, ``!!set`` -> sorted
  list, scalar keys -> strings) or raises ``PipelineError`` naming the file and the line of the
  offending node (``!!binary``, integers beyond 64 bits, ``.nan``/``.inf``, collection keys,
  recursive aliases, unknown tags);
- resources are bounded: nesting deeper than ``MAX_DEPTH`` and aliases that would add more than
  ``MAX_ALIAS_NODES`` nodes when expanded (a "billion laughs" bomb) are refused *before* anything
  is expanded. libyaml's composer recurses in C and crashes the process on very deep input, so
  text whose nesting cannot be bounded cheaply is composed by the pure-Python loader instead.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from pipeline.errors import PipelineError

MAX_DEPTH = 64  # collections inside collections; real front matter uses 2 or 3
MAX_ALIAS_NODES = 1_000  # extra nodes aliases may add when expanded: each copy lands in every chunk's metadata
_C_SAFE_DEPTH = 1_000  # libyaml composed 10,000 levels fine and crashed at 100,000; stay far below
_INT64 = (-(2**63), 2**64 - 1)  # signed and unsigned 64-bit (prompt hashes are unsigned)

_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG = "tag:yaml.org,2002:"


class YamlSyntaxError(PipelineError):
    """The text is not YAML at all (as opposed to YAML this pipeline refuses)."""


def load_yaml(text: str, path: str, first_line: int = 1, *, what: str = "") -> Any:
    """``text`` as JSON-safe data; ``first_line`` is the file line where ``text`` starts;
    ``what`` names it in a syntax error (``"front matter is "`` -> "front matter is not valid YAML")."""
    return load_yaml_node(text, path, first_line, what=what)[1]


def load_yaml_node(text: str, path: str, first_line: int = 1, *, what: str = "") -> tuple[yaml.Node | None, Any]:
    """The composed node graph (for source spans) and its JSON-safe value (see module doc)."""
    if _nesting_bound(text) > _C_SAFE_DEPTH:
        # Not parsed at all: libyaml recurses in C (a crash) and PyYAML's scanner is quadratic in
        # the depth (seconds for 2,000 brackets), while real front matter nests 2 or 3 deep.
        raise PipelineError(f"YAML nested more than {MAX_DEPTH} levels deep", path=path, line=first_line)
    try:
        node = yaml.compose(text, Loader=_FAST_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        raise YamlSyntaxError(f"{what}not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path, line=line) from None
    if node is None:
        return None, None
    _check_limits(node, path, first_line)
    return node, _Converter(path, first_line).value(node)


def yaml_type_field(text: str, path: str) -> str | None:
    """The top-level ``type`` of a YAML mapping, read from the node graph without building the
    data (a data file may hold values metadata refuses, like ``.inf``); limits apply as in
    ``load_yaml``. Raises YamlSyntaxError when ``text`` is not YAML."""
    if _nesting_bound(text) > _C_SAFE_DEPTH:
        raise PipelineError(f"YAML nested more than {MAX_DEPTH} levels deep", path=path, line=1)
    try:
        node = yaml.compose(text, Loader=_FAST_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlSyntaxError(f"not valid YAML: {getattr(exc, 'problem', None) or exc}", path=path,
                              line=mark.line + 1 if mark is not None else None) from None
    if not isinstance(node, yaml.MappingNode):
        return None
    _check_limits(node, path, 1)
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == "type" and isinstance(value_node, yaml.ScalarNode):
            return value_node.value
    return None


def _nesting_bound(text: str) -> int:
    """An upper bound on the collection nesting of ``text`` (cheap, before parsing): the deepest
    run of unclosed flow brackets plus, per line, the indentation and block indicators (``- ``,
    ``? ``) that open a level each. Brackets inside quoted strings count too, so a string with
    over a thousand unclosed ``[`` is refused as if it nested (no real document does that)."""
    depth = flow = 0
    for match in _BRACKETS.finditer(text):
        depth = depth + 1 if match[0] in "[{" else max(depth - 1, 0)
        flow = max(flow, depth)
    block = max((len(line) - len(line.lstrip(" -?\t")) for line in _LINES.split(text)), default=0)
    return flow + block + 1


_BRACKETS = re.compile(r"[\[\]{}]")
_LINES = re.compile(r"\r\n?|\n")


def _check_limits(root: yaml.Node, path: str, first_line: int) -> None:
    """Refuse cycles, depth beyond MAX_DEPTH and alias expansion beyond MAX_ALIAS_NODES, walking
    each distinct node once (sizes and depths are memoised, so a bomb costs its own size)."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:  # iterative post-order: no Python recursion on deep graphs
        node, done = stack.pop()
        ident = id(node)
        children = _children(node)
        if done:
            on_path.discard(ident)
            size[ident] = 1 + sum(size[id(c)] for c in children)
            depth[ident] = 1 + max((depth[id(c)] for c in children), default=0) if children else 0
            if depth[ident] > MAX_DEPTH:
                _fail(f"YAML nested more than {MAX_DEPTH} levels deep", node, path, first_line)
            continue
        if ident in size:
            continue
        if ident in on_path:
            _fail("recursive YAML alias (a node that contains itself) cannot become JSON", node, path, first_line)
        on_path.add(ident)
        distinct += 1
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                _fail("recursive YAML alias (a node that contains itself) cannot become JSON", child, path, first_line)
            if id(child) not in size:
                stack.append((child, False))
        if distinct > 10 * MAX_ALIAS_NODES + 10**6:  # hard stop for giant plain documents too
            _fail("YAML document has too many nodes", node, path, first_line)
    if size[id(root)] - distinct > MAX_ALIAS_NODES:
        _fail(
            f"YAML aliases expand to {size[id(root)]:,} nodes from {distinct:,} written "
            f"(limit: {MAX_ALIAS_NODES:,} added by aliases)",
            root, path, first_line,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _fail(message: str, node: yaml.Node, path: str, first_line: int):
    raise PipelineError(message, path=path, line=first_line + node.start_mark.line)


class _Converter:
    """Node graph -> JSON-safe value. Scalars go through PyYAML's safe constructors (so ``0x10``,
    ``1_000``, ``yes``/``no`` read as YAML 1.1 says); collections are built here."""

    def __init__(self, path: str, first_line: int):
        self.path, self.first_line = path, first_line
        self.scalars = SafeConstructor()

    def value(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if isinstance(node, yaml.SequenceNode):
            items = [self.value(n) for n in node.value]
            if node.tag == _TAG + "omap":
                return {k: v for item in items if isinstance(item, dict) for k, v in item.items()}
            if node.tag not in (_TAG + "seq", _TAG + "pairs"):
                _fail(f"unsupported YAML tag {node.tag}", node, self.path, self.first_line)
            return items
        if node.tag not in (_TAG + "map", _TAG + "set"):
            _fail(f"unsupported YAML tag {node.tag}", node, self.path, self.first_line)
        try:
            self.scalars.flatten_mapping(node)  # resolve `<<` merge keys as the safe loader does
        except yaml.YAMLError as exc:
            _fail(f"invalid YAML merge: {getattr(exc, 'problem', None) or exc}", node, self.path, self.first_line)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            out[self._key(key_node)] = self.value(value_node)
        if node.tag == _TAG + "set":
            return sorted(out)
        return out

    def _key(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            _fail("a YAML mapping key must be a plain value, not a list or mapping", node, self.path, self.first_line)
        key = self._scalar(node)
        if isinstance(key, bool) or key is None:
            return "true" if key is True else "false" if key is False else "null"  # as JSON spells them
        return str(key)

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        try:
            value = self.scalars.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            _fail(f"invalid YAML value: {getattr(exc, 'problem', None) or exc}", node, self.path, self.first_line)
        except ValueError as exc:  # e.g. a timestamp with day 31 in February
            _fail(f"invalid YAML value: {exc}", node, self.path, self.first_line)
        return check_scalar(value, self.path, self.first_line + node.start_mark.line)


def check_scalar(value: Any, path: str, line: int | None) -> Any:
    """A scalar as JSON can hold it: dates as ISO strings; bytes, non-finite floats and
    integers beyond 64 bits raise PipelineError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise PipelineError("integer does not fit in 64 bits (quote it to keep it as text)", path=path, line=line)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PipelineError(f"{value} has no JSON form (quote it to keep it as text)", path=path, line=line)
        return value
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        raise PipelineError("binary values (!!binary) are not supported in metadata", path=path, line=line)
    raise PipelineError(f"unsupported value of type {type(value).__name__}", path=path, line=line)


def json_safe(value: Any, path: str, line: int | None = None, _depth: int = 0) -> Any:
    """``value`` (e.g. from ``json.loads``) checked like YAML data: depth, 64-bit ints, finite floats."""
    if _depth > MAX_DEPTH:
        raise PipelineError(f"data nested more than {MAX_DEPTH} levels deep", path=path, line=line)
    if isinstance(value, dict):
        return {str(k): json_safe(v, path, line, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v, path, line, _depth + 1) for v in value]
    return check_scalar(value, path, line)
