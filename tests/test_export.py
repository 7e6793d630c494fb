"""pipeline export: the SQLite file round-trips every chunk of the fixture site (by id, by text,
by vector), JSONL in three record shapes, deterministic bytes, and bad input refused cleanly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.client import open_site
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.export.query import connect, fts_query, nearest, text_search
from pipeline.export.source import MANIFEST_NAMES
from test_client_support import fixture_site, served_site, site_copy  # noqa: F401

runner = CliRunner()


def manifest_path(site: Path, topic: str, key: str) -> Path:
    """A document's manifest under either naming scheme the readers accept."""
    found = [site / topic / "_chunks" / p.format(key=key) for p in MANIFEST_NAMES]
    return next(p for p in found if p.is_file() and orjson.loads(p.read_bytes()).get("document_id", "").endswith(key))


def export(site, out: Path, *args) -> Path:
    result = runner.invoke(app, ["export", str(site), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    return out


def site_chunks(site: Path) -> list:
    """(ref, text) of every chunk of the site, read with the Python client."""
    opened = open_site(site)
    refs = [c for node in opened.topics() for d in opened.topic(node).documents for c in d.items]
    return [(c.ref, c.text) for c in opened.read_all(refs)]


@pytest.fixture(scope="module")
def exported(fixture_site, tmp_path_factory) -> Path:
    return export(fixture_site, tmp_path_factory.mktemp("export") / "site.sqlite")


def test_every_chunk_is_found_by_id_with_its_text_and_metadata(exported, fixture_site):
    chunks = site_chunks(fixture_site)
    db = sqlite3.connect(exported)
    assert db.execute("SELECT count(*) FROM document_chunks").fetchone()[0] == len(chunks) == 17
    for ref, text in chunks:
        chunk_id = f"{ref.source.removesuffix('.md')}_chunk_{ref.index}"
        row = db.execute(
            "SELECT content, header_path, is_code, promotion_level, href, document_id, chunk_index FROM document_chunks WHERE chunk_id = ?",
            (chunk_id,),
        ).fetchone()
        assert row == (text, ref.header_path, int(ref.is_code), ref.promotion_level, ref.path, ref.source.removesuffix(".md"), ref.index)
    docs = db.execute("SELECT path, is_chunked, chunk_count, promotion_level, front_matter FROM documents ORDER BY path").fetchall()
    assert docs == [
        ("handbook/alpha.md", 1, 11, "standard", "{}"),
        ("handbook/beta.md", 1, 4, "standard", "{}"),
        ("notes/unsafe.md", 1, 2, "critical", '{"promotion_level":"critical"}'),
    ]


def test_every_chunk_is_found_by_text_and_by_vector(exported, fixture_site):
    connection, _ = connect(exported)
    embedder = HashingEmbedder()
    for ref, text in site_chunks(fixture_site):
        chunk_id = f"{ref.source.removesuffix('.md')}_chunk_{ref.index}"
        assert chunk_id in [m.chunk_id for m in text_search(connection, text, k=50)]
        blob = connection.execute("SELECT embedding FROM document_chunks WHERE chunk_id = ?", (chunk_id,)).fetchone()[0]
        assert len(blob) == 4 * embedder.dimension
        # the query vector as a reader computes it: the site's model on the chunk's text
        best = nearest(connection, embedder.embed([text])[0], k=1)[0]
        assert best.chunk_id == chunk_id and best.score > 0.99


def test_vector_search_by_sqlite_vec_and_by_numpy_agree(exported):
    """The same BLOB column ranked inside SQLite by sqlite-vec (in Python where the extension
    loads, else through the sqlite3 command-line shell, which can load it) and by numpy."""
    connection, loaded = connect(exported)
    query = np.frombuffer(connection.execute("SELECT embedding FROM document_chunks WHERE chunk_id = 'handbook/alpha_chunk_4'").fetchone()[0], dtype="<f4")
    plain = nearest(connection, query, k=5)
    assert plain[0].chunk_id == "handbook/alpha_chunk_4" and plain[0].score == pytest.approx(1.0, abs=1e-5)
    if loaded:
        inside = [m.chunk_id for m in nearest(connection, query, k=5, use_extension=True)]
    else:
        import shutil
        import subprocess

        import sqlite_vec

        shell = shutil.which("sqlite3")
        if shell is None:
            pytest.skip("neither this Python's sqlite3 nor a sqlite3 shell can load sqlite-vec here")
        sql = (
            f"SELECT chunk_id FROM document_chunks WHERE embedding IS NOT NULL "
            f"ORDER BY 1.0 - vec_distance_cosine(embedding, X'{query.tobytes().hex()}') DESC, chunk_id LIMIT 5;"
        )
        result = subprocess.run([shell, str(exported), f".load {sqlite_vec.loadable_path()}", sql],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        inside = result.stdout.split()
    assert inside == [m.chunk_id for m in plain]


def test_fts_syntax_in_a_query_is_taken_literally(exported):
    connection, _ = connect(exported)
    assert fts_query('stripe "order" OR') == '"stripe" """order""" "OR"'
    assert text_search(connection, "NEAR( AND * ) -") == []
    assert text_search(connection, "") == []


def test_exports_are_deterministic_and_the_same_from_a_directory_or_a_url(fixture_site, served_site, tmp_path):
    first = export(fixture_site, tmp_path / "a.sqlite").read_bytes()
    again = export(fixture_site, tmp_path / "a.sqlite", "--force").read_bytes()
    remote = export(served_site.url, tmp_path / "b.sqlite").read_bytes()
    assert first == again == remote
    lines = export(fixture_site, tmp_path / "a.jsonl", "--format", "jsonl").read_bytes()
    assert lines == export(served_site.url, tmp_path / "b.jsonl", "--format", "jsonl").read_bytes()


def test_jsonl_record_shapes(fixture_site, tmp_path):
    chunks = site_chunks(fixture_site)
    full = [orjson.loads(line) for line in export(fixture_site, tmp_path / "f.jsonl", "-f", "jsonl").read_bytes().splitlines()]
    seed = [orjson.loads(line) for line in export(fixture_site, tmp_path / "s.jsonl", "-f", "jsonl", "--record", "seed002").read_bytes().splitlines()]
    lang = [orjson.loads(line) for line in export(fixture_site, tmp_path / "l.jsonl", "-f", "jsonl", "--record", "langchain").read_bytes().splitlines()]
    assert len(full) == len(seed) == len(lang) == len(chunks)
    for (ref, text), f, s, lc in zip(chunks, full, seed, lang):
        assert f["content"] == s["content"] == lc["page_content"] == text
        assert f["chunk_id"] == lc["metadata"]["chunk_id"] and f["promotion_level"] == ref.promotion_level
        assert set(s) == {"content", "sourceFile", "chunkIndex", "totalChunks", "headerPath", "tokenCount", "metadata"}
        assert (s["sourceFile"], s["chunkIndex"]) == (ref.source, ref.index) and s["tokenCount"] > 0
        assert s["headerPath"] == (ref.header_path.split(" > ")[-1] if ref.header_path else "")
        assert s["metadata"]["promotionLevel"] == ref.promotion_level
        assert all(isinstance(v, (str, int, float, bool, list)) for v in lc["metadata"].values())


def test_jsonl_to_stdout(fixture_site):
    result = runner.invoke(app, ["export", str(fixture_site), "-f", "jsonl", "-o", "-"])
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 17


def test_an_existing_target_is_refused_without_force(fixture_site, tmp_path):
    target = tmp_path / "x.sqlite"
    target.write_bytes(b"keep me")
    result = runner.invoke(app, ["export", str(fixture_site), "--out", str(target)])
    assert result.exit_code == 1 and "--force" in result.output and str(target) in result.output
    assert target.read_bytes() == b"keep me"


def test_not_a_site_is_refused_and_nothing_is_written(tmp_path, served_site):
    (tmp_path / "plain").mkdir()
    for location in (str(tmp_path / "plain"), served_site.url + "handbook/_chunks/"):
        result = runner.invoke(app, ["export", location, "--out", str(tmp_path / "x.sqlite")])
        assert result.exit_code == 1 and "not a pipeline site" in result.output and location.rstrip("/") in result.output
    assert list(tmp_path.iterdir()) == [tmp_path / "plain"]


def test_a_site_built_by_an_older_version_is_refused(site_copy, tmp_path):
    manifest = manifest_path(site_copy, "notes", "unsafe")
    data = orjson.loads(manifest.read_bytes())
    data["manifest_version"] = 1
    manifest.write_bytes(orjson.dumps(data))
    out = tmp_path / "out.sqlite"
    result = runner.invoke(app, ["export", str(site_copy), "--out", str(out)])
    assert result.exit_code == 1 and "older version" in result.output and str(manifest) in result.output
    assert not out.exists()


def test_a_failure_halfway_leaves_no_file(site_copy, tmp_path):
    (site_copy / "notes" / "_chunks" / "unsafe-1.md").unlink()  # the last document's last chunk
    out = tmp_path / "out.sqlite"
    result = runner.invoke(app, ["export", str(site_copy), "--out", str(out)])
    assert result.exit_code == 1 and "unsafe-1.md" in result.output
    assert list(tmp_path.iterdir()) == [site_copy]


def test_bad_options_are_refused(fixture_site, tmp_path):
    for args in (["--format", "csv"], ["--record", "camel", "-f", "jsonl"], ["--record", "langchain"]):
        result = runner.invoke(app, ["export", str(fixture_site), "--out", str(tmp_path / "o"), *args])
        assert result.exit_code == 1 and "error:" in result.output, args
    assert not (tmp_path / "o").exists()


def test_the_sample_site_round_trips_by_id_text_and_vector(tmp_path):
    """The repository's own content/ (the README's sample site), built and exported."""
    from conftest import ROOT
    from pipeline.config import SiteConfig
    from pipeline.site.build import build

    site = tmp_path / "site"
    build(ROOT / "content", site, SiteConfig(embedder="hashing", cache_dir=tmp_path / "cache"), progress=False)
    connection, _ = connect(export(site, tmp_path / "sample.sqlite"))
    chunks = site_chunks(site)
    assert connection.execute("SELECT count(*) FROM document_chunks").fetchone()[0] == len(chunks) > 50
    embedder = HashingEmbedder()
    for ref, text in chunks:
        chunk_id = f"{ref.source.removesuffix('.md')}_chunk_{ref.index}"
        assert connection.execute("SELECT content FROM document_chunks WHERE chunk_id = ?", (chunk_id,)).fetchone() == (text,)
        assert chunk_id in [m.chunk_id for m in text_search(connection, text, k=20)]
        # identical texts share a vector: the chunk is among the best matches, at cosine 1
        best = nearest(connection, embedder.embed([text])[0], k=5)
        assert chunk_id in [m.chunk_id for m in best if m.score > 0.999]
