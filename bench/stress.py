"""Stress of a build and of ``pipeline serve`` (issue 35): what a hostile or crowded machine
does to them, counted.

* ``race``: a thread flips ``content/race.md`` between a regular file and a symbolic link to a
  file outside the content folder (``/etc/passwd``) while builds run; counts the builds that
  published the outside file (leaks), ended in an exception other than PipelineError
  (tracebacks), or refused cleanly (a PipelineError naming the file: build again).
* ``kills``: builds SIGKILLed at random moments; counts the sites left broken (``tests/sitecheck``)
  or neither the old nor the new one.
* ``slow``: ``pipeline serve`` with slow-header connections open (a byte every second, never a
  whole head); the latency of ordinary requests meanwhile, and whether each was answered.
* ``keepalive``: many clients, each reusing one keep-alive connection; counts requests closed
  silently (no response, no ``Connection: close``).

``python -m bench.stress`` runs them all at bench size and writes ``bench/.work/stress.json``;
the tests (``tests/test_build_race.py``, ``tests/test_serve_slow.py``) call the same functions
at a bounded size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
WORK = BENCH_DIR / ".work"
OUTSIDE = Path("/etc/passwd")

RACE_FILES = {
    "a.md": "# Apples\n\nSome text about apples.\n\n## Pears\n\nAnd pears too.\n",
    "sub/b.md": "# Bananas\n\nA topic of its own.\n",
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def _build(world: Path) -> None:
    from pipeline.config import SiteConfig
    from pipeline.embedding.hashing import HashingEmbedder
    from pipeline.site.build import build

    config = SiteConfig(cache_dir=world / "cache", embedder="hashing")
    build(world / "content", world / "site", config, embedder=HashingEmbedder(), progress=False)


def _leaked(site: Path, secret: bytes) -> bool:
    """Whether any file of ``site`` holds ``secret`` (the outside file's first line)."""
    for folder, _, names in os.walk(site):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    if secret in handle.read():
                        return True
            except OSError:
                continue
    return False


def race(world: Path, builds: int = 60, outside: Path = OUTSIDE) -> dict:
    """``builds`` builds of a small tree while ``content/race.md`` flips between a file and a
    link to ``outside``; returns the counts (see the module docstring)."""
    from pipeline.errors import PipelineError

    shutil.rmtree(world, ignore_errors=True)
    content = world / "content"
    _write(content, RACE_FILES)
    secret = outside.read_bytes().splitlines()[0]
    stop = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        tmp, target = content / ".race.tmp", content / "race.md"
        while not stop.is_set():
            tmp.unlink(missing_ok=True)
            if flips % 2:
                tmp.symlink_to(outside)
            else:
                tmp.write_text(f"# Race\n\nA regular file, version {flips}.\n", encoding="utf-8")
            os.replace(tmp, target)  # atomic: race.md is always there, a file or a link
            flips += 1
            time.sleep(0)  # let a build run between two flips

    counts = {"builds": builds, "published": 0, "refused": 0, "tracebacks": 0, "leaks": 0, "errors": []}
    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the skipped-link warnings, once per build
            for _ in range(builds):
                try:
                    _build(world)
                    counts["published"] += 1
                except PipelineError as error:
                    counts["refused"] += 1
                    if len(counts["errors"]) < 3:
                        counts["errors"].append(str(error).replace(str(world), "WORLD"))
                except Exception as error:  # noqa: BLE001 - counted: a traceback for a user
                    counts["tracebacks"] += 1
                    if len(counts["errors"]) < 3:
                        counts["errors"].append(f"{type(error).__name__}: {error}".replace(str(world), "WORLD"))
                if (world / "site").is_dir() and _leaked(world / "site", secret):
                    counts["leaks"] += 1
    finally:
        stop.set()
        thread.join()
    counts.update(flips=flips, seconds=round(time.perf_counter() - started, 2))
    return counts
