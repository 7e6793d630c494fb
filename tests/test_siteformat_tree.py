"""siteformat/tree.py and sources/documents.py: which folders of a site are nodes, which files its documents."""

import os
import pickle
from dataclasses import replace
from pathlib import Path

from conftest import write_tree
from pipeline.siteformat.tree import SourceDoc, child_dirs, site_dirs
from pipeline.sources.documents import documents_in, has_documents


def test_has_documents_agrees_with_documents_in_on_every_kind_of_file(tmp_path):
    root = write_tree(tmp_path / "site", {
        "docs/a.md": "# A\n",
        "img/logo.png": "png",
        "data/config.json": '{"name": "not an entry"}',
        "kb/key.yaml": "type: faq\nquestion: Q?\nanswer: A.\n",
        "hidden/.draft.md": "# draft\n",
        "reserved/index.json": "{}",
        "reserved/topic-spec.md": "# spec\n",
        "mixed/z.md": "# Z\n",
        "mixed/a.txt": "text",
    })
    for dir_rel in site_dirs(root):
        assert has_documents(root, dir_rel) == bool(documents_in(root, dir_rel)), dir_rel


def test_source_doc_names_are_those_of_its_rel_and_it_compares_by_root_and_rel(tmp_path):
    # name, key and dir_rel are computed when the record is made: they must follow ``rel``, a
    # copy made by ``replace`` must have its own, and equality, hashing and pickling ignore them
    cases = {
        "setup.md": ("setup.md", "setup", "", "setup"),
        "guide/setup.md": ("setup.md", "setup", "guide", "guide/setup"),
        "kb/deep/api-key.yaml": ("api-key.yaml", "api-key.yaml", "kb/deep", "kb/deep/api-key.yaml"),
        "a/x.md.md": ("x.md.md", "x.md", "a", "a/x.md"),
    }
    for rel, (name, key, dir_rel, document_id) in cases.items():
        doc = SourceDoc(tmp_path, rel)
        assert (doc.name, doc.key, doc.dir_rel, doc.document_id) == (name, key, dir_rel, document_id)
        assert doc.path == tmp_path / rel and doc.path is doc.path  # made once
        twin = SourceDoc(tmp_path, rel)  # its path never asked for
        assert twin == doc and hash(twin) == hash(doc) and repr(twin) == repr(doc)
        back = pickle.loads(pickle.dumps(doc))
        assert back == doc and (back.name, back.key, back.dir_rel, back.path) == (name, key, dir_rel, tmp_path / rel)
    moved = replace(SourceDoc(tmp_path, "guide/setup.md"), rel="other/intro.md")
    assert (moved.name, moved.key, moved.dir_rel, moved.path) == ("intro.md", "intro", "other", tmp_path / "other/intro.md")


def test_child_dirs_lists_the_real_visible_folders_only(tmp_path):
    root = write_tree(tmp_path / "site", {
        "guide/b/x.md": "# X\n",
        "guide/a/y.md": "# Y\n",
        "guide/_chunks/y-0.md": "y",
        "guide/.git/config": "",
        "guide/file.md": "# F\n",
        "elsewhere/z.md": "# Z\n",
    })
    os.symlink(root / "elsewhere", root / "guide" / "linked")  # a link to a folder is never followed
    os.symlink(root / "guide" / "file.md", root / "guide" / "c")  # a link to a file is no folder
    assert child_dirs(root, "guide") == ["guide/a", "guide/b"]
    assert child_dirs(root, "") == ["elsewhere", "guide"]
    assert child_dirs(Path(root), "guide/a") == []
