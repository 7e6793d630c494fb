"""Executors: the blocks both executors encode (planned by model tokens, longest first), the local
executor, and a build's encoding in the background: its vectors, its errors, its cancellation,
and the cache entries it writes as blocks arrive. The Ray executor: test_embedding_ray_executor.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import write_tree
from pipeline.embedding.executor import LocalExecutor, assemble, make_executor, plan_blocks, text_lengths
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from test_build import FILES



@given(st.lists(st.integers(min_value=0, max_value=20), max_size=60), st.integers(min_value=1, max_value=9))
@settings(max_examples=200, deadline=None)
def test_plan_blocks_covers_every_text_once_longest_first(lengths, size):
    blocks = plan_blocks(lengths, size)
    flat = [i for block in blocks for i in block]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(1 <= len(block) <= size for block in blocks)
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    # ties keep input order, so the plan (and a block's vectors) depend on nothing else
    assert all(flat[k] < flat[k + 1] for k in range(len(flat) - 1) if lengths[flat[k]] == lengths[flat[k + 1]])


def test_blocks_are_planned_by_model_tokens_not_characters():
    # The characters of code and prose predict the model's tokens badly: a batch of texts
    # sorted by characters padded 9 % more tokens than the same texts sorted by tokens.
    embedder = HashingEmbedder()
    texts = ["x" * 40, "internationalization " * 2, "a b c d e f g h i j k l m n o p"]
    tokens = embedder.counter().count_many(texts)
    assert text_lengths(embedder, texts) == tokens
    assert tokens[2] > tokens[1] and len(texts[2]) < len(texts[1])  # the example holds
    assert plan_blocks(text_lengths(embedder, texts), 1)[0] == [max(range(3), key=tokens.__getitem__)]


def test_local_executor_returns_rows_in_input_order():
    texts = [f"text {'word ' * (i % 7)} number {i}" for i in range(600)]  # several blocks
    embedder = HashingEmbedder()
    vectors = LocalExecutor().embed(embedder, texts)
    assert np.array_equal(vectors, HashingEmbedder().embed(texts))
    assert embedder.calls == len(texts)


def test_assemble_refuses_a_short_block():
    with pytest.raises(PipelineError, match="returned 1 vectors for 2 texts"):
        assemble([[0, 1]], [np.zeros((1, 3), dtype=np.float32)], 2)


def test_unknown_executor_and_bad_worker_count_are_errors():
    with pytest.raises(PipelineError, match="unknown executor 'spark'"):
        make_executor("spark", "hashing")
    with pytest.raises(PipelineError, match="at least 1"):
        make_executor("ray", "hashing", workers=0)


class _Gated(HashingEmbedder):
    """A hashing embedder whose calls can be held, counted and made to fail."""

    def __init__(self, fail_at: int | None = None):
        super().__init__()
        import threading

        self.blocks = 0  # embed calls (HashingEmbedder.calls counts texts)
        self.threads: set[str] = set()
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # set by the first call, before it waits at the gate
        self.fail_at = fail_at

    def embed(self, texts, **options):
        import threading

        self.threads.add(threading.current_thread().name)
        self.entered.set()
        self.gate.wait()
        self.blocks += 1
        if self.blocks == self.fail_at:
            raise RuntimeError("the model broke")
        return super().embed(texts, **options)


def test_a_background_encoding_gives_the_foreground_vectors_bit_for_bit():
    from pipeline.embedding.executor import Encoding

    texts = [f"text number {i} " * (i % 7 + 1) for i in range(150)]
    embedder = _Gated()
    vectors = Encoding(LocalExecutor(block_size=16), embedder, texts).result()
    assert "pipeline-encode" in embedder.threads
    assert vectors.tobytes() == LocalExecutor(block_size=16).embed(HashingEmbedder(), texts).tobytes()


def test_a_background_encodings_error_is_raised_by_result():
    from pipeline.embedding.executor import Encoding

    encoding = Encoding(LocalExecutor(block_size=4), _Gated(fail_at=2), [f"t{i}" for i in range(20)])
    with pytest.raises(RuntimeError, match="the model broke"):
        encoding.result()


def test_a_cancelled_encoding_stops_after_the_block_it_is_in():
    from pipeline.embedding.executor import Encoding

    embedder = _Gated()
    embedder.gate.clear()  # the first block waits inside embed
    encoding = Encoding(LocalExecutor(block_size=4), embedder, [f"t{i}" for i in range(40)])
    import threading

    # cancelled while the first block is inside embed (the blocks are planned first, by tokens)
    assert embedder.entered.wait(10)
    threading.Timer(0.2, embedder.gate.set).start()
    encoding.cancel()  # returns once the thread has ended
    assert embedder.blocks == 1  # of 10 blocks


def test_a_build_that_fails_while_encoding_stops_the_encoding_and_keeps_the_site(tmp_path, monkeypatch):
    import threading

    import pipeline.site.build as build_mod
    from pipeline.config import SiteConfig
    from pipeline.site.build import build

    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    cfg = SiteConfig(cache_dir=tmp_path / "cache")
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    write_tree(content, {f"more/doc{i}.md": f"# Doc {i}\n\nWords about thing {i}.\n" for i in range(200)})

    embedder = _Gated()
    embedder.gate.clear()  # the encoding's first block waits until the chunk writing has failed

    def failing_write_chunks(*args, **kwargs):
        # fails while the first block is inside embed: the encoding has started (a failure
        # before its first block stops it before any, which proves less)
        assert embedder.entered.wait(10)
        threading.Timer(0.2, embedder.gate.set).start()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(build_mod, "write_chunks", failing_write_chunks)
    with pytest.raises(OSError, match="No space"):
        build(content, site, cfg, embedder=embedder, progress=False)
    assert embedder.threads == {"pipeline-encode"} and embedder.blocks == 1  # of 4 blocks: stopped, not left running
    assert {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


def test_a_cache_that_cannot_be_written_fails_the_build_and_keeps_the_site(tmp_path, monkeypatch):
    """The cache entries are written by a background thread while the topic pages render: its
    error still fails the build before anything is published."""
    from pipeline.config import SiteConfig
    from pipeline.embedding.cache import EmbeddingCache
    from pipeline.site.build import build

    content = write_tree(tmp_path / "content", FILES)
    site = tmp_path / "site"
    cfg = SiteConfig(cache_dir=tmp_path / "cache")
    build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    write_tree(content, {"more/new.md": "# New\n\nA new document about things.\n"})

    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(EmbeddingCache, "store", full)
    with pytest.raises(OSError, match="No space"):
        build(content, site, cfg, embedder=HashingEmbedder(), progress=False)
    assert {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


def test_run_spec_returns_with_every_cache_entry_written(tmp_path):
    from pipeline.chunking.tool import plan_chunks, write_chunks
    from pipeline.config import SiteConfig
    from pipeline.embedding.cache import EmbeddingCache
    from pipeline.topicspec.topicspec import run_spec

    site = write_tree(tmp_path / "site", FILES)
    cfg = SiteConfig(cache_dir=tmp_path / "cache")
    embedder = HashingEmbedder()
    plans = plan_chunks(site, cfg, embedder.counter())
    write_chunks(site, plans)
    report = run_spec(site, cfg, embedder, progress=False)
    assert report.embedded > 0
    for plan in plans:
        cache = EmbeddingCache(cfg.cache_dir, plan.strategy_key, embedder.name)
        hashes = [c["content_xxh64"] for c in plan.manifest()["chunks"]]
        assert cache.entry_digest(plan.doc.rel, plan.source_sha256[:16], hashes) is not None


def test_a_documents_cache_entry_is_written_while_the_rest_still_encodes(tmp_path):
    """A document whose vectors have all arrived is stored at once, not after the last block:
    while the block of another document's chunk is held, the first one's entry is in the cache."""
    import threading
    import time

    from pipeline.chunking.tool import plan_chunks, write_chunks
    from pipeline.config import SiteConfig
    from pipeline.embedding.cache import EmbeddingCache
    from pipeline.topicspec.topicspec import gather_topics

    long_doc = "# Long\n\n" + " ".join(f"word{i}" for i in range(60)) + ".\n"
    site = write_tree(tmp_path / "site", {"t/long.md": long_doc, "t/short.md": "# S\n\nTiny.\n"})
    cfg = SiteConfig(cache_dir=tmp_path / "cache")
    embedder = _Gated()
    plans = plan_chunks(site, cfg, embedder.counter())
    write_chunks(site, plans)
    held = threading.Event()
    release = threading.Event()
    inner = embedder.embed

    def embed(texts, **options):
        if any("Tiny" in t for t in texts):  # the shortest text: the last block
            held.set()
            release.wait(30)
        return inner(texts, **options)

    embedder.embed = embed
    gathered = gather_topics(site, cfg, embedder, executor=LocalExecutor(block_size=1), progress=False)
    try:
        assert held.wait(30)
        entry = {p.doc.rel: (p.source_sha256[:16], [c["content_xxh64"] for c in p.manifest()["chunks"]]) for p in plans}
        # a fresh instance per look: one reads an entry's metadata once
        stored = lambda rel: EmbeddingCache(cfg.cache_dir, plans[0].strategy_key, embedder.name).entry_digest(rel, *entry[rel])  # noqa: E731
        for _ in range(300):  # the writing thread's turn (at most ~30 s)
            if stored("t/long.md") is not None:
                break
            time.sleep(0.1)
        assert stored("t/long.md") is not None
        assert stored("t/short.md") is None  # its block is held
    finally:
        release.set()
    gathered.finish()
    gathered.wait_written()
    assert stored("t/long.md") is not None and stored("t/short.md") is not None
