"""Step 2 of a build: mirror CONTENT's files into SITE (``sync_sources``), keeping what the
stages generated there and removing what CONTENT lost.

Job: which files of CONTENT a site holds, copied only when changed (stamps recorded in the build
state), and which of SITE's files no stage and no source accounts for any more. ``spec_input``
names the files the spec stage reads to start its encoding (a first build copies them first).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path
from typing import Callable, Mapping

from pipeline.errors import PipelineError
from pipeline.fsutil import LinkRefused, Vanished, read_below, write_bytes_atomic
from pipeline.reuse import stamps
from pipeline.reuse.state import BuildState, output_hash
from pipeline.site.llms import LLMS_FILES, LLMS_FULL_TXT, SITEMAP_PAGE
from pipeline.site.llmspages import LLMS_DIR
from pipeline.site.publish import ASSETS_DIR, EMBEDDINGS_FILE, INDEX_HTML
from pipeline.site.staging import SITE_MARKER
from pipeline.siteformat.indexnames import INDEX_DIR
from pipeline.siteformat.schemas import SCHEMA_DIR
from pipeline.siteformat.searchlayout import SEARCH_DIR
from pipeline.siteformat.tree import CHUNKS_DIR, INDEX_FILE, KEYWORDS_FILE, QUESTIONS_FILE, TOPIC_SPEC_FILE, usable
from pipeline.sources.confine import warn_link
from pipeline.sources.exclude import Exclude
from pipeline.topicspec.keywords import is_generated
from pipeline.topicspec.specfile import SPEC_DIR

# Written by stages into the site; never copied from content, never removed by sync.
GENERATED_NAMES = {INDEX_FILE, TOPIC_SPEC_FILE, SITE_MARKER, EMBEDDINGS_FILE, LLMS_FULL_TXT}
GENERATED_DIRS = {CHUNKS_DIR, INDEX_DIR, SPEC_DIR, LLMS_DIR}
ROOT_GENERATED = {ASSETS_DIR, SCHEMA_DIR, INDEX_HTML, SEARCH_DIR, *LLMS_FILES}  # browser client, schemas, search index, llms.txt


def _root_generated(name: str) -> bool:
    """Whether the root's entry ``name`` is written by a stage (``ROOT_GENERATED``, a sitemap index's pages)."""
    return name in ROOT_GENERATED or SITEMAP_PAGE.fullmatch(name) is not None


def sync_sources(
    content: Path, site: Path, exclude: Exclude | None = None, *, state: BuildState | None = None,
    only: Callable[[str], bool] | None = None, documents: Mapping[str, str] | None = None,
) -> tuple[int, list[str]]:
    """Mirror CONTENT's files into SITE (unchanged files untouched); remove what CONTENT lost.
    What ``exclude`` names (the config's ``exclude`` globs) is not copied, as if CONTENT lacked it.

    With ``only`` (a predicate on relative POSIX paths), just the files it accepts are copied
    and nothing is removed (for a SITE with nothing to remove: a first build's), but every
    folder the whole sync would fill is made: SITE then has the folders of a whole sync, and a
    whole sync after it copies the rest (a first build copies the spec stage's inputs first, so
    its encoding starts before the sources are copied).

    Generated files (index.json, topic-spec.md, llms-full.txt, ``_chunks/``, ``_index/``, ``_spec/``, ``_llms/``) are kept
    while the directory holding them still exists in CONTENT; their stages keep them current.

    With ``state`` (a build), a file whose stamp and whose copy's stamp are the ones the state
    recorded (state section ``sources``, ``reuse/stamps.py``) is neither read nor compared.

    Every file is read without following a link (``fsutil.read_below``): a link is skipped with
    a warning, even one swapped in after the walk listed a regular file. ``documents`` (relative
    path -> xxh64 of the bytes the chunking stage read, a build's plans) makes the copy of each
    document the one its chunks were made from: a document that changed, vanished or became a
    link since it was chunked is a PipelineError (build again), never a site whose copy and
    chunks disagree.
    """
    written = 0
    copied: set[str] = set()  # the files copied (or found current) as regular files
    # Relative POSIX paths as strings ("" is the root), not Paths: a rebuild walks every file of
    # CONTENT and of SITE here, and a Path per file cost more than the walk.
    wanted: set[str] = {""}
    made: set[str] = set()  # folders made for files ``only`` left out
    folders: set[str] = set()  # CONTENT's folders, and those with a file to copy (``filled``)
    filled: set[str] = set()
    hidden_or_generated = lambda name: name.startswith(".") or name in GENERATED_DIRS  # noqa: E731
    # ``os.path.join(content, rel)`` (and of site) as one string concatenation per file
    content_prefix, site_prefix = os.path.join(content, ""), os.path.join(site, "")
    for rel, is_dir, linked in sorted(_walk(content, lambda rel: hidden_or_generated(_name(rel))), key=_parts):
        name = _name(rel)
        if hidden_or_generated(name) or name in GENERATED_NAMES:
            continue
        if exclude is not None and exclude.excludes(rel, is_dir=is_dir):
            continue
        path = content_prefix + rel
        if linked:  # never followed (sources/confine.py): it could publish any file
            warn_link(Path(path), content)
            continue
        wanted.add(rel)
        if is_dir:
            folders.add(rel)
            continue
        filled.add(_parent(rel))
        target = site_prefix + rel
        if only is not None and not only(rel):
            folder = os.path.dirname(target)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            continue
        if state is None:
            data = _read(content, rel, documents)
            if data is not None:
                written += write_bytes_atomic(target, data)
                copied.add(rel)
            continue
        source = stamps.stat(path)  # both stats before any read (reuse/stamps.py)
        if source is None or not stat.S_ISREG(source.st_mode):
            continue
        copy = stamps.stat(target)
        now = time.time_ns()  # the time of the stats, for ``recordable`` (only a file copied again needs its stamps)
        known = state.previous("sources", rel)
        if known is not None and stamps.matches(source, known.get("source")) and stamps.matches(copy, known.get("copy")):
            if documents is not None and rel in documents and documents[rel] != known["digest"]:
                raise _changed(path, "changed")
            state.keep("sources", rel, known)
            copied.add(rel)
            continue
        data = _read(content, rel, documents)
        if data is None:
            continue
        source_stamp, copy_stamp = stamps.recordable(source, now), stamps.recordable(copy, now)
        copied.add(rel)
        changed = write_bytes_atomic(target, data)
        written += changed
        extra = {"source": source_stamp} if source_stamp else {}
        if copy_stamp and not changed:  # a copy written just now is stamped by the next build
            extra["copy"] = copy_stamp
        state.put("sources", rel, output_hash(data), **extra)
    # A folder with no file to copy anywhere below it is not made by a first build (folders are
    # made for files): a rebuild removes it too, so both give one tree.
    for rel in list(filled):
        while rel and _parent(rel) not in filled:
            rel = _parent(rel)
            filled.add(rel)
    wanted -= folders - filled
    if documents is not None and only is None:
        for rel in sorted(set(documents) - copied):  # gone, or a link, when the walk came by
            raise _changed(os.path.join(content, rel), "vanished or became a symbolic link")
    if only is not None:
        return written, []
    removed = []
    # Folders that hold only what sync keeps are not entered: hidden ones at the root, the root's
    # generated folders, and ``_chunks`` of a directory CONTENT still has.
    skip = lambda rel: ("/" not in rel and (rel.startswith(".") or _root_generated(rel))) or (  # noqa: E731
        _name(rel) in GENERATED_DIRS and _parent(rel) in wanted
    )
    for rel, _, _ in sorted(_walk(site, skip), key=_parts, reverse=True):  # children before parents
        if rel in wanted or rel.startswith(".") or _generated_and_owned(Path(rel), wanted, site):
            continue
        path = os.path.join(site, rel)
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
        removed.append(rel)
    return written, removed


def _read(content: Path, rel: str, documents: Mapping[str, str] | None) -> bytes | None:
    """CONTENT's file ``rel`` (``read_below``: no link followed); None, with a warning for a link,
    when it became a link or vanished since the walk met it, unless it is one of ``documents``,
    whose bytes must be the ones chunked (else PipelineError)."""
    path = os.path.join(content, rel)
    expected = documents.get(rel) if documents is not None else None
    try:
        data = read_below(content, rel)
    except LinkRefused:
        if expected is not None:
            raise _changed(path, "became a symbolic link") from None
        warn_link(Path(path), content)
        return None
    except Vanished:
        if expected is not None:
            raise _changed(path, "vanished") from None
        return None
    if expected is not None and output_hash(data) != expected:
        raise _changed(path, "changed")
    return data


def _changed(path: str, how: str) -> PipelineError:
    return PipelineError(f"{how} while the build was reading the content folder; build again", path=path)


def _name(rel: str) -> str:
    return rel.rpartition("/")[2]


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def _parts(entry: tuple[str, bool, bool]) -> list[str]:
    """Sort key: by path components, as ``pathlib`` sorts."""
    return entry[0].split("/")


def _walk(root: Path, skip) -> list[tuple[str, bool, bool]]:
    """Every file and folder below ``root`` as ``(relative POSIX path, is a folder, is a link)``,
    except folders ``skip(rel)`` names and what they hold. Symbolic links to folders are listed
    (as folders), not entered."""
    out: list[tuple[str, bool, bool]] = []
    stack = [("", os.fspath(root))]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                rel = prefix + entry.name
                try:
                    is_dir = entry.is_dir()  # follows a link, as os.walk sorts its names
                except OSError:
                    is_dir = False
                if is_dir:
                    if skip(rel) or not usable(folder, entry.name, is_file=False):
                        continue
                    linked = entry.is_symlink()
                    out.append((rel, True, linked))
                    if not linked:
                        stack.append((rel + "/", entry.path))
                elif usable(folder, entry.name):
                    out.append((rel, False, entry.is_symlink()))
    return out


def _generated_and_owned(rel: Path, wanted: set[str], site: Path) -> bool:
    """A stage's output whose directory still exists in CONTENT (or the root's generated folders).
    ``wanted``: what sync keeps, as relative POSIX paths ("" the root).

    A ``_keywords/words.md`` the spec stage generated (it starts with the generated marker)
    counts as output while CONTENT has no table of its own there.
    """
    parts = rel.parts
    if _root_generated(parts[0]):
        return True
    if parts[-1] == "_keywords" or parts[-2:] == tuple(KEYWORDS_FILE.split("/")):
        topic = rel.parent if parts[-1] == "_keywords" else rel.parent.parent
        return _key(topic) in wanted and is_generated(site / topic / KEYWORDS_FILE)
    for i, part in enumerate(parts):
        if part in GENERATED_DIRS:
            return "/".join(parts[:i]) in wanted
    return rel.name in GENERATED_NAMES and _key(rel.parent) in wanted


def _key(rel: Path) -> str:
    """``rel`` as sync's relative POSIX path ("" for the root)."""
    posix = rel.as_posix()
    return "" if posix == "." else posix


def spec_input(rel: str) -> bool:
    """Whether CONTENT's file ``rel`` is read by the spec stage's ``start_spec`` (an author's
    keyword table or question file)."""
    return rel == KEYWORDS_FILE or rel.endswith("/" + KEYWORDS_FILE) or _name(rel) == QUESTIONS_FILE
