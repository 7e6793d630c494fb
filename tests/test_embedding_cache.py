import shutil
import warnings as _warnings

import numpy as np
import orjson
import pytest

from pipeline.embedding.cache import USED_FILE, EmbeddingCache, content_hash, read_used, record_use, today, vectors_digest


def vec(*values):
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_miss_then_hit_with_the_seed_layout(tmp_path):
    cache = EmbeddingCache(tmp_path, "markdown-256", "all-MiniLM-L6-v2")
    hashes = [content_hash("a"), content_hash("b")]
    assert cache.lookup("doc.md", "0123456789abcdef", hashes) == [None, None]
    cache.store("doc.md", "0123456789abcdef", hashes, [vec(1, 0), vec(0, 1)])
    cache.save()
    folder = tmp_path / "markdown-256" / "all-MiniLM-L6-v2" / "0123456789abcdef"
    assert sorted(p.name for p in folder.iterdir()) == ["chunk-0.bin", "chunk-1.bin", "metadata.json"]
    meta = orjson.loads((folder / "metadata.json").read_bytes())
    assert meta["model"] == "all-MiniLM-L6-v2" and meta["strategy"] == "markdown-256" and meta["chunk_count"] == 2

    again = EmbeddingCache(tmp_path, "markdown-256", "all-MiniLM-L6-v2")
    found = again.lookup("doc.md", "0123456789abcdef", hashes)
    assert np.allclose(found[1], vec(0, 1)) and again.stats.hits == 2 and again.stats.misses == 0


def test_other_model_or_strategy_misses(tmp_path):
    hashes = [content_hash("a")]
    EmbeddingCache(tmp_path, "markdown-256", "m1").store("d.md", "aaaa", hashes, [vec(1, 0)])
    assert EmbeddingCache(tmp_path, "markdown-256", "m2").lookup("d.md", "aaaa", hashes) == [None]
    assert EmbeddingCache(tmp_path, "tokens-256", "m1").lookup("d.md", "aaaa", hashes) == [None]


def test_chunk_count_mismatch_invalidates_the_entry(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    cache.store("d.md", "aaaa", [content_hash("a"), content_hash("b")], [vec(1, 0), vec(0, 1)])
    meta_path = tmp_path / "s" / "m" / "aaaa" / "metadata.json"
    meta = orjson.loads(meta_path.read_bytes())
    meta["chunk_count"] = 3
    meta_path.write_bytes(orjson.dumps(meta))
    fresh = EmbeddingCache(tmp_path, "s", "m")
    with pytest.warns(UserWarning, match="corrupt"):
        assert fresh._load_entry("aaaa") is None


def test_edited_document_reuses_unchanged_chunks_by_content_hash(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    old = [content_hash("intro"), content_hash("setup"), content_hash("usage")]
    cache.store("d.md", "old0", old, [vec(1, 0), vec(0, 1), vec(1, 1)])
    cache.save()
    cache = EmbeddingCache(tmp_path, "s", "m")
    new = [content_hash("intro"), content_hash("setup, edited"), content_hash("usage")]
    found = cache.lookup("d.md", "new0", new)
    assert [v is None for v in found] == [False, True, False]
    assert cache.stats.misses == 1


def test_save_records_the_day_of_use_and_writes_nothing_when_it_is_unchanged(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    cache.store("a.md", "aaaa", [content_hash("a")], [vec(1, 0)])
    cache.store("b.md", "bbbb", [content_hash("b")], [vec(0, 1)])
    cache.save()
    used_path = tmp_path / "s" / "m" / USED_FILE
    assert read_used(tmp_path / "s" / "m") == {"aaaa": today(), "bbbb": today()}
    stamp = used_path.stat().st_mtime_ns
    again = EmbeddingCache(tmp_path, "s", "m")  # a no-op rebuild: whole hits, nothing new
    assert again.entry_digest("a.md", "aaaa", [content_hash("a")]) is not None
    again.save()
    assert used_path.stat().st_mtime_ns == stamp
    assert record_use(tmp_path / "s" / "m", {"aaaa"}, day="2030-01-01") is True
    assert read_used(tmp_path / "s" / "m") == {"aaaa": "2030-01-01", "bbbb": today()}


def test_entries_a_build_did_not_use_stay(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    cache.store("a.md", "aaaa", [content_hash("a")], [vec(1, 0)])
    cache.save()
    other = EmbeddingCache(tmp_path, "s", "m")
    other.store("b.md", "bbbb", [content_hash("b")], [vec(0, 1)])
    other.save()
    assert (tmp_path / "s" / "m" / "aaaa" / "metadata.json").is_file()
    assert orjson.loads((tmp_path / "s" / "m" / "index.json").read_bytes()) == {"a.md": "aaaa", "b.md": "bbbb"}


def test_entry_digest_confirms_a_whole_hit_without_reading_vectors(tmp_path):
    hashes = [content_hash("a"), content_hash("b")]
    vectors = [vec(1, 0), vec(0, 1)]
    EmbeddingCache(tmp_path, "s", "m").store("d.md", "aaaa", hashes, vectors)
    cache = EmbeddingCache(tmp_path, "s", "m")
    assert cache.entry_digest("d.md", "aaaa", hashes) == vectors_digest(vectors)
    assert cache.stats.hits == 2 and cache._entries == {}  # no vector read
    assert all(np.array_equal(a, b) for a, b in zip(cache.entry_vectors("aaaa"), vectors))
    assert cache.entry_digest("d.md", "aaaa", hashes[:1]) is None  # other chunks
    assert EmbeddingCache(tmp_path, "s", "other-model").entry_digest("d.md", "aaaa", hashes) is None
    (tmp_path / "s" / "m" / "aaaa" / "chunk-1.bin").write_bytes(b"\0" * 3)  # truncated vector
    assert EmbeddingCache(tmp_path, "s", "m").entry_digest("d.md", "aaaa", hashes) is None


def _strip_digest(folder, zero=False):
    """Make the entry at ``folder`` one of an older version: no ``vectors_xxh64``; with ``zero``,
    its vectors zeroed too (same sizes: damage nothing else could tell)."""
    meta = orjson.loads((folder / "metadata.json").read_bytes())
    del meta["vectors_xxh64"]
    (folder / "metadata.json").write_bytes(orjson.dumps(meta))
    if zero:
        for chunk in folder.glob("chunk-*.bin"):
            chunk.write_bytes(b"\0" * chunk.stat().st_size)


def test_an_entry_without_a_vector_digest_is_untrusted_recomputed_and_written_whole(tmp_path):
    hashes = [content_hash("a"), content_hash("b")]
    EmbeddingCache(tmp_path, "s", "m").store("d.md", "aaaa", hashes, [vec(1, 0), vec(0, 1)])
    folder = tmp_path / "s" / "m" / "aaaa"
    _strip_digest(folder, zero=True)
    old = EmbeddingCache(tmp_path, "s", "m")
    with pytest.warns(UserWarning, match="no digest of its vectors .*recomputing it"):
        assert old.entry_digest("d.md", "aaaa", hashes) is None
        found = old.lookup("d.md", "aaaa", hashes)
    assert found == [None, None]  # a miss: neither the whole entry nor its chunks are reused
    assert old.stats.misses == 2 and old.stats.hits == 0
    old.store("d.md", "aaaa", hashes, [vec(1, 0), vec(0, 1)])  # what the model computed again
    meta = orjson.loads((folder / "metadata.json").read_bytes())
    assert meta["vectors_xxh64"] == vectors_digest([vec(1, 0), vec(0, 1)])
    again = EmbeddingCache(tmp_path, "s", "m")
    assert again.entry_digest("d.md", "aaaa", hashes) == meta["vectors_xxh64"]
    assert np.allclose(again.lookup("d.md", "aaaa", hashes)[1], vec(0, 1))


def test_a_chunk_of_an_entry_without_a_digest_is_not_reused_by_content_hash(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    cache.store("d.md", "aaaa", [content_hash("a")], [vec(1, 0)])
    _strip_digest(tmp_path / "s" / "m" / "aaaa", zero=True)
    with pytest.warns(UserWarning, match="no digest"):
        assert EmbeddingCache(tmp_path, "s", "m").lookup("e.md", "bbbb", [content_hash("a")]) == [None]


def test_legacy_entries_are_announced_once_per_cache(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    for name, text in (("aaaa", "a"), ("bbbb", "b")):
        cache.store(f"{name}.md", name, [content_hash(text)], [vec(1, 0)])
        _strip_digest(tmp_path / "s" / "m" / name)
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        old = EmbeddingCache(tmp_path, "s", "m")
        old.lookup("a.md", "aaaa", [content_hash("a")])
        old.lookup("b.md", "bbbb", [content_hash("b")])
    assert sum("no digest" in str(w.message) for w in caught) == 1


@pytest.mark.parametrize("damage", ["entry is a file", "chunk is a folder"])
def test_an_entry_of_the_wrong_kind_is_a_miss_with_a_warning_and_is_replaced(tmp_path, damage):
    folder = _stored(tmp_path)
    if damage == "entry is a file":
        shutil.rmtree(folder)
        folder.write_bytes(b"not a folder")
    else:
        (folder / "chunk-0.bin").unlink()
        (folder / "chunk-0.bin").mkdir()
    hashes = [content_hash("a"), content_hash("b")]
    cache = EmbeddingCache(tmp_path, "s", "m")
    with pytest.warns(UserWarning, match="corrupt .*(is a file, not a folder|chunk-0.bin is not a file)"):
        assert cache.entry_digest("d.md", "aaaa", hashes) is None
        assert cache.lookup("d.md", "aaaa", hashes) == [None, None]
    cache.store("d.md", "aaaa", hashes, [vec(1, 0), vec(0, 1)])
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        assert np.allclose(EmbeddingCache(tmp_path, "s", "m").lookup("d.md", "aaaa", hashes)[0], vec(1, 0))


# -- corrupt entries: detected, warned about, recomputed (issue 15) ----------------------------

import warnings as _warnings

import pytest


def _stored(tmp_path):
    cache = EmbeddingCache(tmp_path, "s", "m")
    cache.store("d.md", "aaaa", [content_hash("a"), content_hash("b")], [vec(1, 0), vec(0, 1)])
    cache.save()
    return tmp_path / "s" / "m" / "aaaa"


def _flip_bit(path, byte=3, bit=6):
    data = bytearray(path.read_bytes())
    data[byte] ^= 1 << bit  # an exponent bit of the first float: same size, absurd value
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [
        lambda f: _flip_bit(f / "chunk-1.bin"),
        lambda f: (f / "chunk-0.bin").write_bytes(np.array([np.nan, 0], dtype="<f4").tobytes()),
        lambda f: (f / "metadata.json").write_bytes(b"[1, 2]"),
        lambda f: (f / "metadata.json").write_bytes(b'{"model": "m"'),
        lambda f: (f / "metadata.json").write_bytes(
            orjson.dumps({**orjson.loads((f / "metadata.json").read_bytes()), "dimension": "2"})
        ),
        lambda f: (f / "metadata.json").write_bytes(
            orjson.dumps({**orjson.loads((f / "metadata.json").read_bytes()), "chunk_hashes": [1, 2]})
        ),
    ],
)
def test_a_corrupt_entry_is_a_miss_with_a_warning(tmp_path, damage):
    folder = _stored(tmp_path)
    damage(folder)
    if (folder / "chunk-0.bin").read_bytes().startswith(np.array([np.nan], dtype="<f4").tobytes()):
        # NaN with a matching digest: only the finiteness check can catch it
        meta = orjson.loads((folder / "metadata.json").read_bytes())
        vectors = [np.frombuffer((folder / f"chunk-{i}.bin").read_bytes(), dtype="<f4") for i in range(2)]
        meta["vectors_xxh64"] = vectors_digest(vectors)
        (folder / "metadata.json").write_bytes(orjson.dumps(meta))
    cache = EmbeddingCache(tmp_path, "s", "m")
    with pytest.warns(UserWarning, match="corrupt"):
        found = cache.lookup("d.md", "aaaa", [content_hash("a"), content_hash("b")])
    assert found == [None, None]
    cache.store("d.md", "aaaa", [content_hash("a"), content_hash("b")], [vec(1, 0), vec(0, 1)])
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")  # healed: read again without a warning
        again = EmbeddingCache(tmp_path, "s", "m").lookup("d.md", "aaaa", [content_hash("a"), content_hash("b")])
    assert np.allclose(again[1], vec(0, 1))


@pytest.mark.parametrize("index", [b"[]", b'["x"]', b'{"d.md": 5}', b"7", b"{"])
def test_an_index_of_the_wrong_type_is_rebuilt(tmp_path, index):
    folder = _stored(tmp_path)
    (folder.parent / "index.json").write_bytes(index)
    with pytest.warns(UserWarning, match="corrupt"):
        cache = EmbeddingCache(tmp_path, "s", "m")
    assert cache.index == {}
    cache.keep("d.md", "aaaa")
    cache.save()
    assert orjson.loads((folder.parent / "index.json").read_bytes()) == {"d.md": "aaaa"}


def test_an_index_that_is_a_folder_is_an_error_before_any_work_not_a_promise_to_rebuild(tmp_path):
    folder = _stored(tmp_path)
    (folder.parent / "index.json").unlink()
    (folder.parent / "index.json").mkdir()
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")  # no "rebuilding it": a folder cannot be replaced by the index
        with pytest.raises(IsADirectoryError, match="index.json"):
            EmbeddingCache(tmp_path, "s", "m")


def test_a_flipped_bit_in_the_cache_is_never_published_and_heals(tmp_path):
    from test_build import make_site

    from pipeline.site.build import build
    from pipeline.reuse.state import STATE_FILE

    content, site, embedder, _, cfg = make_site(tmp_path)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    bins = sorted((tmp_path / "cache").rglob("chunk-1.bin"))
    assert bins
    for path in bins:
        _flip_bit(path)
    (site / STATE_FILE).unlink()  # the topics are recomputed, so the vectors are read
    with pytest.warns(UserWarning, match="do not match the digest"):
        build(content, site, cfg, embedder=embedder, progress=False)
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    assert after == before  # the corrupt vectors changed nothing that was published
    (site / STATE_FILE).unlink()
    with _warnings.catch_warnings():
        _warnings.simplefilter("error", UserWarning)  # the cache healed: no second warning
        build(content, site, cfg, embedder=embedder, progress=False)


def test_a_corrupt_entry_found_only_when_publishing_is_healed_too(tmp_path):
    """The topic is unchanged (its spec is reused, vectors unread) but its _embeddings.bin must be
    written again: publish reads the corrupt entry, embeds those chunks again, same bytes."""
    from test_build import make_site

    from pipeline.site.build import build

    content, site, embedder, _, cfg = make_site(tmp_path)
    victim = site / "guide" / "basics" / "_embeddings.bin"
    before = victim.read_bytes()
    for path in sorted((tmp_path / "cache").rglob("chunk-1.bin")):
        _flip_bit(path)
    victim.unlink()
    with pytest.warns(UserWarning, match="do not match the digest"):
        build(content, site, cfg, embedder=embedder, progress=False)
    assert victim.read_bytes() == before


@pytest.mark.parametrize("state", ["kept", "dropped"])
def test_legacy_entries_with_zeroed_vectors_are_never_published_and_never_stamped(tmp_path, state):
    """An old cache (no ``vectors_xxh64``) whose vectors were zeroed, same sizes (issue 35.2): a
    build recomputes them, publishes what a fresh cache gives and writes the digest of the
    recomputed vectors, so the next build trusts good vectors only."""
    from test_build import make_site

    from pipeline.site.build import build
    from pipeline.reuse.state import STATE_FILE

    content, site, embedder, _, cfg = make_site(tmp_path)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    entries = sorted(p.parent for p in (tmp_path / "cache").rglob("metadata.json"))
    digests = {e: orjson.loads((e / "metadata.json").read_bytes())["vectors_xxh64"] for e in entries}
    for entry in entries:
        _strip_digest(entry, zero=True)
    if state == "dropped":
        (site / STATE_FILE).unlink()
    with pytest.warns(UserWarning, match="no digest of its vectors"):
        build(content, site, cfg, embedder=embedder, progress=False)
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    assert after == before  # the zeroed vectors changed nothing that was published
    for entry in entries:  # stamped with the digest of the recomputed vectors, not of the zeros
        assert orjson.loads((entry / "metadata.json").read_bytes())["vectors_xxh64"] == digests[entry]
    with _warnings.catch_warnings():
        _warnings.simplefilter("error", UserWarning)
        build(content, site, cfg, embedder=embedder, progress=False)


@pytest.mark.parametrize("damage", ["entry is a file", "chunk is a folder"])
def test_a_build_over_an_entry_of_the_wrong_kind_warns_and_publishes_the_same_site(tmp_path, damage):
    from test_build import make_site

    from pipeline.site.build import build
    from pipeline.reuse.state import STATE_FILE

    content, site, embedder, _, cfg = make_site(tmp_path)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    for entry in sorted(p.parent for p in (tmp_path / "cache").rglob("metadata.json")):
        if damage == "entry is a file":
            shutil.rmtree(entry)
            entry.write_bytes(b"x")
        else:
            (entry / "chunk-0.bin").unlink()
            (entry / "chunk-0.bin").mkdir()
    (site / STATE_FILE).unlink()
    with pytest.warns(UserWarning, match="embedding cache entry .* is corrupt"):
        build(content, site, cfg, embedder=embedder, progress=False)
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file() and p.name != STATE_FILE}
    assert after == before


def test_a_vector_that_is_not_finite_is_refused_and_nothing_is_stored(tmp_path):
    from pipeline.errors import PipelineError

    cache = EmbeddingCache(tmp_path, "markdown-256", "all-MiniLM-L6-v2")
    with pytest.raises(PipelineError, match="not finite"):
        cache.store("d.md", "aaaa", ["h1", "h2"], [vec(1, 0), np.array([np.nan, 0.0], dtype=np.float32)])
    assert all(v is None for v in cache.lookup("d.md", "aaaa", ["h1", "h2"])) and not any(tmp_path.iterdir())
