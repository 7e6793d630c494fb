"""The query embedder the search page runs in the browser: files written to ``_assets/model/``.

``publish_browser_model`` copies, for a site embedded with a local model (``minilm``,
``local:PATH``) whose vectors the site holds (its topic-spec.md names that model) and ``[search] model = true`` (``search_model``; off by default since the static encoder (``site/static_encoder.py``) keeps hybrid within a point of it; ``false`` removes
the folder, and the page then never offers the model):

* ``model.onnx``: the ONNX export (``embedding/onnx_export.py``) with float16-stored weights
  (``fp16w``: ~45 MB instead of ~90 MB, float32 arithmetic, cosine ≥ 0.9999 to fp32; int8
  was measured below 0.99 and is not used, docs/decisions/embedding.md);
* ``vocab.txt``: the tokenizer's vocabulary in id order, from ``tokenizer.json``;
* ``model.json``: model name, dimension and the tokenizer settings ``wordpiece.js`` reads;
* ``ort.wasm.bundle.min.mjs`` and ``ort-wasm-simd-threaded.wasm``: ONNX Runtime Web's
  single-threaded CPU build from ``node_modules/onnxruntime-web`` (installed by ``make`` from
  package-lock.json): the site is self-contained, nothing comes from a CDN.

Files already holding the same bytes are not rewritten (confirming that reads the ~60 MB once:
about 0.1 s of a rebuild, measured on this machine). When the runtime or the tokenizer
does not fit (no node_modules, a tokenizer that is not BERT WordPiece) the folder is left out
with a warning: the page then searches without a model.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from pipeline.config import SiteConfig
from pipeline.embedding.models import LocalModel
from pipeline.embedding.tokenizer_settings import tokenizer_settings
from pipeline.errors import PipelineError
from pipeline.fsutil import copy_file_atomic, write_bytes_atomic
from pipeline.siteformat.tree import TOPIC_SPEC_FILE, site_dirs
from pipeline.topicspec.specfile import read_topic_summary

MODEL_DIR = "model"  # under _assets/
ORT_FILES = ("ort.wasm.bundle.min.mjs", "ort-wasm-simd-threaded.wasm")
ONNX_VARIANT = "fp16w"


def ort_dist() -> Path:
    """``onnxruntime-web/dist`` in the first ``node_modules`` that has it (the search order of
    ``site/vendor.py``); the first candidate's path when none does."""
    from pipeline.site.vendor import node_modules_candidates

    candidates = [folder / "onnxruntime-web" / "dist" for folder in node_modules_candidates()]
    return next((c for c in candidates if all((c / name).is_file() for name in ORT_FILES)), candidates[0])


def site_local_model(config: SiteConfig) -> LocalModel | None:
    """The local model of the configured embedder, or None (remote, hashing)."""
    from pipeline.embedding.registry import split_backend

    spec, _ = split_backend(config.embedder)
    kind, _, rest = spec.partition(":")
    if kind == "minilm" and not rest:
        from pipeline.embedding.models import DEFAULT_MODEL

        return DEFAULT_MODEL
    if kind == "local" and rest:
        from pipeline.embedding.models import local_model

        return local_model(rest)
    return None


def site_model_name(site: Path) -> str | None:
    """The model the site's vectors come from: the first topic-spec.md's ``model``, or None."""
    for dir_rel in site_dirs(Path(site)):
        spec = Path(site) / dir_rel / TOPIC_SPEC_FILE
        if spec.is_file():
            model = read_topic_summary(spec).get("model")
            return model if isinstance(model, str) else None
    return None


def tokenizer_files(model: LocalModel) -> tuple[dict, bytes]:
    """(model.json's tokenizer settings, vocab.txt bytes) from the model's ``tokenizer.json``.

    Raises PipelineError when it is not the BERT WordPiece pipeline ``wordpiece.js`` implements."""
    path = model.directory() / "tokenizer.json"
    spec = json.loads(path.read_text(encoding="utf-8"))
    settings = tokenizer_settings(spec, path)
    vocab = spec["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.__getitem__)
    if [vocab[t] for t in tokens] != list(range(len(tokens))) or any("\n" in t for t in tokens):
        raise PipelineError("vocabulary ids are not 0..n-1 (or a token holds a newline)", path=path)
    return settings, ("\n".join(tokens) + "\n").encode("utf-8")


def publish_browser_model(site: Path, config: SiteConfig, assets_dir: str = "_assets") -> tuple[int, list[str]]:
    """Write (or remove) ``<site>/<assets_dir>/model/``. Returns (files written, files removed)."""
    return publish_model_files(site, config, site_model_name(site), assets_dir)


def publish_model_files(
    site: Path, config: SiteConfig, embedded_with: str | None, assets_dir: str = "_assets"
) -> tuple[int, list[str]]:
    """``publish_browser_model`` for a site whose vectors come from the model ``embedded_with``
    (None: the site has none), as ``site_model_name`` will tell once its topic pages are written:
    a build knows it (its embedder) and publishes the model while it encodes (the overlap
    schedule: ``site/build.py``)."""
    folder = Path(site) / assets_dir / MODEL_DIR
    model = site_local_model(config) if config.search_model else None
    if model is not None and embedded_with != model.name:
        model = None  # the site was embedded with another model (e.g. an embedder passed to build())
    files = _browser_files(model) if model is not None else None
    if files is None:
        removed = []
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    path.unlink()
                    removed.append(path.relative_to(site).as_posix())
            if not any(folder.iterdir()):
                folder.rmdir()
        return 0, removed
    # a file to ship as it is (the model, the runtime: ~60 MB) is copied by the kernel, unread here
    written = sum(
        write_bytes_atomic(folder / name, data) if isinstance(data, bytes) else copy_file_atomic(data, folder / name)
        for name, data in files.items()
    )
    removed = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name not in files and not path.name.startswith("."):
            path.unlink()
            removed.append(path.relative_to(site).as_posix())
    return written, removed


def _browser_files(model: LocalModel) -> dict[str, bytes | Path] | None:
    """The files of ``_assets/model/`` by name: their bytes, or the file to copy as it is."""
    runtime = ort_dist()
    missing = [name for name in ORT_FILES if not (runtime / name).is_file()]
    if missing:
        warnings.warn(f"no browser query model: {runtime} lacks {', '.join(missing)} (run make)")
        return None
    try:
        settings, vocab = tokenizer_files(model)
    except PipelineError as error:
        warnings.warn(f"no browser query model: {error}")
        return None
    from pipeline.embedding.onnx_export import export_onnx, model_key

    try:
        onnx = export_onnx(model, ONNX_VARIANT)
    except PipelineError as error:  # e.g. no torch for the one-off export: the page stays lexical
        warnings.warn(f"no browser query model: {error}")
        return None
    manifest = {
        "model": model.name,
        "model_key": model_key(model),
        "onnx": "model.onnx",
        "onnx_variant": ONNX_VARIANT,
        "vocab": "vocab.txt",
        "runtime": ORT_FILES[0],
        "inputs": ["input_ids", "attention_mask"],
        "output": "sentence_embedding",
        "tokenizer": settings,
    }
    files: dict[str, bytes | Path] = {name: runtime / name for name in ORT_FILES}
    files.update({
        "model.onnx": onnx,
        "vocab.txt": vocab,
        "model.json": (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode("utf-8"),
    })
    return files
