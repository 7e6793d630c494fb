"""Imports go one way (issue 32). No module imported at the top of another imports it back,
directly or through others. The published format (``pipeline.siteformat``) is a leaf that imports
nothing of the pipeline but its allowed leaves; no writer of the site imports one of its readers
(the search index's writer reads the site it built through ``siteformat.reader``, as the client
does, not through the client); no two packages of ``pipeline/`` import each other, directly or
through others, counting function-local imports too. Imports under ``if TYPE_CHECKING:`` do not
count (they never run).

A package is ``pipeline.<name>`` (a folder, or a top-level module such as ``pipeline.config``)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pipeline"
LEAF = "pipeline.siteformat"
LEAF_MAY_IMPORT = {"pipeline.errors", "pipeline.fsutil", "pipeline.simhash"}
"""Tiny leaves of their own (``fsutil`` imports ``errors`` only, the others nothing)."""
WRITERS = {"pipeline.chunking", "pipeline.topicspec", "pipeline.index", "pipeline.search"}
READERS = {"pipeline.client", "pipeline.serve", "pipeline.agents"}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module):
    """(import node, True when at module level) of every import that runs: top level, ``try``
    and ``if`` bodies at module level count as module level; inside a def or class, local."""
    def walk(nodes, top):
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield node, top
            elif isinstance(node, ast.If) and _is_type_checking(node):
                yield from walk(node.orelse, top)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                yield from walk(ast.iter_child_nodes(node), False)
            else:
                yield from walk(ast.iter_child_nodes(node), top)
    yield from walk(tree.body, True)


def import_edges(root: Path = PACKAGE) -> list[tuple[str, str, bool, int]]:
    """(importing module, imported module of the package, module level?, line) for every import
    of every module under ``root`` (``from package import module`` names the module)."""
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(p, root) for p in paths}
    edges = []
    for path in paths:
        name = module_name(path, root)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, top in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.append((name, target, top, node.lineno))
    return edges


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph(edges, *, local: bool) -> dict[str, set[str]]:
    """Which package imports which (module-level imports; function-local ones too when ``local``)."""
    graph: dict[str, set[str]] = {}
    for source, target, top, _ in edges:
        graph.setdefault(package_of(source), set())
        graph.setdefault(package_of(target), set())
        if (top or local) and package_of(source) != package_of(target):
            graph[package_of(source)].add(package_of(target))
    return graph


def leaf_violations(edges) -> list[str]:
    """Imports by the leaf of a pipeline module other than its own and its allowed leaves,
    and imports by an allowed leaf of anything but another allowed leaf."""
    bad = []
    for source, target, _, line in edges:
        if package_of(source) == LEAF and package_of(target) not in {LEAF, *LEAF_MAY_IMPORT}:
            bad.append(f"{source}:{line} imports {target}")
        if source in LEAF_MAY_IMPORT and target not in LEAF_MAY_IMPORT:
            bad.append(f"{source}:{line} imports {target}")
    return bad


def writer_to_reader_edges(edges, writers=WRITERS, readers=READERS) -> list[str]:
    """Imports by a writer of the site of one of its readers (by a reader of a writer, swapped)."""
    return [f"{s}:{line} imports {t}" for s, t, _, line in edges if package_of(s) in writers and package_of(t) in readers]


def test_the_format_package_is_a_leaf():
    edges = import_edges()
    assert any(package_of(s) == LEAF for s, _, _, _ in edges), "the leaf package imports nothing: renamed?"
    assert leaf_violations(edges) == []


def test_no_package_level_cycle_at_module_level():
    assert cycles(package_graph(import_edges(), local=False)) == []


def test_no_package_level_cycle_counting_function_local_imports():
    """A deferred import (a heavy runtime, a stage reached on some paths) still goes down."""
    assert cycles(package_graph(import_edges(), local=True)) == []


def test_no_writer_imports_a_reader_and_no_reader_a_writer():
    """Both read and write the format through ``pipeline.siteformat`` (the query-side code too:
    the tokenizer, the rankings, the packed records and the vector rows)."""
    edges = import_edges()
    assert writer_to_reader_edges(edges) == []
    assert writer_to_reader_edges(edges, READERS, WRITERS) == []


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path):
    """The checks above on a package made to break them: a leaf module importing a stage inside
    a function, two packages importing each other (one of them inside a function), and an
    import under TYPE_CHECKING that must not count."""
    root = tmp_path / "pipeline"
    files = {
        "__init__.py": "",
        "errors.py": "",
        "siteformat/__init__.py": "",
        "siteformat/tree.py": "from pipeline.errors import E\n\ndef f():\n    from pipeline.search import index\n",
        "search/__init__.py": "",
        "search/index.py": "from pipeline.siteformat import tree\n\ndef g():\n    from pipeline.client.site import open_site\n",
        "client/__init__.py": "",
        "client/site.py": "from typing import TYPE_CHECKING\nfrom pipeline.search.index import g\n"
                          "if TYPE_CHECKING:\n    from pipeline.site import build\n",
        "site/__init__.py": "",
        "site/build.py": "from pipeline.client import site\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    edges = import_edges(root)
    assert leaf_violations(edges) == ["pipeline.siteformat.tree:4 imports pipeline.search.index"]
    assert cycles(package_graph(edges, local=False)) == []  # search -> client only inside g()
    assert cycles(package_graph(edges, local=True)) == [["pipeline.client", "pipeline.search", "pipeline.siteformat"]]
    assert writer_to_reader_edges(edges) == ["pipeline.search.index:4 imports pipeline.client.site"]
    assert writer_to_reader_edges(edges, READERS, WRITERS) == ["pipeline.client.site:2 imports pipeline.search.index"]
    assert "pipeline.site" not in package_graph(edges, local=True)["pipeline.client"]  # TYPE_CHECKING


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Which modules each module imports at module level (``try`` and ``if`` bodies included)."""
    graph = {module_name(p, root): set() for p in root.rglob("*.py")}
    for source, target, top, _ in import_edges(root):
        if top:
            graph[source].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_module_level_imports_have_no_cycle():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle_and_ignores_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_relative_and_package_imports_resolve_to_modules():
    graph = import_graph()
    assert "pipeline.search.layout" in graph["pipeline.search.index"]  # `from pipeline.search import layout`
    assert "pipeline.errors" in graph["pipeline.search.assemble"]  # `from pipeline.errors import PipelineError`
    assert all(target in graph for targets in graph.values() for target in targets)
