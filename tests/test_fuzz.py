"""Fuzz (issue 15, point 8): generated markdown, front matter and file names never end in a
traceback and every chunking invariant holds. A few thousand cases here; ``python -m bench.fuzz``
runs the long campaign (docs/BENCHMARKS.md)."""

import os
import warnings

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fuzzcases import cases, check_case

from pipeline.errors import PipelineError
from pipeline.siteformat.tree import is_hidden, name_problem
from pipeline.sources.documents import all_documents


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_generated_documents_chunk_or_are_refused_cleanly(counter, case):
    assert check_case(*case, counter) in {"chunked", "empty", "refused", "skipped-name"}


_raw_name = st.binary(min_size=1, max_size=260).filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(names=st.lists(_raw_name, min_size=1, max_size=6, unique=True), suffix=st.sampled_from([b".md", b".yaml", b".json", b""]))
@example(names=[b"_\x80", b"a\x80"], suffix=b".md")  # hidden and not UTF-8: silent; not UTF-8 alone: warned
def test_any_file_names_are_listed_skipped_or_refused_never_a_traceback(tmp_path_factory, names, suffix):
    root = tmp_path_factory.mktemp("names")
    made = []
    for raw in names:
        name = raw[: 255 - len(suffix)] + suffix
        try:
            with open(os.path.join(os.fsencode(root), name), "wb") as f:
                f.write(b"# T\n\ntext\n")
            made.append(os.fsdecode(name))
        except OSError:  # a name this filesystem refuses itself
            continue
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            docs = all_documents(root)
        except PipelineError as exc:  # two names with one key: named, both
            assert "would both publish" in exc.message
            return
    listed = {d.name for d in docs}
    for name in made:
        if name_problem(name) is not None:
            assert name not in listed
            if not is_hidden(name):  # hidden names (. or _) are never documents: skipped without a word
                assert any("skipped" in str(w.message) for w in caught)
        else:
            assert name not in listed or name.endswith((".md", ".yaml", ".json"))
    for doc in docs:
        doc.rel.encode("utf-8")  # every listed name can be written into JSON and URLs
