"""The prompt-hash experiment: which attachment policy and Hamming distance to use.

Run ``python -m bench.prompts_experiment`` (``--help`` for options). It builds the sample
content (``content/``, ``build/site.toml``) into a temporary site with the configured embedder
(the cache makes reruns cheap), embeds the queries of ``tests/fixtures/prompt_queries.json``
and prints markdown tables; docs/DECISIONS.md ("Prompt hashes") holds the rule and the figure.

Method. Queries are what users type, never a stored question verbatim: ``paraphrase`` queries
reword a ``qa-pairs.md`` question, ``unanticipated`` ones are on-topic with no stored question,
``off_topic`` ones concern nothing in the content. The reference is embedding search, what a
reader falls back to: the ``reference_k`` chunks of the whole site most similar to the query
embedding (nothing for off-topic queries). Hash matching returns every chunk that carries a
stored hash within ``d`` bits of ``simhash64(query)``. Over all queries:

- precision = |returned ∩ reference| / |returned|;
- recall = |returned ∩ reference| / |reference|, over paraphrase queries (the ones hashes can
  serve) and, separately, over all on-topic queries;
- false alarms = share of off-topic queries that return anything (a match stops the fallback);
- question hits = share of paraphrase queries whose own question is within ``d`` bits.

Everything here except ``main`` is pure; ``evaluate`` works on vectors and hashes only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import orjson

from pipeline.simhash import hamming, simhash64
from pipeline.topicspec.prompts import DEFAULT_POLICY, PromptPolicy, attach, similarities
from pipeline.topicspec.questions import Question

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("paraphrase", "unanticipated", "off_topic")
THRESHOLDS = (0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)
PER_QUESTION = (1, 2, 3, None)
DISTANCES = (0, 4, 6, 8, 10, 12, 14, 16, 18, 20)


@dataclass(frozen=True)
class Query:
    kind: str  # one of KINDS
    text: str
    topic: str | None = None
    question: str | None = None  # the stored question a paraphrase rewords


@dataclass(frozen=True)
class Corpus:
    """A built site reduced to what the experiment needs. Chunk rows are global (all topics)."""

    chunks: list[str]  # "topic/_chunks/stem-i.md"
    chunk_vectors: np.ndarray
    topic_rows: dict[str, list[int]]
    questions: list[Question]
    question_topics: list[str]
    question_vectors: np.ndarray


@dataclass(frozen=True)
class Score:
    policy: PromptPolicy
    precision: float
    recall: float  # over paraphrase queries
    recall_on_topic: float  # over paraphrase and unanticipated queries
    false_alarms: float
    question_hits: float
    question_precision: float  # of the stored questions paraphrases matched, the share that was their own
    returned: float  # mean chunks returned per query that returned any

    @property
    def f1(self) -> float:
        return self.f_beta(1.0)

    @property
    def f05(self) -> float:
        """F-measure weighting precision twice as much as recall: a match stops the fallback."""
        return self.f_beta(0.5)

    def f_beta(self, beta: float) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p == 0 or r == 0 else round((1 + beta**2) * p * r / (beta**2 * p + r), 4)


def select(scores: list[Score]) -> Score:
    """The selection rule: among policies with no false alarm and no paraphrase matching another
    question than its own, the highest F0.5; ties to the smaller distance, then the higher
    threshold, then fewer chunks per question."""
    eligible = [s for s in scores if s.false_alarms == 0 and s.question_precision == 1.0 and s.recall > 0]
    return min(
        eligible,
        key=lambda s: (-s.f05, s.policy.max_distance, -s.policy.threshold, s.policy.per_question or 10**9),
    )


def load_queries(path: Path) -> list[Query]:
    """The queries of a fixture file (see tests/fixtures/prompt_queries.json)."""
    data = orjson.loads(Path(path).read_bytes())
    queries = [Query(q["kind"], q["query"], q.get("topic"), q.get("question")) for q in data["queries"]]
    unknown = {q.kind for q in queries} - set(KINDS)
    if unknown:
        raise ValueError(f"unknown query kinds {sorted(unknown)}")
    return queries


def corpus_from_topics(topics: dict) -> Corpus:
    """A Corpus from ``pipeline.topicspec.topicspec.collect_topics``' result (vectors filled)."""
    chunks, vectors, topic_rows, questions, qtopics, qvectors = [], [], {}, [], [], []
    for dir_rel, topic in sorted(topics.items()):
        rows = topic_rows.setdefault(dir_rel, [])
        for doc in topic.docs:
            for chunk, vector in zip(doc.manifest["chunks"], doc.vectors):
                rows.append(len(chunks))
                chunks.append(f"{dir_rel}/{chunk['href']}" if dir_rel else chunk["href"])
                vectors.append(vector)
        for question, vector in zip(topic.questions, topic.question_vectors):
            questions.append(question)
            qtopics.append(dir_rel)
            qvectors.append(vector)
    dim = len(vectors[0]) if vectors else 0
    return Corpus(
        chunks,
        np.vstack(vectors).astype(np.float32) if vectors else np.zeros((0, dim), np.float32),
        topic_rows,
        questions,
        qtopics,
        np.vstack(qvectors).astype(np.float32) if qvectors else np.zeros((0, dim), np.float32),
    )


def attached_rows(corpus: Corpus, policy: PromptPolicy) -> list[frozenset[int]]:
    """For each question of the corpus, the global chunk rows that carry its hash under ``policy``
    (questions only attach within their own topic, as in the build)."""
    out: list[set[int]] = [set() for _ in corpus.questions]
    for topic, rows in corpus.topic_rows.items():
        qs = [i for i, t in enumerate(corpus.question_topics) if t == topic]
        if not qs or not rows:
            continue
        per_chunk = attach(similarities(corpus.chunk_vectors[rows], corpus.question_vectors[qs]), policy)
        for local_row, local_qs in enumerate(per_chunk):
            for local_q in local_qs:
                out[qs[local_q]].add(rows[local_row])
    return [frozenset(s) for s in out]


def reference(corpus: Corpus, query_vectors: np.ndarray, queries: list[Query], k: int) -> list[frozenset[int]]:
    """Embedding search: the ``k`` most similar chunks of the site per query; none when off-topic."""
    sims = similarities(corpus.chunk_vectors, query_vectors)  # chunks x queries
    out = []
    for j, query in enumerate(queries):
        if query.kind == "off_topic":
            out.append(frozenset())
            continue
        ranked = sorted(range(len(corpus.chunks)), key=lambda c: (-sims[c, j], c))
        out.append(frozenset(ranked[:k]))
    return out


def evaluate(
    corpus: Corpus,
    queries: list[Query],
    references: list[frozenset[int]],
    policy: PromptPolicy,
    attached: list[frozenset[int]] | None = None,
) -> Score:
    """Hash matching under ``policy`` against the ``references`` (see the module docstring)."""
    attached = attached if attached is not None else attached_rows(corpus, policy)
    hashes = [q.hash for q in corpus.questions]
    texts = [q.text for q in corpus.questions]
    hit = returned = relevant = relevant_para = hit_para = 0
    alarms = offs = question_hits = paraphrases = answered = own_matches = all_matches = 0
    for query, ref in zip(queries, references):
        h = simhash64(query.text)
        near = [i for i, stored in enumerate(hashes) if h and hamming(h, stored) <= policy.max_distance]
        found: set[int] = set().union(*(attached[i] for i in near)) if near else set()
        hit += len(found & ref)
        returned += len(found)
        answered += bool(found)
        if query.kind == "off_topic":
            offs += 1
            alarms += bool(found)
            continue
        relevant += len(ref)
        if query.kind == "paraphrase":
            paraphrases += 1
            relevant_para += len(ref)
            hit_para += len(found & ref)
            question_hits += any(texts[i] == query.question for i in near)
            own_matches += sum(texts[i] == query.question for i in near)
            all_matches += len(near)
    return Score(
        policy=policy,
        precision=round(hit / returned, 4) if returned else 1.0,
        recall=round(hit_para / relevant_para, 4) if relevant_para else 0.0,
        recall_on_topic=round(hit / relevant, 4) if relevant else 0.0,
        false_alarms=round(alarms / offs, 4) if offs else 0.0,
        question_hits=round(question_hits / paraphrases, 4) if paraphrases else 0.0,
        question_precision=round(own_matches / all_matches, 4) if all_matches else 1.0,
        returned=round(returned / answered, 2) if answered else 0.0,
    )


def grid(
    corpus: Corpus,
    queries: list[Query],
    references: list[frozenset[int]],
    thresholds=THRESHOLDS,
    per_question=PER_QUESTION,
    distances=DISTANCES,
) -> list[Score]:
    """``evaluate`` for every combination, in a fixed order."""
    out = []
    for t in thresholds:
        for m in per_question:
            policy = PromptPolicy(threshold=t, per_question=m, max_distance=0)
            attached = attached_rows(corpus, policy)
            for d in distances:
                out.append(evaluate(corpus, queries, references, replace(policy, max_distance=d), attached))
    return out


def distance_profile(corpus: Corpus, queries: list[Query]) -> dict[str, list[int]]:
    """Hamming distances of paraphrases to their own question, of on-topic and off-topic queries
    to every other stored question, and between stored questions (collisions)."""
    hashes = [q.hash for q in corpus.questions]
    texts = [q.text for q in corpus.questions]
    own, other, off = [], [], []
    for query in queries:
        h = simhash64(query.text)
        for text, stored in zip(texts, hashes):
            d = hamming(h, stored)
            if query.kind == "paraphrase" and text == query.question:
                own.append(d)
            elif query.kind == "off_topic":
                off.append(d)
            else:
                other.append(d)
    between = [hamming(a, b) for i, a in enumerate(hashes) for b in hashes[i + 1 :]]
    return {"own": sorted(own), "other": sorted(other), "off_topic": sorted(off), "between_questions": sorted(between)}


def _row(s: Score) -> str:
    m = "all" if s.policy.per_question is None else s.policy.per_question
    return (
        f"| {s.policy.threshold:.2f} | {m} | {s.policy.max_distance} | {s.precision:.3f} | {s.recall:.3f} | "
        f"{s.recall_on_topic:.3f} | {s.f05:.3f} | {s.false_alarms:.3f} | {s.question_hits:.3f} | "
        f"{s.question_precision:.3f} | {s.returned:.2f} |"
    )


HEADER = (
    "| threshold | per question | d | precision | recall (paraphrase) | recall (on-topic) | F0.5 | "
    "false alarms | question hits | question precision | chunks/answer |\n|---|---|---|---|---|---|---|---|---|---|---|"
)


def report(corpus: Corpus, queries: list[Query], references: list[frozenset[int]], k: int) -> str:
    """The experiment's markdown report."""
    scores = grid(corpus, queries, references)
    chosen = DEFAULT_POLICY
    counts = {kind: sum(q.kind == kind for q in queries) for kind in KINDS}
    profile = distance_profile(corpus, queries)
    lines = [
        f"corpus: {len(corpus.chunks)} chunks in {len(corpus.topic_rows)} topics, {len(corpus.questions)} questions; "
        f"queries: {counts['paraphrase']} paraphrase, {counts['unanticipated']} unanticipated, {counts['off_topic']} off-topic; "
        f"reference: embedding search top-{k}",
        "",
        "### Hamming distances",
        "",
        "| pair | n | min | median | share <= 8 | share <= 12 | share <= 16 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, values in profile.items():
        if values:
            share = lambda d: sum(v <= d for v in values) / len(values)  # noqa: E731
            lines.append(
                f"| {name} | {len(values)} | {values[0]} | {values[len(values) // 2]} | {share(8):.3f} | {share(12):.3f} | {share(16):.3f} |"
            )
    lines += ["", f"### Distance sweep at the chosen attachment (threshold {chosen.threshold}, per question {chosen.per_question})", "", HEADER]
    lines += [_row(s) for s in scores if s.policy.threshold == chosen.threshold and s.policy.per_question == chosen.per_question]
    lines += ["", f"### Attachment sweep at the chosen distance d = {chosen.max_distance}", "", HEADER]
    lines += [_row(s) for s in scores if s.policy.max_distance == chosen.max_distance]
    eligible = [s for s in scores if s.false_alarms == 0 and s.question_precision == 1.0]
    best = sorted(eligible, key=lambda s: (-s.f05, s.policy.max_distance, -s.policy.threshold))[:10]
    lines += ["", "### Best F0.5 with no false alarm and no wrong question", "", HEADER] + [_row(s) for s in best]
    picked = select(scores)
    lines += ["", "### Selected by the rule, and the shipped default (DEFAULT_POLICY)", "", HEADER, _row(picked)]
    lines += [_row(s) for s in scores if s.policy == chosen]
    same = "the same" if picked.policy == chosen else "different"
    lines += ["", f"rule's pick with reference top-{k}: {picked.policy}; shipped DEFAULT_POLICY (chosen with top-3): {chosen}: {same}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prompts_experiment", description=__doc__.split("\n\n")[0])
    parser.add_argument("--content", type=Path, default=ROOT / "content")
    parser.add_argument("--config", type=Path, default=ROOT / "build" / "site.toml")
    parser.add_argument("--queries", type=Path, default=ROOT / "tests" / "fixtures" / "prompt_queries.json")
    parser.add_argument("--embedder", default=None, help="default: the config's embedder (minilm)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="default: the config's (.embedding-cache)")
    parser.add_argument("--reference-k", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the tables to this file (make bench: its report)")
    args = parser.parse_args(argv)

    from pipeline.config import load_config
    from pipeline.embedding.registry import make_embedder
    from pipeline.site.build import build
    from pipeline.topicspec.topicspec import collect_topics

    config = load_config(args.config).with_overrides(embedder=args.embedder, cache_dir=args.cache_dir)
    embedder = make_embedder(config.embedder)
    queries = load_queries(args.queries)
    with tempfile.TemporaryDirectory(prefix="prompt-experiment-") as tmp:
        site = Path(tmp) / "site"
        build(args.content, site, config, embedder=embedder, progress=False)
        corpus = corpus_from_topics(collect_topics(site, config, embedder, progress=False))
    query_vectors = embedder.embed([q.text for q in queries], progress=False)
    references = reference(corpus, query_vectors, queries, args.reference_k)
    text = f"model: {embedder.name}; content: {_shown(args.content)}; config: {_shown(args.config)}\n\n"
    text += report(corpus, queries, references, args.reference_k)
    print(text, end="")
    if args.out is not None:
        from pipeline.fsutil import write_text_atomic

        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.out, text)
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it: the output does not depend on the checkout's location."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
