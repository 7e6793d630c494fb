import numpy as np
import orjson

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


def test_an_entry_without_a_vector_digest_is_written_again_once(tmp_path):
    hashes = [content_hash("a")]
    EmbeddingCache(tmp_path, "s", "m").store("d.md", "aaaa", hashes, [vec(1, 0)])
    meta_path = tmp_path / "s" / "m" / "aaaa" / "metadata.json"
    meta = orjson.loads(meta_path.read_bytes())
    del meta["vectors_xxh64"]
    meta_path.write_bytes(orjson.dumps(meta))
    old = EmbeddingCache(tmp_path, "s", "m")
    assert old.entry_digest("d.md", "aaaa", hashes) is None  # falls back to lookup
    assert old.lookup("d.md", "aaaa", hashes)[0] is not None
    old.store("d.md", "aaaa", hashes, old.lookup("d.md", "aaaa", hashes))
    assert orjson.loads(meta_path.read_bytes())["vectors_xxh64"] == vectors_digest([vec(1, 0)])
