"""Site configuration: declared once, with types and defaults, read from a TOML file."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from pipeline.errors import PipelineError
from pipeline.siteformat.hrefs import normalize_base_url
from pipeline.sources.exclude import exclude_patterns
from pipeline.sources.pages import PageLocation

# Fewer model tokens than this to embed, and the Ray executor encodes them in the build's own
# process (embedding/ray_executor.py): Ray's start costs 3.7-4.7 s more than a local build's
# (docs/BENCHMARKS.md, Ray executor), in which the local model encodes ~50,000-64,000 tokens here
# (~13,600 tokens/s in a cold build of 1,000 synthetic documents), so no number of workers could
# finish fewer sooner. A one-edit rebuild took 9.0 s with Ray against 1.2 s without.
RAY_MIN_TOKENS = 50_000


MAX_RELATED_K = 50


@dataclass(frozen=True)
class SiteConfig:
    """Every option of a build. A TOML file sets any of them at top level; ``[chunking]`` sets
    ``strategy`` plus that strategy's options (e.g. ``max_tokens``)."""

    title: str = "Knowledge base"  # the root index.json's title
    base_url: str = "/"  # prefix of every absolute link; "/repo/" for a GitHub Pages project site
    embedder: str = "minilm"  # see pipeline.embedding.registry
    strategy: str = "markdown"  # see pipeline.chunking.registry
    strategy_options: dict[str, Any] = field(default_factory=dict)
    related_k: int = 3  # related chunks linked from each chunk
    cache_dir: Path = Path(".embedding-cache")
    cache_max_age_days: int | None = None  # a build removes cache entries unused this many days
    cache_max_size: str | None = None  # ... and least recently used ones over this size ("2G")
    allow_unclosed_fences: bool = False  # an unclosed ``` swallows the rest of a file: an error by default
    max_document_bytes: int = 16 * 1024 * 1024  # a larger document is refused before it is read (issue 15)
    exclude: tuple[str, ...] = ()  # gitignore-style globs of CONTENT paths left out (pipeline/sources/exclude.py)
    executor: str = "local"  # where cache misses are embedded: local | ray (pipeline.embedding.executor)
    ray_address: str = ""  # with executor ray: "" starts a local Ray; else ray.init(address=...), e.g. "auto"
    workers: int = 2  # with executor ray: embedding actors (one CPU and one model each)
    ray_min_tokens: int = RAY_MIN_TOKENS  # with executor ray: fewer tokens to embed are embedded without Ray (0: always Ray)
    # Files a build removes stay served until the next build (site/retire.py), so a reader holding
    # the previous index.json never meets a 404; false removes them at once (withdraw a document now).
    retire_removed_files: bool = True
    # [search] model: ship the full query model (~60 MB) for the page to re-rank with; off by default since
    # the static encoder keeps hybrid within a point of it on every set (docs/decisions/search.md)
    search_model: bool = False
    search_encoder: bool = True  # [search] encoder: publish the static query encoder (_search/encoder/)
    # An Obsidian vault (pipeline/vault/): wikilinks, embeds, tags and aliases read, authors'
    # links published; "auto": when CONTENT holds a ``.obsidian/`` folder. Attachments (every
    # file but documents and the pipeline's own inputs) are left out unless vault_attachments.
    vault: bool | str = "auto"
    vault_attachments: bool = False
    # Set by a caller, not by TOML: each document's page in another generator's site (MkDocs),
    # by its CONTENT path; its chunks then carry ``page_url`` (pipeline/sources/pages.py).
    pages: Mapping[str, PageLocation] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Each chunk lists related_k links in every index.json: bounded, so output stays linear.
        if not (isinstance(self.related_k, int) and 0 <= self.related_k <= MAX_RELATED_K):
            raise PipelineError(f"related_k must be a whole number from 0 to {MAX_RELATED_K}, got {self.related_k!r}")
        if not (isinstance(self.ray_min_tokens, int) and not isinstance(self.ray_min_tokens, bool) and self.ray_min_tokens >= 0):
            raise PipelineError(f"ray_min_tokens must be a whole number, 0 or more, got {self.ray_min_tokens!r}")
        if not (isinstance(self.vault, bool) or self.vault == "auto"):
            raise PipelineError(f'vault must be true, false or "auto", got {self.vault!r}')
        if not isinstance(self.vault_attachments, bool):
            raise PipelineError(f"vault_attachments must be true or false, got {self.vault_attachments!r}")
        if not (isinstance(self.max_document_bytes, int) and self.max_document_bytes > 0):
            raise PipelineError(f"max_document_bytes must be a positive whole number, got {self.max_document_bytes!r}")
        if not isinstance(self.base_url, str):
            raise PipelineError(f"base_url must be a string such as /repo/ or https://example.org/docs/, got {self.base_url!r}")
        normalize_base_url(self.base_url)  # a bad one is an error before anything is built

    def with_overrides(self, **values: Any) -> "SiteConfig":
        """A copy with the non-None ``values`` set (CLI flags)."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})

    @property
    def normalized_base_url(self) -> str:
        """Every absolute link's prefix: ``/``, ``/repo/`` or ``https://host/docs/`` (``siteformat/hrefs.py``)."""
        return normalize_base_url(self.base_url)


def load_config(path: Path | None) -> SiteConfig:
    """Read ``path`` (TOML) over the defaults; None means defaults. Unknown keys are errors."""
    if path is None:
        return SiteConfig()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PipelineError("config file not found", path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(f"invalid TOML: {exc}", path=path) from None
    known = {f.name for f in fields(SiteConfig)} - {"strategy_options", "strategy", "search_model", "search_encoder", "pages"}
    values: dict[str, Any] = {}
    chunking = data.pop("chunking", {})
    if not isinstance(chunking, dict):
        raise PipelineError("[chunking] must be a table", path=path)
    values.update(_search_table(data.pop("search", {}), path))
    for key, value in data.items():
        if key not in known:
            raise PipelineError(f"unknown setting {key!r}; known: {', '.join(sorted(known | {'chunking', 'search'}))}", path=path)
        values[key] = Path(value) if key == "cache_dir" else exclude_patterns(value, str(path)) if key == "exclude" else value
    chunking = dict(chunking)
    if "strategy" in chunking:
        values["strategy"] = chunking.pop("strategy")
    values["strategy_options"] = chunking
    if values.get("cache_max_size") is not None:  # a bad budget stops the build before it starts
        try:
            parse_size(str(values["cache_max_size"]))
        except PipelineError as error:
            raise PipelineError(f"cache_max_size: {error}", path=path) from None
    try:
        return SiteConfig(**values)
    except PipelineError as exc:
        raise PipelineError(exc.message, path=path) from None


def _search_table(table: Any, path: Path) -> dict[str, Any]:
    """``[search]``: ``model = true|false`` (ship the full query model, which the page then loads),
    ``encoder = true|false`` (publish the static query encoder). Unknown keys are errors."""
    if not isinstance(table, dict):
        raise PipelineError("[search] must be a table", path=path)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in ("model", "encoder"):
            raise PipelineError(f"unknown setting search.{key}; known: search.encoder, search.model", path=path)
        if not isinstance(value, bool):
            raise PipelineError(f"search.{key} must be true or false, got {value!r}", path=path)
        values[f"search_{key}"] = value
    return values


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``800K`` or plain bytes -> bytes (binary units)."""
    units = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "M": 1 << 20, "MB": 1 << 20, "G": 1 << 30, "GB": 1 << 30}
    value = text.strip().upper()
    number = value.rstrip("KMGB")
    unit = value[len(number) :]
    try:
        if unit not in units:
            raise ValueError
        return int(float(number) * units[unit])
    except ValueError:
        raise PipelineError(f"size {text!r}: expected a number with an optional K, M or G (e.g. 500M)") from None
