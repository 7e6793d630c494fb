"""siteformat/tree.py and sources/documents.py: which folders of a site are nodes, which files its documents."""

from conftest import write_tree
from pipeline.siteformat.tree import site_dirs
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
