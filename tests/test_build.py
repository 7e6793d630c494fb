"""End to end: build a content tree into a temp site and read it back like a client would."""

import gc
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from sitecheck import built_files
from conftest import ROOT, write_tree, document_resources
from pipeline.config import SiteConfig
from pipeline.embedding.executor import LocalExecutor
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.site.build import build

LONG_DOC = "# Handbook\n\nThe handbook overview explains the stripe order.\n\n" + "".join(
    f"## Section {i}\n\nParagraph about topic {i} and the stripe order, with details {i}.\n\n" for i in range(1, 12)
)
QUICK_DOC = (
    "# Tool\n\nA tool overview.\n\n## Quick Reference\n\n```bash\ntool run\ntool stop\n```\n\n"
    "## Running\n\nRun the tool with care.\n\n## Stopping\n\nStop the tool.\n"
)
FILES = {
    "guide/basics/handbook.md": LONG_DOC,
    "guide/basics/_keywords/words.md": "| keyword | score |\n|---|---|\n| stripe order | 9 |\n",
    "guide/tools/tool.md": QUICK_DOC,
    "reference/notes.md": "# Notes\n\nJust notes.\n",
}


def make_site(tmp_path, files=FILES, **config):
    content = write_tree(tmp_path / "content", files)
    site = tmp_path / "site"
    embedder = HashingEmbedder()
    cfg = SiteConfig(cache_dir=tmp_path / "cache", **config)
    report = build(content, site, cfg, embedder=embedder, progress=False)
    return content, site, embedder, report, cfg


def load(path: Path) -> dict:
    return orjson.loads(path.read_bytes())


def walk_indexes(site: Path, base_url="/"):
    """Follow _links and _embedded.topics from the root, like a client: every index file
    (listing pages by ``next``, document resources by their entries' ``self`` and ``next``)."""
    seen = {}
    queue = [f"{base_url}index.json"]
    while queue:
        href = queue.pop()
        if href in seen:
            continue
        path = site / href.removeprefix(base_url)
        doc = load(path)
        assert doc["_links"]["self"]["href"] == href
        seen[href] = (path, doc)
        embedded = doc.get("_embedded") or {}
        queue += [t["_links"]["self"]["href"] for t in embedded.get("topics", [])]
        queue += [d["_links"]["self"]["href"] for d in embedded.get("documents", [])]
        queue += [doc["_links"]["next"]["href"]] if "next" in doc["_links"] else []
    return seen


def assert_client_reads_every_chunk_and_its_source_span(site: Path, report) -> dict:
    """Every topic reachable by links; every chunk file ends with its span of the source (a
    YAML/JSON entry's shows its span rendered as markdown: ``chunking/entry_render.py``)."""
    indexes = walk_indexes(site)
    chunk_count = 0
    for path, doc in indexes.values():
        if path.name != "index.json":
            continue
        if doc["id"]:
            assert "parent" in doc["_links"]
            assert (site / doc["_links"]["parent"]["href"].lstrip("/")).is_file()
        for key, chunks in document_resources(site, doc["id"]).items():
            source = (path.parent / chunks["source"]).read_text(encoding="utf-8")
            manifest = load(path.parent / "_chunks" / f"{key}.manifest.json")
            assert chunks["count"] == len(chunks["items"]) == len(manifest["chunks"])
            for item, record in zip(chunks["items"], manifest["chunks"]):
                chunk_text = (path.parent / item["href"]).read_text(encoding="utf-8")
                span = source[record["start_offset"] : record["end_offset"]]
                if record["metadata"].get("rendered_from"):  # a YAML/JSON entry's chunk shows its span as markdown
                    assert span.strip()
                else:
                    assert chunk_text.endswith(span)
                chunk_count += 1
            assert sorted(chunks["stripe_order"]) == list(range(1, chunks["count"]))
    assert chunk_count == report.chunk.chunks
    return indexes


def test_client_reads_every_chunk_and_its_source_span(tmp_path):
    _, site, _, report, _ = make_site(tmp_path)
    indexes = assert_client_reads_every_chunk_and_its_source_span(site, report)
    ids = {doc["id"] for path, doc in indexes.values() if path.name == "index.json"}
    assert ids == {"", "guide", "guide/basics", "guide/tools", "reference"}  # every directory is reachable
    assert {doc["key"] for path, doc in indexes.values() if path.name != "index.json"} == {"handbook", "tool", "notes"}


def test_yaml_and_json_entries_are_documents_other_data_files_are_not(tmp_path):
    fixtures = ROOT / "tests/fixtures/chunking"
    entries = {f"kb/{name}": (fixtures / name).read_bytes() for name in ("crm-how-to.md", "crm-how-to.yaml", "error-401.json")}
    files = {**FILES, **entries, "kb/package.json": '{"name": "x", "type": "module"}\n', "kb/broken.yaml": "a: [\n"}
    with pytest.warns(UserWarning, match=r"broken.yaml:2: not a document"):
        content, site, embedder, report, cfg = make_site(tmp_path, files=files, retire_removed_files=False)
    assert_client_reads_every_chunk_and_its_source_span(site, report)
    kb = document_resources(site, "kb")
    assert sorted(kb) == ["crm-how-to", "crm-how-to.yaml", "error-401.json"]  # a shared stem, two documents
    assert {kb["crm-how-to.yaml"]["count"], kb["error-401.json"]["count"]} == {5, 1}
    assert kb["crm-how-to.yaml"]["title"] == "How to Setup CRM Integration"
    manifest = load(site / "kb/_chunks/crm-how-to.yaml.manifest.json")
    assert {c["strategy"] for c in manifest["chunks"]} == {"entry"}
    ids = [c["chunk_id"] for m in (site / "kb/_chunks").glob("*.manifest.json") for c in load(m)["chunks"]]
    assert len(ids) == len(set(ids)) == 11 and "kb/crm-how-to.yaml_chunk_0" in ids
    # what a reader fetches is markdown, not the entry's JSON/YAML (chunking/entry_render.py)
    error = (site / "kb/_chunks/error-401.json-0.md").read_text(encoding="utf-8")
    assert "**Code:** 401" in error and "**Fix:** Check API key validity" in error and '"errorCode"' not in error
    steps = (site / "kb/_chunks/crm-how-to.yaml-2.md").read_text(encoding="utf-8")
    assert steps.endswith("\n\n1. Login to admin panel\n2. Navigate to integrations\n3. Enter API credentials")
    (content / "kb/crm-how-to.yaml").unlink()
    build(content, site, cfg, embedder=embedder, progress=False)
    assert not list((site / "kb/_chunks").glob("crm-how-to.yaml*"))
    assert sorted(document_resources(site, "kb")) == ["crm-how-to", "error-401.json"]


def test_striping_technical_baseline_and_keywords(tmp_path):
    _, site, *_ = make_site(tmp_path)
    basics = document_resources(site, "guide/basics")["handbook"]
    assert basics["count"] == 12 and len(basics["stripe_order"]) == 11
    sims = {i["index"]: i["similarity_conceptual"] for i in basics["items"]}
    ordered = sorted(sims.keys() - {0}, key=lambda i: (-sims[i], i))
    assert basics["stripe_order"] == [i for k in range(4) for i in ordered[k::4]]  # 11 chunks -> factor 4
    assert {"name": "stripe order", "score": 9} in basics["items"][0]["keywords"]
    assert "baseline_technical" not in basics

    tool = document_resources(site, "guide/tools")["tool"]
    assert tool["baseline_technical"] == 1
    assert sorted(tool["stripe_order_technical"]) == [2, 3]
    assert tool["items"][1]["is_code"] is True and tool["items"][1]["similarity_technical"] == 1.0


def test_build_twice_is_byte_identical_and_writes_nothing(tmp_path):
    content, site, embedder, _, cfg = make_site(tmp_path)
    before = built_files(site)
    calls = embedder.calls
    report = build(content, site, cfg, embedder=embedder, progress=False)
    assert built_files(site) == before
    assert embedder.calls == calls and report.spec.embedded == 0
    assert report.synced + report.chunk.written + report.spec.written + report.index.written == 0


def test_editing_one_section_reembeds_one_chunk(tmp_path):
    content, site, embedder, _, cfg = make_site(tmp_path)
    doc = content / "guide/basics/handbook.md"
    doc.write_text(doc.read_text().replace("details 5.", "details 5, now edited."), encoding="utf-8")
    calls = embedder.calls
    report = build(content, site, cfg, embedder=embedder, progress=False)
    assert embedder.calls - calls == 1 and report.spec.embedded == 1


def test_deleted_and_shrunk_documents_leave_no_orphans(tmp_path):
    # Removal by the stages themselves; by default the removed files stay one build (test_site_retire.py).
    content, site, embedder, _, cfg = make_site(tmp_path, retire_removed_files=False)
    (content / "guide/tools/tool.md").unlink()
    (content / "guide/tools").rmdir()
    shrunk = "# Handbook\n\nShort now.\n\n## Only\n\nOne section.\n"
    (content / "guide/basics/handbook.md").write_text(shrunk, encoding="utf-8")
    build(content, site, cfg, embedder=embedder, progress=False)
    assert not (site / "guide/tools").exists()
    assert sorted(p.name for p in (site / "guide/basics/_chunks").iterdir()) == ["handbook-0.md", "handbook-1.md", "handbook.manifest.json"]
    topics = [t["id"] for t in load(site / "guide/index.json")["_embedded"]["topics"]]
    assert topics == ["guide/basics"]
    # The cache is not the site: it keeps the deleted document's vectors for other builds
    # (tests/test_embedding_cache_admin.py); only `pipeline cache prune` removes them.
    cache_index = load(next((tmp_path / "cache").glob("*/*/index.json")))
    assert "guide/tools/tool.md" in cache_index
    assert (next((tmp_path / "cache").glob("*/*")) / cache_index["guide/tools/tool.md"]).is_dir()


def test_base_url_prefixes_absolute_links(tmp_path):
    _, site, *_ = make_site(tmp_path, base_url="/kb")
    root = load(site / "index.json")
    assert root["_links"]["self"]["href"] == "/kb/index.json"
    assert walk_indexes(site, "/kb/")


@pytest.mark.parametrize(
    "files, expected",
    [
        ({"a/bad.md": b"# Title\n\ncaf\xe9\n"}, "bad.md:3: not valid UTF-8"),
        ({"a/fence.md": "# T\n\ntext\n\n```python\ncode\n"}, "fence.md:5: code fence opened here is never closed"),
        ({"a/empty.md": ""}, "empty.md:1: empty document"),
        ({"a/ok.md": "# Fine\n\nok\n", "a/_keywords/words.md": "| keyword | score |\n|---|---|\n| x | ten |\n"}, "words.md:3:"),
        ({"a/ok.md": "# Fine\n\nok\n", "a/qa-pairs.md": b"## Q: Why?\n\ncaf\xe9\n"}, "qa-pairs.md:3: not valid UTF-8"),
    ],
)
def test_bad_input_names_file_and_line_and_writes_nothing_half_done(tmp_path, files, expected):
    content = write_tree(tmp_path / "content", files)
    with pytest.raises(PipelineError) as error:
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "cache"), embedder=HashingEmbedder(), progress=False)
    assert expected in str(error.value)
    leftovers = [p for p in (tmp_path / "site").rglob("*") if p.name.endswith(".tmp")] if (tmp_path / "site").exists() else []
    assert leftovers == []
    assert not (tmp_path / "site").exists()  # every input is checked before the site is touched
    assert str(tmp_path / "content") in str(error.value)  # the file to fix, not its site copy


@pytest.mark.parametrize(
    "bad",
    [{"guide/basics/_keywords/words.md": "| keyword | score |\n|---|---|\n| x | ten |\n"}, {"guide/basics/qa-pairs.md": b"\xff"}],
)
def test_bad_input_on_a_rebuild_leaves_the_site_as_it_was(tmp_path, bad):
    content, site, embedder, _, cfg = make_site(tmp_path)
    before = {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}
    write_tree(content, {"guide/basics/added.md": "# Added\n\nA new document.\n", **bad})
    with pytest.raises(PipelineError):
        build(content, site, cfg, embedder=embedder, progress=False)
    assert {p: p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()} == before


def test_heading_inside_code_block_is_not_a_split_point(tmp_path):
    files = {"t/doc.md": "# Doc\n\nIntro.\n\n## Real\n\n```md\n## Not a heading\n```\n\nAfter.\n"}
    _, site, *_ = make_site(tmp_path, files=files)
    items = document_resources(site, "t")["doc"]["items"]
    assert [i["title"] for i in items] == ["Doc", "Real"]


def test_refuses_to_overwrite_a_folder_it_did_not_build(tmp_path):
    content = write_tree(tmp_path / "content", {"a/x.md": "# X\n\nx\n"})
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "precious.txt").write_text("keep me")
    with pytest.raises(PipelineError, match="not built by pipeline"):
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "c"), embedder=HashingEmbedder(), progress=False)
    assert (tmp_path / "site" / "precious.txt").read_text() == "keep me"


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize(
    "stage, what",
    [(["chunk-dir"], "content"), (["spec", "--embedder", "hashing"], "site"), (["index"], "site"), (["publish"], "site")],
)
def test_a_stage_alone_on_a_missing_folder_fails_clearly_and_creates_nothing(tmp_path, stage, what):
    missing = tmp_path / "missing"
    result = run_cli(stage[0], str(missing), *stage[1:], cwd=tmp_path)
    assert result.returncode == 1 and f"{what} directory not found" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not missing.exists()


def test_cli_errors_exit_1_with_message(tmp_path):
    result = run_cli("build", str(tmp_path / "missing"), "--out", str(tmp_path / "site"), "--embedder", "hashing", cwd=tmp_path)
    assert result.returncode == 1
    assert "content directory not found" in result.stderr and "Traceback" not in result.stderr


def test_cli_stages_run_alone_and_pass_data_through_files(tmp_path):
    tree = write_tree(tmp_path / "tree", {k: v for k, v in FILES.items()})
    common = ["--embedder", "hashing"]
    assert run_cli("chunk-dir", str(tree), *common, cwd=tmp_path).returncode == 0
    assert (tree / "guide/basics/_chunks/handbook-0.md").is_file()
    assert run_cli("spec", str(tree), *common, "--cache-dir", str(tmp_path / "c"), "-q", cwd=tmp_path).returncode == 0
    assert (tree / "guide/basics/topic-spec.md").is_file()
    result = run_cli("index", str(tree), "--base-url", "/x/", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert load(tree / "index.json")["_links"]["self"]["href"] == "/x/index.json"
    assert (tree / "guide/basics/handbook.md").read_text() == FILES["guide/basics/handbook.md"]  # source untouched


def test_directory_chunking_config_applies_below_it_and_front_matter_wins(tmp_path):
    section = "".join(f"## S{i}\n\nText {i}.\n\n### Sub {i}\n\nMore {i}.\n\n" for i in range(3))
    files = {
        "a/doc.md": "# A\n\nIntro.\n\n" + section,
        "b/_chunking.toml": 'strategy = "tokens"\n',
        "b/c/doc.md": "# C\n\nIntro.\n\n" + section,
        "b/d/doc.md": "---\nchunking: paragraph\n---\n# D\n\nIntro.\n\n" + section,
    }
    _, site, *_ = make_site(tmp_path, files=files)
    strategies = {d: load(site / d / "_chunks/doc.manifest.json")["strategy"] for d in ("a", "b/c", "b/d")}
    assert strategies == {"a": "markdown", "b/c": "tokens", "b/d": "paragraph"}
    # tokens splits at ## only, so ### stays inside its section: fewer chunks than markdown
    assert load(site / "b/c/_chunks/doc.manifest.json")["count"] < load(site / "a/_chunks/doc.manifest.json")["count"]


def test_bad_directory_chunking_config_names_the_file(tmp_path):
    content = write_tree(tmp_path / "content", {"a/_chunking.toml": "strategy = [\n", "a/x.md": "# X\n\nx\n"})
    with pytest.raises(PipelineError, match=r"_chunking.toml: invalid TOML"):
        build(content, tmp_path / "site", SiteConfig(cache_dir=tmp_path / "c"), embedder=HashingEmbedder(), progress=False)


def test_outputs_are_readable_by_other_users_and_topics_link_their_vectors(tmp_path):
    _, site, *_ = make_site(tmp_path)
    for path in [site / "index.json", site / "guide/basics/_chunks/handbook-0.md", site / "guide/basics/handbook.md"]:
        assert path.stat().st_mode & 0o044 == 0o044, path  # nginx runs as another user
    links = load(site / "guide/basics/index.json")["_links"]
    assert links["embeddings"]["href"] == "/guide/basics/_embeddings.bin"
    assert (site / "guide/basics/_embeddings.bin").is_file()
    assert "embeddings" not in load(site / "guide/index.json")["_links"]  # a section has no chunks



@pytest.fixture
def freeze_count_at_run_index(monkeypatch):
    """``seen["frozen during the build"]``: ``gc.get_freeze_count()`` as ``run_index`` starts,
    after the stages before it."""
    import pipeline.site.build as build_module

    seen = {}
    real_run_index = build_module.run_index

    def run_index(*args, **kwargs):
        seen["frozen during the build"] = gc.get_freeze_count()
        return real_run_index(*args, **kwargs)

    monkeypatch.setattr(build_module, "run_index", run_index)
    return seen


def test_build_freezes_what_outlives_a_stage_and_unfreezes_at_its_end(tmp_path, freeze_count_at_run_index):
    threshold = gc.get_threshold()
    make_site(tmp_path)
    assert freeze_count_at_run_index["frozen during the build"] > 0  # the stages before run_index were settled
    assert gc.get_freeze_count() == 0  # and given back to the collector
    assert gc.get_threshold() == threshold


def test_build_leaves_a_callers_own_freeze_alone(tmp_path, freeze_count_at_run_index):
    gc.freeze()  # e.g. a server that froze its start-up objects before forking workers
    try:
        frozen = gc.get_freeze_count()
        make_site(tmp_path)
        # frozen objects can still be freed by reference counting, so the count may only fall
        assert freeze_count_at_run_index["frozen during the build"] <= frozen  # the build froze nothing of its own
        assert 0 < gc.get_freeze_count() <= frozen  # nor thawed the caller's
    finally:
        gc.unfreeze()


def test_build_freezes_nothing_beside_another_executor(tmp_path, monkeypatch, freeze_count_at_run_index):
    """Ray's references must stay collectable until Ray stops: only the local executor settles."""
    import pipeline.site.build as build_module

    class OtherExecutor:  # stands for Ray's: any executor but the local one
        def embed(self, *args, **kwargs):
            return LocalExecutor().embed(*args, **kwargs)

    monkeypatch.setattr(build_module, "make_executor", lambda *args, **kwargs: OtherExecutor())
    make_site(tmp_path)
    assert freeze_count_at_run_index["frozen during the build"] == 0


def test_warnings_are_said_once_per_changed_document_and_summarised(tmp_path):
    """Issue 34: every rebuild (no-op ones too, and with -q) printed the same oversize warnings."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    code = "\n".join(f"value_{i} = compute({i}) + other_{i}" for i in range(120))
    files = {**FILES, "guide/big.md": f"# Big\n\nIntro.\n\n```python\n{code}\n```\n", "guide/small.md": "# Small\n\nText.\n"}
    content = write_tree(tmp_path / "content", files)
    args = ["build", str(content), "--out", str(tmp_path / "site"), "--embedder", "hashing", "--cache-dir", str(tmp_path / "cache")]
    runner = CliRunner()

    def warned(result):
        return [line for line in result.output.splitlines() if line.startswith("warning:") and "over the token limit" in line]

    first = runner.invoke(app, args)
    assert first.exit_code == 0 and len(warned(first)) == 1 and "big.md:5:" in warned(first)[0]
    again = runner.invoke(app, args)  # nothing changed: not said again, summarised in one line
    assert again.exit_code == 0 and warned(again) == []
    assert "1 warning about 1 unchanged document not repeated" in again.output
    quiet = runner.invoke(app, [*args, "-q"])
    assert quiet.exit_code == 0 and quiet.output == ""  # -q: no information lines, and no repeats
    (content / "guide/small.md").write_text("# Small\n\nOther text.\n", encoding="utf-8")
    assert warned(runner.invoke(app, [*args, "-q"])) == []  # another document changed: still not repeated
    (content / "guide/big.md").write_text(files["guide/big.md"].replace("Intro.", "Changed intro."), encoding="utf-8")
    changed = runner.invoke(app, [*args, "-q"])
    assert len(warned(changed)) == 1  # its document changed: said again, -q or not


def test_the_report_times_each_stage_it_ran(tmp_path):
    content, site, embedder, report, cfg = make_site(tmp_path)
    stages = {"plan_chunks", "sync_sources", "start_spec", "write_chunks", "finish_spec", "run_index", "publish_site"}
    assert set(report.stage_seconds) == stages and all(s >= 0 for s in report.stage_seconds.values())
    again = build(content, site, cfg, embedder=embedder, progress=False)  # a rebuild runs every stage too
    assert set(again.stage_seconds) == stages and again.stage_seconds is not report.stage_seconds
