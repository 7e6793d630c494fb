"""Hostile YAML in front matter and entry files: JSON-safe data or a clear error, never a crash."""

import subprocess
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, write_tree
from pipeline.errors import PipelineError
from pipeline.parsing.markdown import parse_markdown
from pipeline.parsing.yamlsafe import MAX_ALIAS_NODES, load_yaml


def laughs(levels: int, width: int = 9) -> str:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for name in "bcdefghijk"[: levels - 1]:
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * width) + "]")
        prev = name
    return "\n".join(lines) + "\n"


def doc(front: str) -> str:
    return f"---\n{front}---\n# T\n\ntext\n"


@pytest.mark.parametrize(
    ("front", "line", "words"),
    [
        ("x: 1\nblob: !!binary aGVsbG8=\n", 3, "binary"),
        ("big: 123456789012345678901234567890\n", 2, "64 bits"),
        ("a: &a [*a]\n", 2, "recursive"),
        ("a: &a {b: *a}\n", 2, "recursive"),
        ("n: .nan\n", 2, "JSON"),
        ("? [1, 2]\n: x\n", 2, "key"),
        ("a: !!python/object:os.system x\n", 2, "tag"),
        ("a: " + "[" * 100 + "]" * 100 + "\n", 2, "deep"),
        (laughs(9), 2, "aliases"),
    ],
)
def test_bad_front_matter_is_an_error_naming_file_and_line(front, line, words):
    with pytest.raises(PipelineError) as info:
        parse_markdown(doc(front), "notes/x.md")
    assert info.value.path == "notes/x.md"
    assert info.value.line == line
    assert words in info.value.message


def test_a_depth_bomb_that_crashed_libyaml_is_a_clean_error():
    text = doc("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(PipelineError, match="nested"):
        parse_markdown(text, "x.md")


def test_accepted_yaml_becomes_json_safe_metadata():
    front = "tags: !!set {b, a}\n1: one\nnull: none\ntrue: yes\nwhen: 2024-01-02\nbase: &b {k: 1}\nm:\n  <<: *b\n  j: 2\n"
    fm = parse_markdown(doc(front), "x.md").front_matter
    assert fm == {
        "tags": ["a", "b"], "1": "one", "null": "none", "true": True, "when": "2024-01-02",
        "base": {"k": 1}, "m": {"k": 1, "j": 2},
    }
    orjson.dumps(fm)  # would raise on sets, bytes, int keys or big ints


def test_a_few_aliases_within_the_limit_are_expanded():
    data = load_yaml(laughs(3), "x.yaml")  # 9 + 81 + 729 nodes: within the limit
    assert len(data["c"]) == 9 and data["c"][0][0] == ["lol"] * 9
    with pytest.raises(PipelineError, match="aliases"):
        load_yaml(laughs(4), "x.yaml")  # 9**4 = 6,561 copies > MAX_ALIAS_NODES
    assert 9**4 > MAX_ALIAS_NODES


@settings(max_examples=300, deadline=None)
@given(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.binary(max_size=4)
    | st.dates() | st.sets(st.integers(0, 9), max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.integers(-3, 3) | st.text(max_size=3), children, max_size=3),
    max_leaves=12,
))
def test_any_safe_dump_loads_as_json_safe_data_or_a_clean_error(value):
    import yaml

    text = yaml.safe_dump({"k": value}, allow_unicode=True)
    try:
        data = load_yaml(text, "x.yaml")
    except PipelineError as exc:
        assert exc.path == "x.yaml" and exc.line is not None
        return
    orjson.dumps(data)


@pytest.mark.parametrize(
    ("name", "front", "words"),
    [
        ("entry.yaml", laughs(9), "aliases"),
        ("entry.md", laughs(9), "aliases"),
        ("entry.md", "a: &a [*a]\n", "recursive"),
        ("entry.md", "big: 123456789012345678901234567890\n", "64 bits"),
        ("entry.md", "b: !!binary aGVsbG8=\n", "binary"),
        ("entry.md", "a: " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
    ],
)
def test_chunk_and_build_report_bad_yaml_without_traceback(tmp_path, name, front, words):
    if name.endswith(".yaml"):
        text = "type: definition\ntitle: T\n" + front + "overview: text\n"
    else:
        text = doc(front)
    content = write_tree(tmp_path / "content", {"t/" + name: text, "t/ok.md": "# Ok\n\nfine\n"})
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    chunk = subprocess.run([sys.executable, "-m", "pipeline", "chunk", str(content / "t" / name)],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert chunk.returncode != 0 and "Traceback" not in chunk.stderr
    assert f"{name}:" in chunk.stderr and words in chunk.stderr
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "build", str(content), "--out", str(site), "--embedder", "hashing",
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"{name}:" in result.stderr and words in result.stderr
    assert not (site / "t" / "_chunks").exists()  # refused at planning: nothing published


def test_a_small_bomb_cannot_inflate_the_manifest(tmp_path):
    """A few hundred bytes of aliases once published a 20 MB manifest (the expansion lands in
    every chunk's metadata): now refused, naming the file."""
    from test_hostile import run_build

    text = doc(laughs(4)) + "".join(f"## S{i}\n\n" + "words " * 200 + "\n\n" for i in range(20))
    assert len(laughs(4)) < 400
    with pytest.raises(PipelineError, match="aliases"):
        run_build(tmp_path, {"t/bomb.md": text})
