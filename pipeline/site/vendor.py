"""Third-party browser files the search page needs, copied from ``node_modules`` into ``_assets/``.

The page renders chunks and documents as markdown with markdown-it and sanitises the HTML with
DOMPurify. Both come from the npm lock file (``package.json``; ``make`` runs ``npm ci``) and are
copied at build time, never committed and never fetched from a CDN: the site stays
self-contained.

Where ``node_modules`` is found, first match wins:

1. ``$PIPELINE_NODE_MODULES`` (a ``node_modules`` folder), when set;
2. ``node_modules`` next to the repository holding this package (a source checkout);
3. ``node_modules`` in the current directory.

The same folder holds esbuild (``TOOLS``), which bundles the search page's script
(``site/bundle.py``); it is a build tool, never copied. A missing folder or file is a PipelineError
naming what is missing and how to install it, raised by ``check_vendored`` before a build writes
anything.
"""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.errors import PipelineError

ENV_VAR = "PIPELINE_NODE_MODULES"

# Name in ``_assets/`` -> path inside ``node_modules``: the packages' own minified browser builds
# (UMD: each defines one global, ``markdownit`` / ``DOMPurify``, when loaded by a <script>).
VENDORED: dict[str, str] = {
    "markdown-it.min.js": "markdown-it/dist/browser/markdown-it.umd.min.js",
    "purify.min.js": "dompurify/dist/purify.min.js",
}

# Paths inside ``node_modules`` the build runs, not ships: esbuild's executable (a devDependency).
TOOLS: dict[str, str] = {
    "esbuild": "esbuild/bin/esbuild",
}

INSTALL_HINT = "run `npm ci` in the repository (or `make install`), or set PIPELINE_NODE_MODULES to a node_modules folder"


def node_modules_candidates() -> list[Path]:
    """The folders searched for ``node_modules``, in order (see the module docstring)."""
    out = []
    env = os.environ.get(ENV_VAR)
    if env:
        out.append(Path(env))
    out.append(Path(__file__).resolve().parents[2] / "node_modules")
    out.append(Path.cwd() / "node_modules")
    return out


def find_node_modules() -> Path:
    """The first candidate folder that holds every vendored file and tool; PipelineError when none does."""
    candidates = node_modules_candidates()
    needed = [*VENDORED.values(), *TOOLS.values()]
    for folder in candidates:
        if all((folder / rel).is_file() for rel in needed):
            return folder
    first = candidates[0]
    missing = [rel for rel in needed if not (first / rel).is_file()]
    searched = ", ".join(str(c) for c in candidates)
    raise PipelineError(
        f"the search page needs {', '.join(missing)} from node_modules (searched {searched}); {INSTALL_HINT}",
        path=first,
    )


def check_vendored() -> None:
    """Raise PipelineError now (before a build writes anything) when a vendored file is missing."""
    find_node_modules()


def tool_path(name: str) -> Path:
    """The executable of a build tool in ``TOOLS`` (in ``find_node_modules()``)."""
    return find_node_modules() / TOOLS[name]


def vendored_assets() -> dict[str, bytes]:
    """The vendored files by their name in ``_assets/`` (read from ``find_node_modules()``)."""
    folder = find_node_modules()
    return {name: (folder / rel).read_bytes() for name, rel in sorted(VENDORED.items())}
