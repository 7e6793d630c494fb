import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def counter():
    from pipeline.parsing.tokens import default_counter

    return default_counter()


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create ``files`` (relative path -> text or bytes) under ``root``."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", newline="")
    return root


@pytest.fixture(scope="session")
def onnx_cache(tmp_path_factory):
    """A private ONNX export cache (``PIPELINE_MODEL_CACHE``) holding the default model's fp32
    export, made once per session (the export imports torch; everything after it need not)."""
    from pipeline.embedding.models import DEFAULT_MODEL
    from pipeline.embedding.onnx_export import export_onnx

    folder = tmp_path_factory.mktemp("onnx-cache")
    old = os.environ.get("PIPELINE_MODEL_CACHE")
    os.environ["PIPELINE_MODEL_CACHE"] = str(folder)
    export_onnx(DEFAULT_MODEL, "fp32")
    yield folder
    if old is None:
        os.environ.pop("PIPELINE_MODEL_CACHE", None)
    else:
        os.environ["PIPELINE_MODEL_CACHE"] = old
