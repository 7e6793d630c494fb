"""The site's static query encoder: ``_search/encoder/<h>/``, rows sharded so a query fetches its own.

For a site whose vectors come from a local model (``minilm``, ``local:PATH``; or the test
embedder ``hashing``) and ``[search] encoder = true`` (the default), publish writes the model's
static table (``embedding/staticfit.py``) as:

* ``_search/encoder/<h>/vocab.txt``: the table's ASCII tokens, front-coded (each line: one
  character, ``frontcode.PREFIX_DIGITS[k]``, saying how many leading characters it shares with the line
  before, then the rest); enough to tokenise any ASCII query exactly;
* ``_search/encoder/<h>/other.txt``: the other tokens, the same way (fetched only for a query
  holding a non-ASCII character);
* ``_search/encoder/<h>/<s>.bin``: rows ``s*R ... s*R+R-1`` in the table's order, each a float32
  scale then ``dimension`` int8 values (``statictable.encode_rows``).

``<h>`` is the xxh3-64 (12 hex) of all of them, so the folder never changes while the model and
the fit do not (a rebuild writes nothing; a host may cache it for good), and the manifest's
``encoder`` entry says where it is, its dtype, dimension, rows per shard, token counts, the
tokens whose rows are zero (``zero``: never fetched) and the tokenizer settings. A query
tokenises with the vocabulary, then fetches the shards of its distinct pieces only.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import xxhash

from pipeline.config import SiteConfig
from pipeline.embedding.statictable import StaticTable, encode_rows, row_bytes
from pipeline.errors import PipelineError
from pipeline.reuse.state import Digest
from pipeline.siteformat.frontcode import front_code
from pipeline.siteformat.searchlayout import encoder_names

ENCODER_DIR = "encoder"  # under _search/
SITE_DTYPE = "int8"
ROWS_PER_SHARD = 8  # 3.1 kB a shard at int8: a query fetches one per distinct piece, so small shards spend few bytes


def encoder_files(table: StaticTable, *, dtype: str = SITE_DTYPE, rows_per_shard: int = ROWS_PER_SHARD) -> tuple[dict, dict[str, bytes]]:
    """(the manifest's ``encoder`` entry, {path under ``_search/``: bytes}) of ``table``."""
    if any("\n" in t for t in table.tokens):
        raise PipelineError("a static encoder token holds a newline")
    stored = encode_rows(table.rows, dtype)
    width = row_bytes(dtype, table.dimension)
    span = width * rows_per_shard
    parts = {
        "vocab.txt": front_code(table.tokens[: table.ascii]).encode("utf-8"),
        "other.txt": front_code(table.tokens[table.ascii :]).encode("utf-8"),
    }
    for s in range(0, -(-len(table.tokens) // rows_per_shard)):
        parts[f"{s}.bin"] = stored[s * span : (s + 1) * span]
    digest = xxhash.xxh3_64()
    for name in sorted(parts):
        digest.update(name.encode() + b"\0" + len(parts[name]).to_bytes(8, "little") + parts[name])
    folder = f"{ENCODER_DIR}/{digest.hexdigest()[:12]}"
    entry = {
        "model": table.model,
        "href": f"{folder}/",
        "dtype": dtype,
        "dimension": table.dimension,
        "count": len(table.tokens),
        "ascii": table.ascii,
        "rows": rows_per_shard,
        "vocab": "vocab.txt",
        "other": "other.txt",
        "zero": zero_tokens(table),
        "tokenizer": table.tokenizer,
    }
    return entry, {f"{folder}/{name}": data for name, data in parts.items()}


def zero_tokens(table: StaticTable) -> list[str]:
    """The tokens whose rows are all zero (stop words and punctuation the fit leaves out, a test
    embedder's wordless tokens), in the table's order: a client drops them from a query's pieces
    and never fetches their shards (the vector is the same)."""
    return [table.tokens[i] for i in np.flatnonzero(~np.any(table.rows, axis=1))]


def site_static_table(config: SiteConfig, embedded_with: str | None) -> StaticTable | None:
    """The static table for a site whose vectors come from the model ``embedded_with``, or None
    (``[search] encoder = false``, a remote embedder, vectors from another model). Fits the
    table when this machine has none cached (minutes, once per model); a failure to fit leaves
    the site without one, with a warning (its searches then use the full model or none)."""
    if not config.search_encoder or embedded_with is None:
        return None
    import re

    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.site.browser_model import site_local_model

    hashing = re.fullmatch(r"hashing-(\d+)", embedded_with)
    try:
        if hashing:
            from pipeline.embedding.staticfit import hashing_table

            return hashing_table(int(hashing.group(1)), DEFAULT_MODEL)
        model = site_local_model(config)
        if model is None or model.name != embedded_with:
            return None
        from pipeline.embedding.staticfit import static_table

        return static_table(model)
    except PipelineError as error:
        warnings.warn(f"no static query encoder: {error}")
        return None


def table_source(config: SiteConfig, embedded_with: str | None) -> str | None:
    """What ``site_static_table`` would give, told without reading or computing the table: a
    digest of the model's name and the stamp (size, mtime) of the file the table comes from
    (the fitted table beside the model's ONNX export; the vocabulary of the test embedder's
    table). None when it cannot be told so (no encoder, no table fitted yet). The build state
    holds results only for the code that made them (``state.code_digest``), so the fit's and
    the shards' own settings need no place here."""
    if not config.search_encoder or embedded_with is None:
        return None
    import re

    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.staticfit import static_path
    from pipeline.site.browser_model import site_local_model

    if re.fullmatch(r"hashing-(\d+)", embedded_with):
        path = DEFAULT_MODEL.directory() / "tokenizer.json"
    else:
        model = site_local_model(config)
        if model is None or model.name != embedded_with:
            return None
        path = static_path(model)
    try:
        stat = path.stat()
    except OSError:
        return None
    return Digest(embedded_with, str(path), stat.st_size, stat.st_mtime_ns).hex()


STATE_SECTION = "encoder"  # the build state's record of the encoder a site holds (``site_encoder``)

_ENCODED: dict[bytes, tuple[dict, dict[str, bytes]]] = {}  # the last table's files, by its content


def _files_present(search_dir: Path, entry: dict | None) -> dict | None:
    """``{}`` when a recorded encoder ``entry``'s files are all in ``search_dir`` (each a file,
    as ``Path.is_file`` tells), else None. Its folder is listed once, not each of its ~4,000
    shards stat'ed by path."""
    if not entry:
        return None
    wanted: dict[str, list[str]] = {}
    for name in encoder_names(entry):
        folder, slash, base = name.rpartition("/")
        wanted.setdefault(folder or slash, []).append(base)  # "/x": in "/", as ``Path`` joins it
    for folder, names in wanted.items():
        try:
            with os.scandir(os.path.join(search_dir, folder)) as entries:
                files = {e.name for e in entries if e.is_file()}
        except OSError:
            return None
        if not all(base in files for base in names):
            return None
    return {}


def site_encoder(config: SiteConfig, embedded_with: str | None, *, state=None,
                 search_dir: Path | None = None) -> tuple[dict, dict[str, bytes] | None] | None:
    """``encoder_files`` of ``site_static_table``, or None: what publish hands the search index.

    With the build ``state`` and the site's ``search_dir``: when the previous build recorded the
    encoder of the same ``table_source`` and its files are all in ``search_dir``, returns
    ``(entry, None)`` (the search index keeps them) without reading the table, so a rebuild
    that changes nothing neither fits nor quantises it (~1.5 s and ~200 MB at 10k documents with
    the test embedder). A process that builds again with the same table (``serve --watch``, a
    test suite) reuses the files it encoded last time instead of quantising ~30k rows again."""
    source = table_source(config, embedded_with) if state is not None and search_dir is not None else None
    if source is not None:
        kept = state.reuse(STATE_SECTION, STATE_SECTION, source, lambda e: _files_present(search_dir, e.get("encoder")))
        if kept is not None:
            return kept["encoder"], None
    table = site_static_table(config, embedded_with)
    if table is None:
        return None
    digest = xxhash.xxh3_128(memoryview(np.ascontiguousarray(table.rows)).cast("B"))  # the rows unconcatenated
    digest.update("\n".join(table.tokens).encode() + repr((table.model, table.ascii, table.tokenizer)).encode())
    key = digest.digest()
    if key not in _ENCODED:
        _ENCODED.clear()
        _ENCODED[key] = encoder_files(table)
    entry, files = _ENCODED[key]
    if source is not None:
        state.put(STATE_SECTION, STATE_SECTION, source, encoder=entry)
    return entry, dict(files)
