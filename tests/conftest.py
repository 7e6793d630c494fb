import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _not_quiet_after_a_quiet_command(monkeypatch):
    """A command run in-process with ``-q`` silences the rest of its process (``quiet.set_quiet``:
    a CLI process runs one command); here each test starts loud again, its children too."""
    import pipeline.quiet as quiet

    for key in quiet.QUIET_ENV:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(quiet, "_quiet", False)


@pytest.fixture(scope="session")
def counter():
    from pipeline.embedding.models import default_counter

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


def document_resource(site: Path, dir_rel: str, key: str) -> dict:
    """Document ``key``'s resource in folder ``dir_rel`` of a built site, read whole from disk:
    its first page's fields and links, its stripe orders and every page's items, by index (as
    ``_embedded.chunks.<key>`` of index_version 1 held them), and a vault note's ``_links.links``
    and ``_links.backlinks`` of every page, in order."""
    import orjson

    from pipeline.siteformat.indexnames import document_page

    folder = Path(site) / dir_rel
    first = orjson.loads((folder / document_page(key)).read_bytes())
    out = {k: v for k, v in first.items() if k not in ("items", "stripe_order", "stripe_order_technical")}
    orders: dict[str, list] = {k: [] for k in ("stripe_order", "stripe_order_technical") if k in first}
    authored: dict[str, list] = {k: [] for k in ("links", "backlinks") if k in first["_links"]}
    items = []
    for number in range(1, first["pages"] + 1):
        page = first if number == 1 else orjson.loads((folder / document_page(key, number)).read_bytes())
        for k in orders:
            orders[k] += page.get(k, [])
        for k in authored:
            authored[k] += page["_links"].get(k, [])
        items += page["items"]
    out["_links"] = {**first["_links"], **authored}
    return {**out, **orders, "items": sorted(items, key=lambda item: item["index"])}


def document_resources(site: Path, dir_rel: str) -> dict[str, dict]:
    """Every document of folder ``dir_rel`` (``document_resource``), by key, in listing order."""
    from pipeline.index.listing import read_listing

    listing = read_listing(Path(site), dir_rel)
    return {} if listing is None else {e["key"]: document_resource(site, dir_rel, e["key"]) for e in listing[1]}
