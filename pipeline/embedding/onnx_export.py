"""Export a local sentence-transformers model to ONNX once, and find the export again.

The graph is the whole sentence encoder: ``input_ids`` and ``attention_mask`` (int64, batch x
sequence) in, ``sentence_embedding`` (float32, batch x dim, mean-pooled over the mask and
L2-normalised, as the model's ``1_Pooling`` + ``2_Normalize`` modules do) out. Token type ids
are all zero for single texts, so they are built inside the graph and not an input.

Where: ``$PIPELINE_MODEL_CACHE`` if set, else ``$XDG_CACHE_HOME/pipeline/onnx`` (default
``~/.cache/pipeline/onnx``), then ``<model name>-<key>/<variant>.onnx`` where ``key`` is the
xxh64 of the model's files (weights, configs, tokenizer) and of ``EXPORT_VERSION``: a changed
model or exporter gets a new folder, never a stale graph. A per-user cache, not the build's
``.embedding-cache``: the search client embeds queries with no build directory at hand.

Variants: ``fp32`` (the exported graph) and ``fp16w`` (the same graph with its large weight
tensors stored as float16 and cast back to float32 inside the graph: half the bytes for the
browser, fp32 arithmetic; its agreement with fp32 is measured in tests and docs/BENCHMARKS.md).

Old exports do not pile up: each process that finds or makes an export marks it used (a
``.used`` stamp, touched at most once a day) and removes what nothing has used for
``STALE_DAYS``: the same model's other exports (an older package's or exporter's; another
installed version still in use keeps marking its own) and compiled OpenVINO models in this
export's ``openvino/<precision>/`` that nothing read or wrote in that time (``prune_stale``).

Guarantee: only ``export_onnx`` imports torch, and only when the file is not yet cached;
``cached_onnx`` never does. Files are written to a temporary name and renamed, so a
concurrent or interrupted export never leaves a half-written model. Within one process,
exports run one at a time (a build's encoder and its browser-model publisher may both ask
for the first export at once): the second waits and finds the file.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

import xxhash

from pipeline.embedding.models import LocalModel
from pipeline.errors import PipelineError
from pipeline.fsutil import write_bytes_atomic
from pipeline.quiet import info

EXPORT_VERSION = "1"  # bump when the exported graph changes
OPSET = 17
VARIANTS = ("fp32", "fp16w")
# Files that decide the exported graph and its tokenizer; anything else in the folder (README,
# training data lists) does not.
KEY_FILES = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json",
             "sentence_bert_config.json", "modules.json", "1_Pooling/config.json")
FP16_MIN_ELEMENTS = 1024  # smaller tensors (biases, norms) stay float32: no bytes worth saving
# An export or compiled model nothing used for this long is removed when its model is next used:
# re-exporting costs ~10 s once, recompiling ~0.3 s, and each export folder holds ~225 MB.
STALE_DAYS = 30
USED_STAMP = ".used"
_DAY = 86400.0
_NOTED: set[Path] = set()  # export folders this process has marked used (once each)
# Two threads importing torch at once can see it half-initialised (an ImportError in one of them)
# and would export the same graph twice: one export at a time per process.
_EXPORT_LOCK = threading.RLock()


def onnx_cache_root() -> Path:
    """Folder of every export (see the module docstring)."""
    env = os.environ.get("PIPELINE_MODEL_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pipeline" / "onnx"


def model_key(model: LocalModel) -> str:
    """xxh64 (hex) of the model's graph-deciding files and the exporter version."""
    directory = model.directory()
    stats = []
    for rel in KEY_FILES:
        path = directory / rel
        if path.is_file():
            st = path.stat()
            stats.append((rel, str(path), st.st_size, st.st_mtime_ns))
    return _files_key(tuple(stats))


@lru_cache(maxsize=16)
def _files_key(stats: tuple) -> str:
    # keyed on (path, size, mtime): a rebuild does not re-read 90 MB of weights per call
    h = xxhash.xxh64(EXPORT_VERSION.encode())
    for rel, path, _, _ in stats:
        h.update(rel.encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def onnx_path(model: LocalModel, variant: str = "fp32") -> Path:
    if variant not in VARIANTS:
        raise PipelineError(f"unknown ONNX variant {variant!r}; use one of {', '.join(VARIANTS)}")
    return onnx_cache_root() / f"{model.name}-{model_key(model)}" / f"{variant}.onnx"


def compiled_cache(model: LocalModel, precision: str) -> Path:
    """Folder of OpenVINO's compiled models of ``model``'s exports at ``precision`` (its
    ``CACHE_DIR``): beside them, so a new export never meets an old compilation, and one folder a
    precision: OpenVINO names a blob by the graph and settings that leave out the precision hint,
    so an f32 blob loaded for bf16 gave NaN vectors on a CPU with native bf16 (2026.4, AMX). It
    compiles again over a blob it cannot read."""
    return onnx_path(model).parent / "openvino" / precision


def cached_onnx(model: LocalModel, variant: str = "fp32") -> Path | None:
    """The exported file when it exists; never exports and never imports torch."""
    path = onnx_path(model, variant)
    if not path.is_file():
        return None
    _note_use(model, path.parent)
    return path


def export_onnx(model: LocalModel, variant: str = "fp32") -> Path:
    """The cached export, made now (with torch, ~10 s) when missing."""
    path = onnx_path(model, variant)
    if path.is_file():
        return path
    with _EXPORT_LOCK:
        if path.is_file():  # made by another thread while this one waited
            return path
        if variant == "fp16w":
            import onnx

            graph = onnx.load(str(export_onnx(model, "fp32")))
            _write_atomic(path, weights_to_fp16(graph).SerializeToString())
            return path
        info(f"exporting {model.name} to ONNX (once) -> {path.parent}")
        _write_atomic(path, _export_fp32(model))
        _note_use(model, path.parent)
        return path


def _note_use(model: LocalModel, folder: Path) -> None:
    # Once per process and folder: a stat, two listings. Housekeeping never fails a build.
    if folder in _NOTED:
        return
    _NOTED.add(folder)
    try:
        prune_stale(folder, model.name)
    except OSError:
        pass


def prune_stale(folder: Path, model_name: str, *, now: float | None = None, stale_days: float = STALE_DAYS) -> list[Path]:
    """Mark the export ``folder`` (``<root>/<model_name>-<key>``) used now, and remove what has not
    been used for ``stale_days``: the other ``<model_name>-<key>`` folders in its root (by their
    ``.used`` stamp, else their own time) and the files of ``folder/openvino`` (by the later of
    their access and change times: OpenVINO reads a blob it loads, writes one it compiles).
    Static encoder tables of another ``FIT_VERSION`` go by the same rule as those files.
    Other models' folders are never touched. A folder is renamed away before it is deleted, so
    no reader meets half of one. Returns what was removed."""
    now = time.time() if now is None else now
    cutoff = now - stale_days * _DAY
    stamp = folder / USED_STAMP
    try:
        fresh = stamp.stat().st_mtime > now - _DAY
    except FileNotFoundError:
        fresh = False
    if not fresh:
        stamp.touch()
        os.utime(stamp, (now, now))
    removed = []
    sibling = re.compile(re.escape(model_name) + r"-[0-9a-f]{16}")
    interrupted = re.compile(r"\." + re.escape(model_name) + r"-[0-9a-f]{16}\.removing-[0-9]+")
    for other in folder.parent.iterdir():
        if interrupted.fullmatch(other.name):  # a removal that did not finish
            shutil.rmtree(other, ignore_errors=True)
            continue
        if other == folder or not sibling.fullmatch(other.name) or not other.is_dir():
            continue
        if _last_used(other) < cutoff:
            doomed = other.with_name(f".{other.name}.removing-{os.getpid()}")
            os.replace(other, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
            removed.append(other)
    compiled = folder / "openvino"
    if compiled.is_dir():  # a folder a precision (``compiled_cache``); blobs of older versions beside them
        for blob in [*compiled.iterdir(), *(f for sub in compiled.iterdir() if sub.is_dir() for f in sub.iterdir())]:
            times = blob.stat()
            if blob.is_file() and max(times.st_atime, times.st_mtime) < cutoff:
                blob.unlink(missing_ok=True)
                removed.append(blob)
    from pipeline.embedding.staticfit import static_name  # its numpy is loaded where a model is

    for table in folder.glob("static-*.bin"):  # fitted by an earlier FIT_VERSION, 45 MB each
        times = table.stat()
        if table.name != static_name() and max(times.st_atime, times.st_mtime) < cutoff:
            table.unlink(missing_ok=True)
            removed.append(table)
    return removed


def _last_used(folder: Path) -> float:
    try:
        return (folder / USED_STAMP).stat().st_mtime
    except FileNotFoundError:  # made before exports were stamped
        return folder.stat().st_mtime


def _export_fp32(model: LocalModel) -> bytes:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import warnings

    try:
        import torch
        from transformers import AutoModel
    except ImportError:
        raise PipelineError(
            f"exporting {model.name} to ONNX needs torch and transformers once (pip install torch transformers); "
            f"or copy an export made elsewhere into {onnx_path(model).parent}"
        ) from None

    directory = model.directory()
    # eager attention: the SDPA path traces shape-dependent Python branches into constants
    encoder = AutoModel.from_pretrained(str(directory), attn_implementation="eager").eval()

    class SentenceEncoder(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            hidden = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=torch.zeros_like(input_ids)
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2.0, dim=1)

    sample = torch.ones((2, 8), dtype=torch.int64)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer chatter about constant Python branches
        target = Path(tmp) / "model.onnx"
        torch.onnx.export(
            SentenceEncoder(encoder), (sample, sample), str(target),
            input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding"],
            dynamic_axes={"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
                          "sentence_embedding": {0: "batch"}},
            opset_version=OPSET, dynamo=False, do_constant_folding=True,
        )
        return target.read_bytes()


def weights_to_fp16(graph):
    """``graph`` (an onnx ModelProto) with every float32 initializer of at least
    ``FP16_MIN_ELEMENTS`` values stored as float16 and a Cast back to float32 in front of its
    users: the file halves, the arithmetic stays float32 (weights rounded once)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    g = graph.graph
    casts = []
    for init in g.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        array = numpy_helper.to_array(init)
        if array.size < FP16_MIN_ELEMENTS:
            continue
        name = init.name
        init.CopyFrom(numpy_helper.from_array(array.astype(np.float16), name + "__fp16"))
        casts.append(helper.make_node("Cast", [name + "__fp16"], [name], to=onnx.TensorProto.FLOAT,
                                      name=name + "__cast"))
    # Casts first: the node list must stay topologically sorted
    nodes = casts + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    return graph


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(path, data)
