"""The README's set-up (``Makefile``, ``.ci/run``): what ``make`` says while it installs, and the
browser it installs only where it can. Recipes run against a fake PATH (no real install)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

MAKE = shutil.which("make")
pytestmark = pytest.mark.skipif(MAKE is None, reason="GNU make is not installed")


def fake_bin(folder: Path, **tools: str) -> Path:
    """A PATH folder holding only ``tools`` (name -> shell script body)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in tools.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return folder


def make(target: str, path: Path, *flags: str) -> subprocess.CompletedProcess:
    """``make TARGET`` with PATH = ``path`` alone (``-s`` unless ``flags`` are given: ``-n`` lists)."""
    env = {"PATH": str(path), "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([MAKE, "-f", str(ROOT / "Makefile"), *(flags or ("-s",)), target], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_without_root_the_browser_is_not_installed_and_its_tests_will_skip(tmp_path):
    """Issue 34: ``make test`` ran apt-get and failed the whole run for a user without root."""
    log = tmp_path / "apt.log"
    path = fake_bin(tmp_path / "bin", id="echo 1000", **{"apt-get": f'echo "$@" >> {log}; exit 100'})
    result = make("browser", path)
    assert result.returncode == 0, result.stderr
    assert "needs root and apt-get: the browser tests will be skipped" in result.stdout
    assert not log.exists()  # never tried


@pytest.mark.parametrize("apt_works", [True, False])
def test_as_root_with_apt_the_browser_is_installed_or_the_failure_said(tmp_path, apt_works):
    log = tmp_path / "apt.log"
    path = fake_bin(tmp_path / "bin", id="echo 0", **{"apt-get": f'echo "$@" >> {log}; exit {0 if apt_works else 100}'})
    result = make("browser", path)
    assert result.returncode == 0, result.stderr
    assert "installing chromium and chromium-driver with apt-get" in result.stdout
    assert ("apt-get could not install" in result.stdout) is not apt_works
    calls = log.read_text().splitlines()
    assert calls[0].startswith("update") and (not apt_works or "chromium chromium-driver" in calls[1])


def test_an_installed_browser_is_left_alone(tmp_path):
    path = fake_bin(tmp_path / "bin", id="echo 1000", chromium="true", chromedriver="true", **{"apt-get": "exit 100"})
    result = make("browser", path)
    assert result.returncode == 0 and result.stdout == ""


def test_every_quiet_install_step_says_first_what_it_does(tmp_path):
    """Issue 34: ``make site`` was silent for the ~2 minutes of ``pip install --quiet``."""
    result = make("install", fake_bin(tmp_path / "bin"), "-n", "-B")
    lines = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
    installs = [i for i, line in enumerate(lines) if "pip install" in line or line.startswith("npm ci") or " -m venv " in line]
    assert len(installs) == 5, lines  # venv, pip, torch, the pipeline, npm
    for i in installs:
        assert lines[i - 1].startswith('echo "make: '), (lines[i - 1], lines[i])
    assert "torch" in lines[installs[2] - 1] and "longest" in lines[installs[2] - 1]


def test_ci_installs_the_browser_itself_and_fails_without_it():
    script = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert 'export CI="${CI:-1}"' in script and "apt-get install -y chromium chromium-driver" in script
    assert script.index("apt-get install") < script.index("\nmake test\n")


def test_without_chromium_or_realdocs_their_tests_skip_with_the_reason_in_the_summary(tmp_path):
    """Issue 34: ``make test`` without root must not fail the run for want of a browser, and the
    realdocs tests say they skipped. pytest as ``make test`` runs it (the project's ``-ra``), with a
    PATH holding no chromium and ``PIPELINE_REALDOCS`` naming a folder that does not exist."""
    import sys

    env = {**os.environ, "PATH": str(Path(sys.executable).parent), "PIPELINE_REALDOCS": str(tmp_path / "none")}
    env.pop("CI", None)
    env.pop("PYTEST_ADDOPTS", None)  # the caller's options (a CI run's -rf) would hide the SKIPPED lines
    modules = ["tests/test_browser.py", "tests/test_embed_browser.py", "tests/test_realdocs.py"]
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    skipped = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    browser = "chromium and chromedriver are not installed, so the browser tests do not run here"
    assert [m for m in ("test_browser.py", "test_embed_browser.py") if any(m in s and browser in s for s in skipped)] == [
        "test_browser.py", "test_embed_browser.py"], skipped
    assert any("test_realdocs.py" in s and f"PIPELINE_REALDOCS={tmp_path / 'none'} holds no fastapi/" in s for s in skipped), skipped
    assert " passed" not in result.stdout and " failed" not in result.stdout and " error" not in result.stdout
