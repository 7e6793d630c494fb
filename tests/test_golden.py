"""The golden tree (pelican's habit): ``tests/golden/content`` built with ``tests/golden/site.toml``
(the hashing embedder, no static query encoder) gives exactly the bytes of ``tests/golden/site/``,
whichever way it is built: ``build`` in one process, the four stages run alone through the CLI
(``chunk-dir``, ``spec``, ``index``, ``publish``: separate processes passing data only through
files), and a build after an edit to one document and its revert.

After a deliberate change of the output, regenerate the expected tree and review its diff:

    GOLDEN_UPDATE=1 PYTHONPATH=$PWD .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_golden.py
    git diff --stat tests/golden/site

The expected tree is ``sitecheck.built_files`` less ``.pipeline-state.json`` (it names the code's
digest, which any edit of the code changes), ``_assets/`` and ``_schema/``: those
are verbatim copies of ``pipeline/assets``, ``pipeline/schemas`` and the vendored libraries of
whatever ``node_modules`` this machine installed, so they are compared with their sources instead.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from conftest import ROOT, write_tree
from sitecheck import assert_consistent, built_files
from pipeline.config import load_config
from pipeline.reuse.state import STATE_FILE
from pipeline.site.build import build
from pipeline.site.bundle import page_bundle
from pipeline.site.publish import ASSETS_DIR, shipped_assets
from pipeline.site.staging import SITE_MARKER
from pipeline.site.vendor import vendored_assets
from pipeline.siteformat.schemas import SCHEMA_DIR, schema_texts

GOLDEN = ROOT / "tests" / "golden"
CONTENT = GOLDEN / "content"
CONFIG = GOLDEN / "site.toml"
EXPECTED = GOLDEN / "site"
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"
REGENERATE = "GOLDEN_UPDATE=1 PYTHONPATH=$PWD .venv/bin/python -m pytest -q -p no:cacheprovider tests/test_golden.py"
COPIED_DIRS = (ASSETS_DIR, SCHEMA_DIR)  # verbatim copies, compared with their sources (``copies_problems``)
# Another time zone and the C locale than the machine's: output must depend on neither.
STAGE_ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HUB_OFFLINE": "1",
             "TZ": "Pacific/Kiritimati", "LC_ALL": "C"}


def site_files(site: Path) -> dict[str, bytes]:
    """What the golden tree holds of ``site``: ``built_files`` but the build's state and the verbatim copies."""
    return {rel: data for rel, data in built_files(site).items() if rel != STATE_FILE and rel.split("/", 1)[0] not in COPIED_DIRS}


def expected_files() -> dict[str, bytes]:
    return {p.relative_to(EXPECTED).as_posix(): p.read_bytes() for p in sorted(EXPECTED.rglob("*")) if p.is_file()}


def copies_problems(site: Path) -> list[str]:
    """How ``_assets/`` and ``_schema/`` differ from the files they copy (empty: they do not)."""
    bundle = dict([page_bundle()])  # the page's script, bundled from the shipped modules (site/bundle.py)
    sources = {f"{ASSETS_DIR}/{n}": b for n, b in (shipped_assets() | vendored_assets() | bundle).items()}
    sources |= {f"{SCHEMA_DIR}/{n}": b for n, b in schema_texts().items()}
    copies = {rel: data for rel, data in built_files(site).items() if rel.split("/", 1)[0] in COPIED_DIRS}
    problems = [f"{rel}: not copied" for rel in sorted(sources.keys() - copies.keys())]
    problems += [f"{rel}: not a shipped file" for rel in sorted(copies.keys() - sources.keys())]
    return problems + [f"{rel}: differs from its source" for rel in sorted(sources.keys() & copies.keys()) if sources[rel] != copies[rel]]


def _readable_lines(rel: str, data: bytes) -> list[str]:
    """``data`` as lines to diff: JSON indented (the site writes one-line JSON), text as is."""
    if rel.endswith(".json"):
        try:
            return orjson.dumps(orjson.loads(data), option=orjson.OPT_INDENT_2).decode().splitlines()
        except orjson.JSONDecodeError:
            pass
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return []


def differences(expected: dict[str, bytes], actual: dict[str, bytes], *, files: int = 6, lines: int = 12) -> str:
    """Which files differ, and the first ``lines`` of a diff of each of the first ``files``;
    "" when the trees are equal."""
    missing, extra = sorted(expected.keys() - actual.keys()), sorted(actual.keys() - expected.keys())
    changed = [rel for rel in sorted(expected.keys() & actual.keys()) if expected[rel] != actual[rel]]
    if not (missing or extra or changed):
        return ""
    out = [f"{len(missing)} missing, {len(extra)} unexpected, {len(changed)} different of {len(expected)} files"]
    out += [f"  missing from the output: {rel}" for rel in missing[:files]]
    out += [f"  not expected: {rel}" for rel in extra[:files]]
    for rel in changed[:files]:
        old, new = _readable_lines(rel, expected[rel]), _readable_lines(rel, actual[rel])
        if not (old or new):  # binary: where it starts to differ
            shorter = min(len(expected[rel]), len(actual[rel]))
            at = next((i for i, (a, b) in enumerate(zip(expected[rel], actual[rel])) if a != b), shorter)
            out.append(f"  differs: {rel} ({len(expected[rel])} -> {len(actual[rel])} bytes, first at byte {at})")
            continue
        diff = list(difflib.unified_diff(old, new, "expected", "actual", n=1, lineterm=""))[2:]
        out.append(f"  differs: {rel}")
        out += [f"    {line[:160]}" for line in diff[:lines]] + ([f"    ... {len(diff) - lines} more diff lines"] if len(diff) > lines else [])
    if len(changed) > files:
        out.append(f"  ... and {len(changed) - files} more different files: {', '.join(changed[files:files + 20])}")
    return "\n".join(out)


def assert_same(expected: dict[str, bytes], actual: dict[str, bytes], what: str) -> None:
    found = differences(expected, actual)
    if found:
        pytest.fail(f"{what} differs from the golden tree tests/golden/site/:\n{found}\n"
                    f"(a deliberate change? regenerate: {REGENERATE})", pytrace=False)


def build_golden(content: Path, site: Path, cache: Path) -> Path:
    build(content, site, load_config(CONFIG).with_overrides(cache_dir=cache), progress=False)
    return site


def run_stages(tree: Path, cache: str = "cache") -> Path:
    """``chunk-dir``, ``spec``, ``index``, ``publish`` on ``tree`` (a copy of content, changed in
    place), each its own process run from ``tree``'s parent with relative paths."""
    for stage in (["chunk-dir"], ["spec", "--cache-dir", cache], ["index"], ["publish", "--cache-dir", cache]):
        result = subprocess.run([sys.executable, "-m", "pipeline", stage[0], tree.name, "--config", str(CONFIG), *stage[1:], "-q"],
                                cwd=tree.parent, env=STAGE_ENV, capture_output=True, text=True)
        assert result.returncode == 0, f"pipeline {stage[0]}: {result.stderr}"
    return tree


@pytest.fixture(scope="module")
def golden_site(tmp_path_factory) -> Path:
    """The golden content built once for this module; with GOLDEN_UPDATE=1 it becomes the expected tree."""
    tmp = tmp_path_factory.mktemp("golden")
    site = build_golden(CONTENT, tmp / "site", tmp / "cache")
    if UPDATE:
        shutil.rmtree(EXPECTED, ignore_errors=True)
        write_tree(EXPECTED, site_files(site))
    return site


def test_the_golden_tree_is_small_and_machine_free(golden_site):
    """The expected tree stays reviewable, and holds nothing of the machine that made it."""
    files = expected_files()
    assert 30 < len(files) < 200 and sum(map(len, files.values())) < 400_000
    for rel, data in files.items():
        for machine in (str(ROOT).encode(), b"/tmp/", os.environ.get("HOME", "/root").encode() + b"/"):
            assert machine not in data, f"{rel} names a path of this machine: {machine!r}"


def test_build_gives_the_golden_bytes(golden_site):
    assert_same(expected_files(), site_files(golden_site), "`build`")
    assert copies_problems(golden_site) == []
    assert_consistent(golden_site, base_url=load_config(CONFIG).normalized_base_url)


def test_build_from_another_folder_gives_the_same_bytes(tmp_path, golden_site):
    """Another content path, site path and cache path: none of them is in the output."""
    content = shutil.copytree(CONTENT, tmp_path / "elsewhere" / "deeper" / "notes")
    site = build_golden(content, tmp_path / "out", tmp_path / "another-cache")
    assert_same(expected_files(), site_files(site), "a build from another folder")


def test_the_stages_run_alone_give_the_golden_bytes(tmp_path, golden_site):
    """The file-passing path equals the in-memory one. What differs is inherent: the stages work
    in place on a copy of the content, in no folder a build owns, so they write neither the
    marker a build leaves in its site nor the state that lets the next build reuse its work."""
    tree = run_stages(shutil.copytree(CONTENT, tmp_path / "tree"))
    files = built_files(tree)
    assert SITE_MARKER not in files and STATE_FILE not in files
    expected = {rel: data for rel, data in expected_files().items() if rel != SITE_MARKER}
    assert_same(expected, {rel: data for rel, data in files.items() if rel.split("/", 1)[0] not in COPIED_DIRS},
                "the stages run alone")
    assert copies_problems(tree) == []


def test_an_edit_and_its_revert_give_back_the_golden_bytes(tmp_path, golden_site):
    """A rebuild after a revert reuses state, memo and cache, and retires the files the edit
    added (served one build longer, left out by ``built_files``): the same bytes as a cold build."""
    content = shutil.copytree(CONTENT, tmp_path / "content")
    document = content / "kitchen" / "bread" / "sourdough.md"
    original = document.read_bytes()
    site, cache = tmp_path / "site", tmp_path / "cache"
    build_golden(content, site, cache)
    document.write_bytes(original.replace(b"## Troubleshooting", b"## Storing\n\nKeep the loaf cut side down; freeze "
                                          b"what will not be eaten in two days.\n\n## Troubleshooting"))
    build_golden(content, site, cache)
    edited = site_files(site)
    assert "kitchen/bread/_chunks/sourdough-8.md" in edited and edited != expected_files()  # the edit showed
    document.write_bytes(original)
    build_golden(content, site, cache)
    assert_same(expected_files(), site_files(site), "a build after an edit and its revert")
    assert copies_problems(site) == []


VAULT = {
    ".obsidian/app.json": "{}\n",
    "notes/garden.md": "# Garden\n\nThe beds, see [[Compost]] and [[Tomatoes|the tomatoes]]. #garden\n\n![[plan.png]]\n",
    "notes/compost.md": "# Compost\n\nGreen and brown, turned often; feeds the [[garden]].\n",
    "crops/tomatoes.md": "---\ntags: [crop]\n---\n# Tomatoes\n\nSun and water. Back to [[Garden]].\n",
    "notes/plan.png": b"\x89PNG\r\n\x1a\nfake",
}


def test_the_stages_run_alone_on_a_vault_give_its_authored_links_as_a_build_does(tmp_path):
    """``pipeline spec`` alone decides ``vault = "auto"`` from the tree's ``.obsidian/`` as
    ``chunk-dir`` does (it used not to, and published no link and no backlink). The stages keep
    in the tree what a build leaves out of a vault's site: Obsidian's settings, attachments."""
    content = write_tree(tmp_path / "vault", VAULT)
    site = build_golden(content, tmp_path / "site", tmp_path / "cache")
    tree = run_stages(shutil.copytree(content, tmp_path / "tree"))
    built, staged = built_files(site), built_files(tree)
    assert orjson.loads(built["notes/_index/compost.doc.json"])["backlinks"] == 1  # the vault's links are there
    assert set(built) - set(staged) == {SITE_MARKER, STATE_FILE}
    assert set(staged) - set(built) == {".obsidian/app.json", "notes/plan.png"}
    found = differences({rel: built[rel] for rel in set(built) & set(staged)}, {rel: staged[rel] for rel in set(built) & set(staged)})
    assert not found, f"the stages alone differ from the build on a vault:\n{found}"
