"""The search page's script as one file: ``app.js`` and every module it imports statically,
bundled by esbuild (``node_modules``, a devDependency) at build time.

A cold query on the page then costs one request of our code instead of one per module (24).
Guarantees:

* the same ``pipeline/assets`` and esbuild version give the same bytes (esbuild is deterministic;
  it runs in the assets folder, so the module comments it writes name ``client.js``, not a path);
* the name is ``app-<12 hex of the bytes' xxh3-64>.js`` (``search/layout.content_hash``): a name never
  holds other bytes, so hosts may cache it for good (``serve/rules.py``, ``build/nginx.conf``);
* ESM, not minified (messages, names and stack traces stay readable), no source map;
* ``embed.js`` (the optional query model, imported dynamically) stays outside: the bundle imports
  ``./embed.js`` by URL, the module ``_assets/`` ships beside the bundle; ``import.meta.url`` in
  the bundle is ``_assets/``, as it is in the modules, so relative URLs mean the same.

The individual modules are shipped too (``publish.shipped_assets``): ``client.js`` stays importable.
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import resources

from pipeline.errors import PipelineError
from pipeline.search.layout import content_hash
from pipeline.site.vendor import tool_path

ENTRY = "app.js"
EXTERNAL = ("./embed.js",)  # dynamic imports loaded by URL, not bundled
PREFIX = "app-"


def esbuild_args(entry: str = ENTRY) -> list[str]:
    """esbuild's arguments (the bundle goes to stdout)."""
    return [entry, "--bundle", "--format=esm", "--charset=utf8", "--log-level=warning",
            *(f"--external:{path}" for path in EXTERNAL)]


@lru_cache(maxsize=1)
def page_bundle() -> tuple[str, bytes]:
    """(name in ``_assets/``, bytes) of the page's script bundle; PipelineError when esbuild fails."""
    return bundle(ENTRY, PREFIX)


def bundle(entry: str, prefix: str) -> tuple[str, bytes]:
    """(``<prefix><12 hex>.js``, bytes): the module ``entry`` of ``pipeline/assets`` and every module
    it imports statically, as one file (also how a reader's own page would ship ``client.js``)."""
    exe = tool_path("esbuild")
    folder = resources.files("pipeline") / "assets"
    with resources.as_file(folder) as cwd:
        try:
            done = subprocess.run([str(exe), *esbuild_args(entry)], cwd=cwd, capture_output=True, timeout=120, check=False)
        except OSError as e:
            raise PipelineError(f"cannot run esbuild: {e}", path=exe) from e
    if done.returncode != 0:
        raise PipelineError(f"esbuild could not bundle {entry}: {done.stderr.decode(errors='replace').strip()}",
                            path=cwd / entry)
    data = done.stdout
    return f"{prefix}{content_hash(data)}.js", data
