"""Stress of a build and of ``pipeline serve`` (issue 35): what a hostile or crowded machine
does to them, counted.

* ``race``: a thread flips ``content/race.md`` between a regular file and a symbolic link to a
  file outside the content folder (``/etc/passwd``) while builds run; counts the builds that
  published the outside file (leaks), ended in an exception other than PipelineError
  (tracebacks), or refused cleanly (a PipelineError naming the file: build again).
* ``kills``: builds SIGKILLed at random moments; counts the sites left broken (``tests/sitecheck``)
  or neither the old nor the new one.
* ``slow``: ``pipeline serve`` with slow-header connections open (a byte every second, never a
  whole head), or slow-body ones; the latency of ordinary requests meanwhile, and whether each
  was answered.
* ``keepalive``: many clients, each reusing one keep-alive connection; counts requests closed
  silently (no response, no ``Connection: close``).

The tests (``tests/test_build_race.py``, ``tests/test_serve_load.py``) call them at a bounded
size; ``python -m bench.stress`` runs them all at bench size and writes ``bench/.work/stress.json``.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import statistics
import threading
import time
import warnings
from pathlib import Path

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


# -- pipeline serve ------------------------------------------------------------------------------


def _site(root: Path) -> Path:
    """A small served folder: an index and a 1 KiB file."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.json").write_text('{"_links": {}}', encoding="utf-8")
    (root / "vectors.bin").write_bytes(bytes(range(256)) * 4)
    return root


def _serving(root: Path, **attrs):
    from pipeline.serve import make_server

    server = make_server(root, host="127.0.0.1", port=0, log_requests=False)
    for name, value in attrs.items():
        setattr(server, name, value)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return server, thread


def _stop(server, thread) -> None:
    server.shutdown()
    server.server_close()
    thread.join(timeout=30)


def _read_response(sock: socket.socket, pending: bytearray) -> tuple[int, bool] | None:
    """One response from ``sock`` (its status and whether it said ``Connection: close``), its
    body read by Content-Length; None when the connection ended before a whole response."""
    while b"\r\n\r\n" not in pending:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        pending += chunk
    head, _, rest = bytes(pending).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        rest += chunk
    pending[:] = rest[length:]
    return int(lines[0].split()[1]), fields.get("connection", "").lower() == "close"


def keepalive(root: Path, clients: int = 200, requests: int = 20, address: tuple[str, int] | None = None) -> dict:
    """``clients`` clients at once, each sending ``requests`` requests one after the other on one
    keep-alive connection (a new one only after a response said ``Connection: close``). A request
    whose connection ended without a response is a *silent close*. ``address``: another server
    already serving ``_site``'s files (a side-by-side run), instead of ``pipeline serve``."""
    server, thread = _serving(_site(root)) if address is None else (None, None)
    address = address or server.server_address[:2]
    counts = {"clients": clients, "requests": clients * requests, "answered": 0, "silent": 0, "announced_closes": 0,
              "not_200": 0}
    lock = threading.Lock()
    barrier = threading.Barrier(clients, timeout=120)
    latencies: list[float] = []

    def client() -> None:
        sock, pending = None, bytearray()
        mine = {"answered": 0, "silent": 0, "announced_closes": 0, "not_200": 0}
        times = []
        try:
            barrier.wait()
            for _ in range(requests):
                started = time.perf_counter()  # a wait to be accepted counts too
                try:
                    if sock is None:
                        sock = socket.create_connection(address, timeout=60)
                        pending = bytearray()
                    sock.sendall(b"GET /vectors.bin HTTP/1.1\r\nHost: bench\r\n\r\n")
                    answer = _read_response(sock, pending)
                except OSError:
                    answer = None
                times.append(time.perf_counter() - started)
                if answer is None:
                    mine["silent"] += 1
                    if sock is not None:
                        sock.close()
                    sock = None
                    continue
                mine["answered"] += 1
                mine["not_200"] += answer[0] != 200
                if answer[1]:
                    mine["announced_closes"] += 1
                    sock.close()
                    sock = None
        finally:
            if sock is not None:
                sock.close()
            with lock:
                for key, value in mine.items():
                    counts[key] += value
                latencies.extend(times)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts["seconds"] = round(time.perf_counter() - started, 2)
    if server is not None:
        _stop(server, thread)
    latencies.sort()
    counts["median_ms"] = round(1000 * statistics.median(latencies), 2) if latencies else None
    counts["p99_ms"] = round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2) if latencies else None
    counts["silent_percent"] = round(100 * counts["silent"] / counts["requests"], 2)
    return counts


def slow(root: Path, slow_clients: int = 150, requests: int = 50, head_deadline: float | None = None,
         address: tuple[str, int] | None = None, body: bool = False) -> dict:
    """``slow_clients`` connections trickle a request head (a header byte a second, never the
    blank line), or with ``body`` a whole head announcing a 1 MB body and then its bytes one a
    second; meanwhile ``requests`` ordinary requests, one after the other, each on a new
    connection with a 60 s timeout: their latencies, and how many got no answer. ``address``: as
    for ``keepalive``."""
    attrs = {} if head_deadline is None else {"head_deadline": head_deadline}
    server, thread = _serving(_site(root), **attrs) if address is None else (None, None)
    address = address or server.server_address[:2]
    stop = threading.Event()
    held = []
    for _ in range(slow_clients):
        s = socket.create_connection(address, timeout=10)
        s.sendall(b"GET /vectors.bin HTTP/1.1\r\nHost: slow\r\n"
                  + (b"Content-Length: 1000000\r\n\r\n" if body else b"X-Trickle: "))
        held.append(s)

    def trickle() -> None:
        while not stop.wait(1.0):
            for s in held:
                try:
                    s.sendall(b"x")
                except OSError:
                    pass

    trickler = threading.Thread(target=trickle, daemon=True)
    trickler.start()
    time.sleep(0.5)  # every slow connection accepted and trickling
    latencies, failed = [], 0
    for _ in range(requests):
        started = time.perf_counter()
        try:
            s = socket.create_connection(address, timeout=60)
            s.sendall(b"GET /vectors.bin HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            answer = _read_response(s, bytearray())
            s.close()
        except OSError:
            answer = None
        latencies.append(time.perf_counter() - started)
        failed += answer is None or answer[0] != 200
    stop.set()
    trickler.join()
    for s in held:
        s.close()
    if server is not None:
        _stop(server, thread)
    latencies.sort()
    return {
        "slow_clients": slow_clients, "slow": "body" if body else "head", "requests": requests, "unanswered": failed,
        "median_ms": round(1000 * statistics.median(latencies), 2), "max_ms": round(1000 * latencies[-1], 2),
    }


# -- kills -----------------------------------------------------------------------------------------

KILL_V1 = {
    "guide/setup.md": "# Setup\n\nInstall it.\n\n## Configure\n\nSet the options.\n\n## Run\n\nRun it.\n",
    "guide/tools.md": "# Tools\n\nA tool overview.\n\n## Hammer\n\nFor nails.\n",
    "reference/notes.md": "# Notes\n\nJust notes.\n",
}
KILL_V2 = {  # a section removed, a document deleted, one added
    "guide/setup.md": "# Setup\n\nInstall it.\n\n## Run\n\nRun it now.\n",
    "reference/added.md": "# Added\n\nA new document.\n\n## More\n\nWith two sections.\n",
}


def kills(world: Path, trials: int = 100, seed: int = 35) -> dict:
    """``trials`` rebuilds (v1 -> v2) each SIGKILLed at a random moment of its run; counts the
    sites left broken (``tests/sitecheck``: an index link to nothing, a chunk that is not its
    source's span, a temp file) or neither v1's nor v2's, and whether the next build repaired."""
    from tests.sitecheck import built_files, site_problems

    shutil.rmtree(world, ignore_errors=True)
    pristine = world / "pristine"
    _write(pristine / "content", KILL_V1)
    _build(pristine)
    old = built_files(pristine / "site")
    (pristine / "content" / "guide" / "tools.md").unlink()
    _write(pristine / "content", KILL_V2)
    reference = world / "reference"
    shutil.copytree(pristine, reference, symlinks=True)
    span = _forked_seconds(lambda: _build(reference))  # as long as a trial's child runs, fork included
    new = built_files(reference / "site")
    rng = random.Random(seed)
    counts = {"trials": trials, "killed": 0, "finished": 0, "broken": 0, "neither": 0, "old": 0, "new": 0,
              "not_repaired": 0, "build_seconds": round(span, 3)}
    for _ in range(trials):
        trial = world / "trial"
        shutil.rmtree(trial, ignore_errors=True)
        shutil.copytree(pristine, trial, symlinks=True)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child builds until killed
            code = 1
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _build(trial)
                code = 0
            finally:
                os._exit(code)
        time.sleep(rng.uniform(0, span))  # some finish: the repair is checked after those too
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        status = os.waitpid(pid, 0)[1]
        counts["killed" if os.WIFSIGNALED(status) else "finished"] += 1
        site = trial / "site"
        if site_problems(site):
            counts["broken"] += 1
        published = built_files(site)
        counts["old" if published == old else "new" if published == new else "neither"] += 1
        _build(trial)
        counts["not_repaired"] += bool(site_problems(site)) or built_files(site) != new
    return counts


def _forked_seconds(work) -> float:
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                work()
            code = 0
        finally:
            os._exit(code)
    os.waitpid(pid, 0)
    return time.perf_counter() - started
