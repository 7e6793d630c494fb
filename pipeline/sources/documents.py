"""Which files of a content tree are documents.

A document is a ``*.md`` file other than the reserved names (``siteformat.tree.RESERVED_NAMES``)
or a knowledge-base entry stored as ``.yaml``/``.yml``/``.json`` (``is_entry_file``), in a node
directory (``siteformat.tree.site_dirs``). Symbolic links are never followed.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path, PurePosixPath

from pipeline.errors import PipelineError
from pipeline.fsutil import LinkRefused, Vanished, read_below
from pipeline.parsing.yamlsafe import YamlSyntaxError, yaml_type_field
from pipeline.siteformat.tree import RESERVED_NAMES, SourceDoc, is_hidden, site_dirs, usable
from pipeline.sources.exclude import Exclude

ENTRY_TYPES = {"definition", "error", "how_to", "workflow"}
ENTRY_SUFFIXES = {".json", ".yaml", ".yml"}


def is_entry_file(path: Path) -> bool:
    """A ``.yaml``/``.yml``/``.json`` file that holds one knowledge-base entry: a mapping whose
    ``type`` is an entry type. Other data files (configs, ``package.json``) are not documents;
    one that does not parse is skipped with a warning naming it (it may be a broken entry).
    A symbolic link is none (never followed, read with ``O_NOFOLLOW``: ``fsutil.read_below``)."""
    if path.suffix.lower() not in ENTRY_SUFFIXES:
        return False
    try:
        try:
            data = read_below(path.parent, path.name)
        except (LinkRefused, Vanished):
            return False
        if path.suffix.lower() == ".json":
            value = json.loads(data)
        else:  # read by node, with the limits of untrusted YAML (a bomb or a depth crash is an error)
            value = {"type": yaml_type_field(data.decode("utf-8"), str(path))}
    except RecursionError:
        raise PipelineError("JSON nested too deeply", path=path, line=1) from None
    except (OSError, ValueError, YamlSyntaxError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else getattr(exc, "lineno", None) or getattr(exc, "line", None)
        reason = getattr(exc, "problem", None) or getattr(exc, "msg", None) or str(exc).splitlines()[0]
        if isinstance(exc, YamlSyntaxError):
            reason = exc.message.removeprefix("not valid YAML: ")
        where = f"{path}:{line}" if line else str(path)
        warnings.warn(f"{where}: not a document: does not parse as a knowledge-base entry ({reason})", UserWarning, stacklevel=2)
        return False
    kind = value.get("type") if isinstance(value, dict) else None
    return isinstance(kind, str) and entry_type(kind) in ENTRY_TYPES


def entry_type(kind: str) -> str:
    """An entry's ``type`` as ENTRY_TYPES spells it (``How-To`` -> ``how_to``)."""
    return kind.strip().lower().replace("-", "_")


def documents_in(root: Path, dir_rel: str) -> list[SourceDoc]:
    """The documents directly in ``dir_rel``, sorted by name. Names the site cannot hold are
    skipped with a warning (``usable``), symbolic links too (never
    followed: ``sources/confine.py``); two documents with one key (``x.yaml`` and
    ``x.yaml.md``) are a PipelineError naming both."""
    base = root / dir_rel
    docs: dict[str, SourceDoc] = {}
    prefix = f"{dir_rel}/" if dir_rel else ""
    # names, not Paths (one folder: the same order): a rebuild lists every document of the site
    with os.scandir(base) as entries:
        names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    for name in names:
        if is_hidden(name) or name in RESERVED_NAMES or not usable(base, name):
            continue
        if name.endswith(".md") or is_entry_file(base / name):
            doc = SourceDoc(root, prefix + name)
            if doc.key in docs:
                raise PipelineError(
                    f"{docs[doc.key].name} and {doc.name} would both publish as {doc.key!r}: rename one of them",
                    path=doc.path,
                )
            docs[doc.key] = doc
    return list(docs.values())  # in the order of ``names``: sorted by ``rel`` (one prefix)


def all_documents(root: Path, exclude: Exclude | None = None) -> list[SourceDoc]:
    """Every document under ``root`` but those ``exclude`` names."""
    docs = [doc for d in site_dirs(root) for doc in documents_in(root, d)]
    return [doc for doc in docs if not exclude.excludes(doc.rel)] if exclude else docs


def has_documents(root: Path, dir_rel: str) -> bool:
    """``bool(documents_in(root, dir_rel))`` without listing them all: true at the first file
    that is one (``node_dirs`` asks this of every folder of a site on every rebuild)."""
    base = root / dir_rel
    with os.scandir(base) as entries:
        names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
    for name in names:  # sorted: the same files (and warnings) as documents_in, up to the first document
        if is_hidden(name) or name in RESERVED_NAMES or not usable(base, name):
            continue
        if PurePosixPath(name).suffix == ".md" or is_entry_file(base / name):
            return True
    return False


def node_dirs(root: Path) -> list[str]:
    """``site_dirs`` that hold a document somewhere below them (the root always): the site's
    nodes, each with an index.json. A folder of images, CSS or scripts is no topic."""
    dirs = site_dirs(root)
    keep = {""}
    for d in dirs:
        if d and d not in keep and has_documents(root, d):
            parts = d.split("/")
            keep.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))  # it and its ancestors
    return [d for d in dirs if d in keep]
