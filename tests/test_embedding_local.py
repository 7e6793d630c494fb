"""The local sentence-transformers embedder: lazy loading, and bf16 encoding that stays
equivalent to fp32 (the speed-up is measured in docs/BENCHMARKS.md, never asserted here)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pipeline.embedding.local import SentenceTransformerEmbedder, cpu_has_native_bf16
from pipeline.embedding.models import DEFAULT_MODEL
from pipeline.embedding.registry import make_embedder
from pipeline.errors import PipelineError


@pytest.mark.parametrize(
    ("spec", "precision"),
    [("minilm+torch", "fp32"), ("minilm+bf16", "bf16")],
)
def test_specs_choose_the_precision_and_keep_the_model_name(spec, precision):
    embedder = make_embedder(spec)
    assert isinstance(embedder, SentenceTransformerEmbedder)
    assert embedder.precision == precision
    # same name: fp32 and bf16 vectors share caches and published sites
    assert embedder.name == DEFAULT_MODEL.name


def test_local_path_takes_the_suffix_too():
    embedder = make_embedder(f"local:{DEFAULT_MODEL.directory()}+bf16")
    assert embedder.precision == "bf16"


@pytest.mark.parametrize("spec", ["hashing+bf16", "minilm+fp16", "minilm:x+bf16"])
def test_bad_specs_are_errors(spec):
    with pytest.raises(PipelineError):
        make_embedder(spec)


def test_unknown_precision_is_an_error():
    with pytest.raises(PipelineError, match="precision"):
        SentenceTransformerEmbedder(DEFAULT_MODEL, precision="fp8")


def test_choosing_an_embedder_imports_no_torch():
    code = "import sys; from pipeline.embedding.registry import make_embedder; make_embedder('minilm+bf16'); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    with_bf16 = tmp_path / "yes"
    with_bf16.write_text("flags\t\t: fpu sse2 avx2 avx512f avx512_bf16\n")
    without = tmp_path / "no"
    without.write_text("flags\t\t: fpu sse2 avx2 avx512f\n")
    assert cpu_has_native_bf16(with_bf16)
    assert not cpu_has_native_bf16(without)
    assert not cpu_has_native_bf16(tmp_path / "missing")


@pytest.mark.model
def test_bf16_vectors_agree_with_fp32():
    texts = [
        "Stripe orders spread the first chunks a reader fetches across the whole document.",
        "The embedding cache keeps one vector per chunk, keyed by the chunk's content hash.",
        "```python\nfrom pipeline.client import open_site\nsite = open_site('site')\n```",
        "Ein Satz auf Deutsch, damit nicht nur Englisch vorkommt.",
        "x",
    ] * 3
    fp32 = make_embedder("minilm+torch").embed(texts)
    bf16 = make_embedder("minilm+bf16").embed(texts)
    assert bf16.dtype == np.float32 and bf16.shape == fp32.shape
    cosine = np.sum(fp32 * bf16, axis=1)
    assert cosine.min() > 0.999
    # but they are really computed differently: bf16 is not a silent no-op
    assert not np.array_equal(fp32, bf16)
