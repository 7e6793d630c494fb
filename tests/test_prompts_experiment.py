"""The prompt-hash experiment: its fixture and its (pure) evaluation."""

import numpy as np

from conftest import ROOT
from pipeline.simhash import simhash64
from bench.prompts_experiment import Corpus, Query, evaluate, load_queries, reference, select
from pipeline.topicspec.prompts import PromptPolicy
from pipeline.topicspec.questions import Question, load_questions

QUERIES = ROOT / "tests" / "fixtures" / "prompt_queries.json"


def test_the_fixture_paraphrases_real_questions_and_never_repeats_one():
    stored = {q.text: p.parent.relative_to(ROOT / "content").as_posix()
              for p in sorted((ROOT / "content").rglob("qa-pairs.md")) for q in load_questions(p)}
    queries = load_queries(QUERIES)
    assert {q.kind for q in queries} == {"paraphrase", "unanticipated", "off_topic"}
    for q in queries:
        assert q.text.lower() not in {s.lower() for s in stored}
        if q.kind == "paraphrase":
            assert stored[q.question] == q.topic
        else:
            assert q.question is None


def _corpus():
    # two topics, one chunk each on an axis; one question per topic pointing at its chunk
    questions = [Question(t, 1, simhash64(t)) for t in ("How big is a stripe factor?", "Where does the cache live?")]
    return Corpus(
        chunks=["a/_chunks/x-0.md", "b/_chunks/y-0.md"],
        chunk_vectors=np.eye(2, dtype=np.float32),
        topic_rows={"a": [0], "b": [1]},
        questions=questions,
        question_topics=["a", "b"],
        question_vectors=np.eye(2, dtype=np.float32),
    )


def test_evaluate_counts_hash_matches_against_the_embedding_reference():
    corpus = _corpus()
    queries = [
        Query("paraphrase", "how big is the stripe factor", "a", "How big is a stripe factor?"),
        Query("paraphrase", "cache location", "b", "Where does the cache live?"),
        Query("off_topic", "pizza dough recipe"),
    ]
    vectors = np.array([[1, 0], [0, 1], [0.7, 0.7]], dtype=np.float32)
    refs = reference(corpus, vectors, queries, k=1)
    assert refs == [frozenset({0}), frozenset({1}), frozenset()]
    near = evaluate(corpus, queries, refs, PromptPolicy(threshold=0.5, per_question=1, max_distance=8))
    assert near.precision == 1.0 and near.false_alarms == 0.0
    assert near.question_hits == 0.5 and near.recall == 0.5  # "cache location" is too far from its question
    far = evaluate(corpus, queries, refs, PromptPolicy(threshold=0.5, per_question=1, max_distance=64))
    assert far.false_alarms == 1.0 and far.question_precision < 1.0 and far.precision < 1.0


def test_the_selection_rule_prefers_precision_and_refuses_false_alarms():
    corpus = _corpus()
    queries = [Query("paraphrase", "how big is the stripe factor", "a", "How big is a stripe factor?"), Query("off_topic", "stripe factor size")]
    refs = reference(corpus, np.array([[1, 0], [1, 0]], dtype=np.float32), queries, k=1)
    scores = [evaluate(corpus, queries, refs, PromptPolicy(0.5, 1, d)) for d in (0, 8, 16, 64)]
    picked = select(scores)
    assert picked.false_alarms == 0 and picked.recall > 0
