"""The text a static encoder is fitted on: what ships in the installed packages, nothing fetched.

``packaged_corpus()``: Python's own reference documentation (``pydoc_data.topics``, shipped with
the interpreter), the long descriptions (READMEs) of the pipeline's installed dependencies,
transitively (``importlib.metadata``), and the docstrings of their first Python files, cut into short units a searcher might type or a document
might say: headings, sentences, and the first words of longer sentences. Code blocks, tables and
lines of mostly symbols are left out. The units are deduplicated and put in a deterministic
order (xxh64 of the text), so the same installed packages give the same corpus; its digest keys
the fitted table.

``site_corpus(texts)``: the same units cut from a site's own chunk texts (the alternative the
evaluation compares, bench/static_encoder.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import xxhash

ROOT_DISTRIBUTION = "pipeline"
MAX_UNITS = 60_000
MIN_WORDS, MAX_WORDS = 2, 32
DOCSTRING_FILES = 150  # Python files read for docstrings per distribution (torch has thousands)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(])")
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]{1,200}>|[*_`]{1,3}|\{[#.][^}]*\}")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'_-]*")


def _dependencies(root: str = ROOT_DISTRIBUTION) -> list[str]:
    """``root``'s installed requirements, transitively (extras and environment markers ignored),
    sorted, ``root`` itself left out (its README describes this project, not the world)."""
    import importlib.metadata as md

    from packaging.requirements import InvalidRequirement, Requirement

    seen: set[str] = set()
    found = []
    todo = [root]
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        if key != root:
            found.append(key)
        for spec in dist.requires or []:
            try:
                requirement = Requirement(spec)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and "extra" in str(requirement.marker):
                continue
            todo.append(requirement.name)
    return sorted(found)


def dependency_texts(root: str = ROOT_DISTRIBUTION) -> list[tuple[str, str]]:
    """[(distribution name, its long description)] of ``root``'s installed requirements
    (``_dependencies``), sorted by name."""
    import importlib.metadata as md

    out = []
    for name in _dependencies(root):
        meta = md.distribution(name).metadata
        body = meta.get_payload() or meta.get("Description") or ""
        if body:
            out.append((name, body))
    return out


def python_reference() -> list[str]:
    """The interpreter's reference topics (``pydoc_data.topics``), in key order, dedented (its
    prose is indented; its examples start with ``>>>`` or sit deeper)."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # a Python built without it
        return []
    return ["\n".join(line[3:] if line.startswith("   ") else line for line in topics[k].splitlines())
            for k in sorted(topics)]


def docstrings(root: str = ROOT_DISTRIBUTION, per_distribution: int = DOCSTRING_FILES) -> list[str]:
    """The docstrings (module, class, function) of the first ``per_distribution`` Python files
    (by path) of each of ``root``'s installed requirements (``dependency_texts``' set), dedented."""
    import ast
    import importlib.metadata as md
    import inspect

    out = []
    for name in _dependencies(root):
        try:
            files = sorted(str(f) for f in md.distribution(name).files or [] if str(f).endswith(".py"))
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        for rel in files[:per_distribution]:
            try:
                tree = ast.parse(dist.locate_file(rel).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node, clean=False)
                    if doc:
                        out.append(inspect.cleandoc(doc))
    return out


def units(text: str) -> Iterable[str]:
    """Headings, sentences and the first words of long sentences of a markdown or plain text,
    code blocks and tables left out."""
    fenced = False
    paragraph: list[str] = []

    def flush():
        prose = " ".join(paragraph)
        paragraph.clear()
        for sentence in _SENTENCE_END.split(prose):
            yield from _unit(sentence)

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            yield from flush()
            continue
        if fenced or line.startswith(("    ", "\t", "|", ">>>", "...")):
            yield from flush()
            continue
        heading = _HEADING.match(line)
        if heading:
            yield from flush()
            yield from _unit(heading.group(1))
        elif not line.strip() or set(line.strip()) <= set("=-*_~+#"):
            yield from flush()
        else:
            paragraph.append(line.strip().lstrip("-*+ ").strip())
    yield from flush()


def _unit(text: str) -> Iterable[str]:
    text = " ".join(_MARKUP.sub(lambda m: m.group(1) or "", text).split())
    words = text.split(" ")
    if not text or len(_WORD.findall(text)) < max(MIN_WORDS, len(words) // 2):
        return  # mostly symbols, numbers or code
    if len(words) > MAX_WORDS:
        yield " ".join(words[:12])
        text = " ".join(words[:MAX_WORDS])
    yield text


def corpus_units(texts: Iterable[str], limit: int = MAX_UNITS) -> list[str]:
    """Distinct units of ``texts`` (``units``), at most ``limit``, in xxh64 order."""
    found = {u for text in texts for u in units(text)}
    ordered = sorted(found, key=lambda u: (xxhash.xxh64_intdigest(u.encode("utf-8")), u))
    return ordered[:limit]


def packaged_corpus(limit: int = MAX_UNITS) -> list[str]:
    """The default fitting corpus (module docstring)."""
    return corpus_units([*python_reference(), *(body for _, body in dependency_texts()), *docstrings()], limit)


def site_corpus(texts: Iterable[str], limit: int = MAX_UNITS) -> list[str]:
    return corpus_units(texts, limit)
