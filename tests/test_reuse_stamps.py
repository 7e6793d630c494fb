"""File stamps (pipeline/reuse/stamps.py): a rebuild trusts a file whose stamp is the one the last
build recorded, without reading it; every change a stamp can see still rebuilds what it affects.

Stamps of files changed less than ``RACY_NS`` ago are not recorded, so a test's fresh files would
all be verified by content; most tests here set ``RACY_NS`` below zero (every stamp recorded) to
exercise the trusting path, and wait a little before an edit so it lands on a later clock tick."""

import os
import shutil
import time
from pathlib import Path

import orjson
import pytest
import xxhash

import pipeline.reuse.stamps as stamps
from test_reuse_state import FILES, run, tree
from conftest import write_tree
from pipeline.reuse.state import STATE_FILE
from pipeline.site.staging import sibling
from sitecheck import built_files


def STAMPS(site: Path) -> Path:
    return sibling(site, "stamps")


@pytest.fixture
def trusting(monkeypatch):
    monkeypatch.setattr(stamps, "RACY_NS", -(10**18))


@pytest.fixture
def stamped(tmp_path, trusting):
    """A site built twice: the second build verified every file and recorded its stamp."""
    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    run(content, site, cache)
    time.sleep(0.05)  # an edit after this lands on a later tick of the filesystem's clock
    return content, site, cache


def _reads(monkeypatch) -> list[str]:
    """The paths the build opens for reading from now on (``open`` and ``Path.read_bytes``)."""
    seen: list[str] = []
    real_open = open

    def spy(file, mode="r", *a, **kw):
        if "r" in mode and isinstance(file, (str, os.PathLike)):
            seen.append(os.fspath(file))
        return real_open(file, mode, *a, **kw)

    import builtins

    monkeypatch.setattr(builtins, "open", spy)
    real_read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: (seen.append(str(self)), real_read_bytes(self))[1])
    return seen


def _edit_in_place(path: Path, data: bytes, *, keep_mtime: bool) -> None:
    """Overwrite ``path`` (same inode), optionally putting its old mtime back (``touch -r``)."""
    st = os.stat(path)
    with open(path, "r+b") as handle:
        handle.write(data)
        handle.truncate()
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_noop_rebuild_reads_no_source_chunk_file_or_cache_metadata(stamped, monkeypatch):
    content, site, cache = stamped
    before = tree(site)
    seen = _reads(monkeypatch)
    report = run(content, site, cache)
    opened = [Path(p) for p in seen]  # before the checks below read the site
    assert "0 files written, 0 removed" in report.summary()
    assert tree(site) == before
    assert not [p for p in opened if p.suffix == ".md" and "_chunks" in p.parts]  # chunk files: stamps
    assert not [p for p in opened if p.name.endswith(".manifest.json")]  # manifests: stamps and the state's summary
    documents = {content / rel for rel in FILES if "/_" not in rel and not rel.endswith("qa-pairs.md")}
    assert not [p for p in opened if p in documents or p in {site / d.relative_to(content) for d in documents}]
    assert not [p for p in opened if p.name == "metadata.json" and "questions" not in p.parts]  # cache entries: stamps


@pytest.mark.parametrize("victim", ["guide/_chunks/a-1.md", "guide/b.md", "guide/_chunks/a.manifest.json"])
def test_a_same_size_edit_with_the_mtime_put_back_is_still_seen(stamped, victim):
    """The stamp holds the ctime, which no user-space call can set back (rsync's and make's size
    and mtime would miss this edit)."""
    content, site, cache = stamped
    before = tree(site)
    path = site / victim
    old = path.read_bytes()
    edited = old.replace(b"stripe", b"STRIPE", 1) if b"stripe" in old else old.replace(b'"Alpha"', b'"ALPHA"', 1)
    assert edited != old
    _edit_in_place(path, edited, keep_mtime=True)
    assert os.stat(path).st_size == len(old)
    run(content, site, cache)
    assert tree(site) == before  # the site's copy is made right again


def test_a_same_size_source_edit_with_the_mtime_put_back_is_rebuilt(tmp_path, stamped):
    content, site, cache = stamped
    path = content / "guide/a.md"
    _edit_in_place(path, path.read_bytes().replace(b"alpha", b"omega"), keep_mtime=True)
    run(content, site, cache)
    clean = tmp_path / "clean"
    run(content, clean, tmp_path / "clean-cache")
    assert tree(site) == tree(clean)


@pytest.mark.parametrize("victim", ["guide/_chunks/a-1.md", "guide/b.md"])
def test_a_replaced_or_deleted_site_file_is_restored(stamped, victim):
    content, site, cache = stamped
    before = tree(site)
    path = site / victim
    data = path.read_bytes()
    path.unlink()
    run(content, site, cache)
    assert tree(site) == before
    time.sleep(0.05)
    tmp = path.with_name("replacement")
    tmp.write_bytes(data.replace(b"stripe", b"STRIPE", 1))
    os.utime(tmp, ns=(os.stat(path).st_atime_ns, os.stat(path).st_mtime_ns))
    os.replace(tmp, path)  # a new inode, same size and mtime
    run(content, site, cache)
    assert tree(site) == before


def test_a_cache_entry_that_lost_a_vector_file_is_refilled(stamped):
    content, site, cache = stamped
    before = tree(site)
    entry = next(p for p in cache.rglob("chunk-1.bin") if "questions" not in p.parts)
    entry.unlink()
    run(content, site, cache)
    assert entry.is_file()  # the folder's stamp changed: the entry was checked and written again
    assert tree(site) == before


def test_stamps_are_not_recorded_for_files_changed_just_before(tmp_path, monkeypatch):
    """The racy case: a file changed in the same clock tick as the stat could change again with
    every field of its stamp equal, so it is verified by content next time instead."""
    # An hour-long window: under load a build can take longer than the real 1 s, and the
    # second build must still fall within the window of the first build's writes.
    monkeypatch.setattr(stamps, "RACY_NS", 3600 * 10**9)
    content = write_tree(tmp_path / "content", FILES)
    site, cache = tmp_path / "site", tmp_path / "cache"
    run(content, site, cache)
    run(content, site, cache)
    documents = orjson.loads(STAMPS(site).read_bytes())["sections"].get("documents", {})
    assert all("files" not in entry and "source" not in entry for entry in documents.values())
    path = tmp_path / "f"
    path.write_bytes(b"x")
    st = os.stat(path)
    assert stamps.recordable(st) is None
    assert stamps.recordable(st, now_ns=max(st.st_mtime_ns, st.st_ctime_ns) + stamps.RACY_NS) == stamps.stamp_of(st)
    assert stamps.recordable(os.stat(tmp_path)) is None  # a folder too
    assert not stamps.matches(st, None) and not stamps.matches(None, stamps.stamp_of(st))
    assert not stamps.matches(st, "junk") and stamps.matches(st, stamps.stamp_of(st))


def test_what_a_stamp_trusts_without_ctime_would_be_missed(stamped, monkeypatch):
    """Why the ctime is in the stamp: with size, mtime and inode alone (make's and rsync's rule,
    here forced), a same-size edit with the mtime put back is trusted and stays in the site."""
    content, site, cache = stamped
    real = stamps.stamp_of
    monkeypatch.setattr(stamps, "stamp_of", lambda st: real(st)[:2] + real(st)[3:])
    run(content, site, cache)  # records the weaker stamps
    time.sleep(0.05)
    path = site / "guide/_chunks/a-1.md"
    edited = path.read_bytes().replace(b"stripe", b"STRIPE", 1)
    _edit_in_place(path, edited, keep_mtime=True)
    run(content, site, cache)
    assert path.read_bytes() == edited  # not seen: the edit survives the rebuild


def test_bad_stamps_in_the_state_only_cost_a_verification(tmp_path, stamped):
    content, site, cache = stamped
    before = tree(site)
    state = STAMPS(site)
    data = orjson.loads(state.read_bytes())
    for section in ("documents", "sources", "vectors"):
        for entry in data["sections"][section].values():
            for name in ("files", "source", "copy", "folder", "meta"):
                if name in entry:
                    entry[name] = [[1, 2, 3, 4]] if name == "files" else [0, 0, 0, 0]
    state.write_bytes(orjson.dumps(data))
    path = site / "guide/_chunks/a-1.md"
    _edit_in_place(path, path.read_bytes().replace(b"stripe", b"STRIPE", 1), keep_mtime=True)
    run(content, site, cache)
    assert tree(site) == before
    shutil.rmtree(tmp_path / "content" / "guide" / "deep")
    run(content, site, cache)
    clean = tmp_path / "clean"
    run(content, clean, tmp_path / "clean-cache")
    assert tree(site) == tree(clean)


def test_stamps_stay_out_of_the_site_which_is_the_same_for_the_same_inputs(tmp_path, trusting):
    """Stamps hold inodes and times: they live beside the site, so two sites built from the
    same content are the same bytes, state file included; a stale or foreign stamps file only
    ever attaches to the entries it was recorded with."""
    content = write_tree(tmp_path / "content", FILES)
    sites = [tmp_path / "one", tmp_path / "two"]
    for site in sites:
        run(content, site, tmp_path / "cache")
        run(content, site, tmp_path / "cache")
        assert b"stamps" not in (site / STATE_FILE).read_bytes() and STAMPS(site).is_file()
    assert built_files(sites[0]) == built_files(sites[1])
    assert orjson.loads(STAMPS(sites[0]).read_bytes())["sections"]["documents"]
    # one site's stamps beside the other: none matches its files, which are verified and rebuilt right
    shutil.copy(STAMPS(sites[0]), STAMPS(sites[1]))
    before = tree(sites[1])
    path = sites[1] / "guide/_chunks/a-1.md"
    time.sleep(0.05)
    _edit_in_place(path, path.read_bytes().replace(b"stripe", b"STRIPE", 1), keep_mtime=True)
    run(content, sites[1], tmp_path / "cache")
    assert tree(sites[1]) == before


def test_a_topic_with_unread_manifests_is_rendered_right_when_one_document_changes(tmp_path, stamped):
    """The other documents' manifests were not read (stubs): rendering the topic reads them."""
    content, site, cache = stamped
    path = content / "guide/b.md"
    path.write_bytes(path.read_bytes() + b"\nOne more stripe order line about the beta cache.\n")
    run(content, site, cache)
    clean = tmp_path / "clean"
    run(content, clean, tmp_path / "clean-cache")
    assert tree(site) == tree(clean)


def test_verify_trusts_a_recorded_stamp_unread_and_checks_anything_else_by_content(tmp_path, monkeypatch):
    path = tmp_path / "chunk.md"
    path.write_bytes(b"chunk text")
    expected = xxhash.xxh64_hexdigest(b"chunk text")
    assert stamps.verify(path, None, expected) == (True, None)  # checked by content; written just now: no stamp yet
    later = time.time_ns() + 10 * stamps.RACY_NS
    monkeypatch.setattr(stamps.time, "time_ns", lambda: later)
    intact, stamp = stamps.verify(path, None, expected)
    assert intact and stamp == stamps.stamp_of(os.stat(path))
    reads = []

    def counting(name):
        reads.append(name)
        return expected

    assert stamps.verify(path, stamp, "another hash", digest=counting) == (True, stamp)  # trusted unread
    assert reads == []
    assert stamps.verify(path, [0, 0, 0, 0], "another hash", digest=counting) == (False, None)
    assert reads == [os.fspath(path)]
    assert stamps.verify(path, None, "0" * 16) == (False, None)
    assert stamps.verify(tmp_path / "missing.md", stamp, expected) == (False, None)


def test_verify_all_gives_each_files_stamp_in_order_or_none_when_one_changed(tmp_path, monkeypatch):
    paths = [tmp_path / f"page-{i}.bin" for i in range(3)]
    for i, path in enumerate(paths):
        path.write_bytes(b"page %d" % i)
    hashes = [xxhash.xxh64_hexdigest(p.read_bytes()) for p in paths]
    later = time.time_ns() + 10 * stamps.RACY_NS
    monkeypatch.setattr(stamps.time, "time_ns", lambda: later)
    fresh = stamps.verify_all(paths, hashes)
    assert fresh == [stamps.stamp_of(os.stat(p)) for p in paths]
    assert stamps.verify_all(paths, hashes, fresh[:1]) == fresh  # fewer stamps recorded: the rest by content
    assert stamps.verify_all(paths, hashes, "not a list") == fresh
    assert stamps.verify_all(paths, hashes[:2] + ["0" * 16]) is None
    paths[1].unlink()
    assert stamps.verify_all(paths, hashes, fresh) is None
    assert stamps.verify_all([], []) == []


def test_write_stamps_a_file_it_left_as_it_was_and_not_one_it_wrote(tmp_path, monkeypatch):
    path = tmp_path / "index.json"
    assert stamps.write(path, b"one") == (True, None)  # written now: the next build verifies it by content
    later = time.time_ns() + 10 * stamps.RACY_NS
    monkeypatch.setattr(stamps.time, "time_ns", lambda: later)
    before = os.stat(path)
    assert stamps.write(path, b"one") == (False, stamps.stamp_of(before))
    assert stamps.write(path, b"one", before) == (False, stamps.stamp_of(before))
    assert stamps.write(path, b"two") == (True, None)
    assert path.read_bytes() == b"two"
