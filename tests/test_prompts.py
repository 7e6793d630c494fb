"""Prompt hashes: qa-pairs.md parsing, attaching questions to chunks, 64-bit values in JSON."""

import subprocess
import sys
import warnings

import numpy as np
import orjson
import pytest

from conftest import write_tree, document_resources
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.errors import PipelineError
from pipeline.simhash import from_hex, simhash64, to_hex
from pipeline.site.build import build
from pipeline.topicspec.prompts import DEFAULT_POLICY, PromptPolicy, attach, hash_fields, matches, similarities
from pipeline.topicspec.questions import parse_questions
from test_build import load

# -- qa-pairs.md formats ---------------------------------------------------------------------

QA = """# Questions

## Q: How do I build the site?
Run `make site`.

### q:   What is a `stripe order`?   ##
A reading order.

**Q:** Why is the second build faster?
The cache.

**Q: Where are chunks written?**
Beside each document.

## Can I run one stage alone?
Yes.

## Answers without a question mark are not questions

```markdown
## Q: Not a question, it is inside a code block
```
"""


def test_the_three_documented_formats_and_nothing_else():
    questions = parse_questions(QA, "qa-pairs.md")
    assert [(q.line, q.text) for q in questions] == [
        (3, "How do I build the site?"),
        (6, "What is a stripe order?"),
        (9, "Why is the second build faster?"),
        (12, "Where are chunks written?"),
        (15, "Can I run one stage alone?"),
    ]
    assert all(q.hash == simhash64(q.text) and q.hex == to_hex(q.hash) for q in questions)


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("# Questions\n\n## Q:\nanswer\n", 3, "without a question"),
        ("**Q:**   \n", 1, "without a question"),
        ("## Q: ???\n", 1, "no words"),
        ("## Q: How do I build?\n\n## Q: how do I  build?\n", 3, "duplicate question"),
        ("## Q: One?\n\n```\n## Q: Two?\n", 3, "never closed"),
    ],
)
def test_malformed_files_name_the_line(text, line, words):
    with pytest.raises(PipelineError) as error:
        parse_questions(text, "t/qa-pairs.md")
    assert error.value.line == line and words in str(error.value)
    assert str(error.value).startswith(f"t/qa-pairs.md:{line}:")


def test_unsupported_lines_and_empty_files_warn_and_are_skipped():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [q.text for q in parse_questions("Q: plain line?\n\n## Q: Real one?\n", "f.md")] == ["Real one?"]
        assert parse_questions("# Questions\n\nnothing here\n", "g.md") == []
    messages = [str(w.message) for w in caught]
    assert any(m.startswith("f.md:1: skipped a plain `Q:` line") for m in messages)
    assert any(m.startswith("g.md: no questions found") for m in messages)


# -- attaching -------------------------------------------------------------------------------


def test_a_question_goes_to_its_best_chunks_above_the_threshold():
    sims = np.array([[0.9, 0.1, 0.31], [0.8, 0.2, 0.31], [0.7, 0.29, 0.31]])  # rows: chunks
    assert attach(sims, PromptPolicy(threshold=0.3, per_question=2)) == [[0, 2], [0, 2], []]
    assert attach(sims, PromptPolicy(threshold=0.3, per_question=None)) == [[0, 2], [0, 2], [0, 2]]
    assert attach(sims, PromptPolicy(threshold=0.95, per_question=1)) == [[], [], []]


def test_similarities_are_rounded_so_the_cut_is_stable():
    v = np.array([[1.0, 0.0]], dtype=np.float32)
    q = np.array([[0.3 + 1e-9, np.sqrt(1 - 0.09)]], dtype=np.float32)
    assert similarities(v, q)[0, 0] == 0.3
    assert attach(similarities(v, q), PromptPolicy(threshold=0.3, per_question=1)) == [[0]]


def test_hash_fields_are_parallel_exact_and_deduplicated():
    hashes = [2**64 - 1, 12345678901234567890, 5, 2**64 - 1]
    fields = hash_fields(hashes)
    assert fields["prompt_hashes"] == [2**64 - 1, 12345678901234567890, 5]
    assert fields["prompt_hashes_hex"] == ["ffffffffffffffff", "ab54a98ceb1f0ad2", "0000000000000005"]
    decoded = orjson.loads(orjson.dumps(fields))
    assert [from_hex(h) for h in decoded["prompt_hashes_hex"]] == decoded["prompt_hashes"]


def test_matching_uses_the_hamming_radius_and_never_matches_zero():
    stored = [0b1111]
    assert matches(0b0011, stored, 2) and not matches(0b0001, stored, 2)
    assert not matches(0, [0], 64)


def test_default_policy_is_published_with_the_hash_algorithm():
    assert DEFAULT_POLICY.describe() == {
        "algorithm": "simhash64-w3-v1",
        "max_distance": DEFAULT_POLICY.max_distance,
        "threshold": DEFAULT_POLICY.threshold,
        "per_question": DEFAULT_POLICY.per_question,
    }


# -- in the build ----------------------------------------------------------------------------

DOC = "# Cache\n\nThe embedding cache keeps vectors on disk.\n\n" + "".join(
    f"## Part {i}\n\nPart {i} explains stripe order step {i} and the cache folder {i}.\n\n" for i in range(1, 7)
)
QUESTIONS = "# Questions\n\n" + "".join(f"## Q: What does part {i} say about the stripe order?\nIt explains.\n\n" for i in range(1, 25))
FILES = {"kb/cache/cache.md": DOC, "kb/cache/qa-pairs.md": QUESTIONS, "kb/empty/notes.md": "# Notes\n\nNo questions here.\n"}


def _build(tmp_path, files=FILES, embedder=None, **config):
    content = write_tree(tmp_path / "content", files)
    embedder = embedder or HashingEmbedder()
    cfg = SiteConfig(cache_dir=tmp_path / "cache", **config)
    report = build(content, tmp_path / "site", cfg, embedder=embedder, progress=False)
    return content, tmp_path / "site", embedder, report, cfg


def _items(site, topic="kb/cache", stem="cache"):
    return document_resources(site, topic)[stem]["items"]


def test_chunks_carry_hashes_of_their_questions_exactly_in_both_forms(tmp_path):
    _, site, _, report, _ = _build(tmp_path)
    assert report.spec.questions == 24 and report.spec.questions_embedded == 24
    raw = b"".join(p.read_bytes() for p in (site / "kb/cache/_index").glob("cache.doc*.json"))
    items = _items(site)
    stored = [h for item in items for h in item["prompt_hashes"]]
    assert stored, "the hashing embedder makes these questions similar to their parts"
    expected = {simhash64(f"What does part {i} say about the stripe order?") for i in range(1, 25)}
    assert set(stored) <= expected
    assert any(h > 2**53 for h in stored)  # a browser's JSON.parse would round these
    for item in items:
        assert len(item["prompt_hashes"]) == len(item["prompt_hashes_hex"])
        assert [from_hex(x) for x in item["prompt_hashes_hex"]] == item["prompt_hashes"]
        for h in item["prompt_hashes"]:
            assert str(h).encode() in raw  # written as an exact decimal, not a float
    per_question = {}
    for item in items:
        for h in item["prompt_hashes"]:
            per_question[h] = per_question.get(h, 0) + 1
    assert max(per_question.values()) <= DEFAULT_POLICY.per_question
    doc = load(site / "kb/cache/index.json")
    assert doc["prompt_matching"]["max_distance"] == DEFAULT_POLICY.max_distance
    assert _items(site, "kb/empty", "notes")[0]["prompt_hashes"] == []
    assert "prompt_matching" not in load(site / "kb/empty/index.json")


def test_questions_are_cached_and_an_edit_embeds_only_the_new_question(tmp_path):
    content, site, embedder, _, cfg = _build(tmp_path)
    calls = embedder.calls
    report = build(content, site, cfg, embedder=embedder, progress=False)
    assert embedder.calls == calls and report.spec.questions_embedded == 0
    (content / "kb/cache/qa-pairs.md").write_text(QUESTIONS + "## Q: Is there a brand new question?\nYes.\n", encoding="utf-8")
    report = build(content, site, cfg, embedder=embedder, progress=False)
    assert embedder.calls - calls == 1 and report.spec.questions_embedded == 1 and report.spec.embedded == 0


def test_removing_the_question_file_removes_the_hashes(tmp_path):
    content, site, embedder, _, cfg = _build(tmp_path, retire_removed_files=False)
    (content / "kb/cache/qa-pairs.md").unlink()
    build(content, site, cfg, embedder=embedder, progress=False)
    assert all(item["prompt_hashes"] == [] for item in _items(site))
    assert not (site / "kb/cache/qa-pairs.md").exists()


def test_a_malformed_question_file_stops_the_build_before_any_embedding(tmp_path):
    files = dict(FILES)
    files["kb/cache/qa-pairs.md"] = "# Questions\n\n## Q: Fine?\n\n**Q:**\n"
    embedder = HashingEmbedder()
    with pytest.raises(PipelineError, match=r"qa-pairs\.md:5: `Q:` without a question"):
        _build(tmp_path, files, embedder=embedder)
    assert embedder.calls == 0


def test_the_cli_exits_1_with_file_and_line(tmp_path):
    write_tree(tmp_path / "content", {"a/doc.md": "# Doc\n\nText.\n", "a/qa-pairs.md": "## Q: Same?\n## Q: same?\n"})
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "build", str(tmp_path / "content"), "--out", str(tmp_path / "site"),
         "--embedder", "hashing", "--cache-dir", str(tmp_path / "cache"), "-q"],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "qa-pairs.md:2: duplicate question" in result.stderr and "Traceback" not in result.stderr
