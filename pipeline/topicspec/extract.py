"""KeywordExtractor: an authority table for a topic that has no ``_keywords/words.md``.

Pure and deterministic: the same texts give the same table. ``phrases.py`` finds the candidate
phrases (its docstring defines them); this module counts and scores them. Definitions
(docs/DECISIONS.md "Generated keyword tables"):

**Counts.** ``f(p)``: occurrences of phrase ``p`` in the topic; ``d(p)``: how many of the
topic's ``n`` chunks contain it; ``r_t(p)``: occurrences per 1,000 tokens in topic ``t``.

**Selection.** A phrase qualifies when ``f(p) >= 3``, or ``f(p) >= 2`` when the author marked
it at least once (in a heading, a code span or emphasis). Termhood is the C-value
(Frantzi et al.): ``C(p) = log2(1 + words(p)) * (f(p) - mean f of the longer candidates
containing p)``, the mean over none being 0; phrases with ``C(p) <= 0`` only ever occur inside
one longer phrase and are dropped. The ``max_keywords`` phrases with the highest
``C(p) * specificity(p)`` are kept (ties by name).

**Authority score** (integer 1-10)::

    specificity = r_T(p) / sum over every topic t of the site of r_t(p)      (0..1]
    spread      = log(1 + d(p)) / log(1 + n)                                  (0..1], 1 if n == 1
    score       = 1 + floor(9 * sqrt(specificity * spread) + 0.5)

The geometric mean needs both: 10 means the phrase is used only in this topic and in (nearly)
all of its chunks; 7-9 a phrase mostly of this topic that recurs through it; 4-6 a phrase
shared with other topics or confined to a part of this one; 1-3 a phrase used mostly elsewhere
and mentioned here in passing.

Every phrase of the table matches at least one chunk of the topic with
``pipeline.topicspec.keywords.keywords_in`` (checked; a phrase that would not is dropped).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from pipeline.topicspec.keywords import GENERATED_MARKER, Keyword, keyword_pattern, may_occur
from pipeline.topicspec.phrases import count_candidates, marked, prose_lines, segments

MIN_FREQUENCY = 2
MAX_KEYWORDS = 20


@dataclass(frozen=True)
class PhraseStats:
    """What the score of one phrase in one topic is computed from."""

    name: str
    occurrences: int  # f(p) in the topic
    chunks: int  # d(p)
    specificity: float
    spread: float
    cvalue: float
    score: int


def _words(phrase: str) -> int:
    return sum(len(re.split(r"[-_.+]", token)) for token in phrase.split())


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5 + 1e-9))


def _contains(longer: str, shorter: str) -> bool:
    return f" {shorter} " in f" {longer} "


def _inner_phrases(phrase: str) -> set[str]:
    """Every ``shorter`` other than ``phrase`` with ``_contains(phrase, shorter)``: its proper
    contiguous runs of tokens (tokens hold no space, so a match always covers whole tokens)."""
    tokens = phrase.split(" ")
    size = len(tokens)
    return {" ".join(tokens[i:j]) for i in range(size) for j in range(i + 1, size + 1) if j - i < size}


@dataclass
class TopicCounts:
    """What the extractor keeps of one topic's chunk spans (``count_topic``): a pure function of
    those spans, so a build may keep it for a topic whose spans did not change (``reuse/memo.py``)."""

    chunks: int  # n: the topic's chunks
    tokens: int  # tokens of every segment: the denominator of r_t(p)
    totals: dict[str, int]  # f(p) of every candidate phrase
    marked: frozenset[str]  # candidates the author marked somewhere in the topic


def count_topic(texts: list[str]) -> TopicCounts:
    """The candidate counts of a topic whose chunk spans are ``texts``."""
    return sum_counts(len(texts), [count_part(texts)])


DocumentCounts = tuple  # (tokens, {phrase: f(p)}, sorted marked phrases) of some chunk spans


def count_part(texts: list[str]) -> DocumentCounts:
    """``count_topic``'s counts of some of a topic's chunk spans (a document's): the topic's are
    their sum (``sum_counts``), so a build may keep each document's (``topicspec/keywordtables.py``)."""
    total: Counter[str] = Counter()
    size = 0
    salient: set[str] = set()
    for text in texts:
        lines = prose_lines(text)  # one markdown parse serves both passes
        segs = segments(text, lines)
        total.update(count_candidates(segs))
        size += sum(len(tokens) for tokens in segs)
        salient |= marked(text, lines)
    return size, dict(total), sorted(salient)


def sum_counts(chunks: int, parts: list[DocumentCounts]) -> TopicCounts:
    """The ``TopicCounts`` of ``chunks`` chunk spans counted in ``parts`` (``count_part``), in
    their order: the same phrases in the same order as one ``count_part`` of them all."""
    total: Counter[str] = Counter()
    size = 0
    salient: set[str] = set()
    for tokens, totals, marks in parts:
        total.update(totals)
        size += tokens
        salient.update(marks)
    return TopicCounts(chunks, size, dict(total), frozenset(salient))


def lowered_texts(texts: list[str]) -> list[str | None]:
    """Each text lowercased where it is ASCII (None elsewhere): what ``chunk_count`` screens with."""
    return [text.lower() if text.isascii() else None for text in texts]


def chunk_count(phrase: str, texts: list[str], lowered: list[str | None]) -> int:
    """d(p): how many of ``texts`` the keyword matcher finds ``phrase`` in (``lowered``:
    ``lowered_texts(texts)``). A sum over texts, so a topic's is the sum of its documents'."""
    pattern = keyword_pattern(phrase)
    return sum(1 for text, low in zip(texts, lowered) if may_occur(phrase, low) and pattern.search(text))


class KeywordExtractor:
    """Authority tables from a whole site's chunk texts: ``topics`` maps a topic (directory) to
    the source spans of its chunks. Build once per site; ``stats(topic)``/``table(topic)``.
    ``from_counts`` builds the same extractor from each topic's ``count_topic``."""

    def __init__(self, topics: dict[str, list[str]], *, max_keywords: int = MAX_KEYWORDS):
        # Only each topic's totals are kept, never one Counter per chunk: a site's per-chunk
        # phrase counts are its largest structure (hundreds of phrases a chunk).
        self._init({topic: count_topic(texts) for topic, texts in topics.items()}, topics.__getitem__, max_keywords)

    @classmethod
    def from_counts(
        cls, counts: dict[str, TopicCounts], texts: Callable[[str], list[str]], *, max_keywords: int = MAX_KEYWORDS,
        chunk_counts: dict[str, dict[str, int]] | None = None, termhood: dict[str, list] | None = None,
        chunk_counters: dict[str, Callable[[str], int]] | None = None,
    ) -> "KeywordExtractor":
        """The extractor of a site whose topics have ``counts``: the same stats as
        ``KeywordExtractor({t: texts(t) for t in counts})``. ``texts(topic)`` (a topic's chunk
        spans) is called only for a phrase whose chunk count d(p) ``chunk_counts[topic]`` lacks;
        the counts it finds are added there (a pure function of the spans and the phrase).
        ``chunk_counters[topic]``: a function giving that count instead (``chunk_count`` summed
        by document), so ``texts(topic)`` is not called for the topic.
        ``termhood[topic]``: the topic's ``_termhood`` when known (a function of its counts);
        the ones computed are added there."""
        extractor = cls.__new__(cls)
        extractor._init(counts, texts, max_keywords)
        extractor._chunk_counts = chunk_counts if chunk_counts is not None else {}
        extractor._chunk_counters = chunk_counters if chunk_counters is not None else {}
        extractor._cvalues = termhood if termhood is not None else {}
        return extractor

    def _init(self, counts: dict[str, TopicCounts], texts: Callable[[str], list[str]], max_keywords: int) -> None:
        self.max_keywords = max_keywords
        # by topic name: specificity sums the rates of every topic in this order
        self._counts = {topic: counts[topic] for topic in sorted(counts)}
        self._texts = texts
        self._chunk_counts: dict[str, dict[str, int]] = {}
        self._chunk_counters: dict[str, Callable[[str], int]] = {}
        self._everywhere: dict[str, float] = {}
        self._cvalues: dict[str, list] = {}  # topic -> its ``_termhood``

    def _specificity(self, topic: str, phrase: str) -> float:
        counts = self._counts[topic]
        f = counts.totals.get(phrase)
        mine = 1000.0 * f / (counts.tokens or 1) if f is not None else 0.0
        everywhere = self._everywhere.get(phrase)
        if everywhere is None:
            # r_t(p) summed over every topic in name order, skipping the topics without p: adding
            # 0.0 to a positive sum changes no bit, so this is the sum over all topics. Kept per
            # phrase: every topic that ranks p needs the same sum.
            everywhere = 0
            for c in self._counts.values():
                g = c.totals.get(phrase)
                if g is not None:
                    everywhere += 1000.0 * g / (c.tokens or 1)
            self._everywhere[phrase] = everywhere
        return mine / everywhere if everywhere else 0.0

    def stats(self, topic: str) -> list[PhraseStats]:
        """The selected phrases of ``topic`` with their numbers, highest score first, then by name."""
        counts = self._counts.get(topic)
        total = counts.totals if counts is not None else {}
        n = counts.chunks if counts is not None else 0
        salient = counts.marked if counts is not None else frozenset()
        termhood = self._cvalues.get(topic)
        if termhood is None:
            termhood = self._cvalues[topic] = _termhood(total, salient)
        ranked = []
        for phrase, cvalue in termhood:
            specificity = self._specificity(topic, phrase)
            ranked.append((round(cvalue * specificity, 6), phrase, cvalue, specificity))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        known = self._chunk_counts.setdefault(topic, {})
        texts: list[str] | None = None
        lowered: list[str | None] = []
        out = []
        for _, phrase, cvalue, specificity in ranked:
            if len(out) == self.max_keywords:
                break
            chunks = known.get(phrase)
            if chunks is None and counts is not None and topic in self._chunk_counters:
                chunks = known[phrase] = self._chunk_counters[topic](phrase)
            elif chunks is None:
                if texts is None:  # read only when a phrase's chunk count is not known
                    texts = self._texts(topic) if counts is not None else []
                    lowered = lowered_texts(texts)
                chunks = known[phrase] = chunk_count(phrase, texts, lowered)
            if chunks == 0:
                continue  # tokenization found it, the matcher would not: never publish it
            spread = 1.0 if n <= 1 else math.log(1 + min(chunks, n)) / math.log(1 + n)
            score = 1 + _round_half_up(9 * round(math.sqrt(specificity * spread), 6))
            out.append(PhraseStats(phrase, total[phrase], chunks, round(specificity, 4), round(spread, 4), round(cvalue, 4), min(score, 10)))
        return sorted(out, key=lambda s: (-s.score, s.name))

    def table(self, topic: str) -> list[Keyword]:
        """The authority table of ``topic``: ``Keyword(name, score)``, highest score first."""
        return [Keyword(s.name, s.score) for s in self.stats(topic)]


def _termhood(total: dict[str, int], salient: frozenset[str] | set[str]) -> list:
    """``[[phrase, C(p)], ...]`` of a topic's qualifying phrases with ``C(p) > 0`` (module
    docstring, Selection), from its counts alone: the part of a topic's ranking that does not
    depend on other topics."""
    frequent = {p: f for p, f in total.items() if f >= MIN_FREQUENCY + (p not in salient)}
    longer_by_phrase: dict[str, list[int]] = {p: [] for p in frequent}
    for longer, f in frequent.items():
        # The phrases ``longer`` contains (``_contains``) are its proper runs of whole tokens:
        # at most MAX_WORDS² of them, where testing every frequent phrase was quadratic in
        # the topic's vocabulary (minutes for a topic of a few thousand documents).
        for shorter in _inner_phrases(longer):
            if shorter in longer_by_phrase:
                longer_by_phrase[shorter].append(f)
    out = []
    for phrase, f in frequent.items():
        nested = longer_by_phrase[phrase]
        cvalue = math.log2(1 + _words(phrase)) * (f - (sum(nested) / len(nested) if nested else 0.0))
        if cvalue > 1e-9:
            out.append([phrase, cvalue])
    return out


def render_table(topic: str, stats: list[PhraseStats]) -> str:
    """The generated ``_keywords/words.md`` of ``topic``: the marker line, a note, and the table
    (``keyword`` and ``score`` columns first, the numbers behind the score after them)."""
    lines = [
        GENERATED_MARKER,
        f"# Keywords: {topic or '/'}",
        "",
        "Generated by the pipeline's KeywordExtractor because this topic has no `_keywords/words.md`",
        "of its own, and rewritten on every build. To take it over, copy it into the content folder",
        "and delete the first line. score = 1 + round(9 * sqrt(specificity * spread)); see",
        "docs/DECISIONS.md.",
        "",
        "| keyword | score | occurrences | chunks | specificity | spread |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.name} | {s.score} | {s.occurrences} | {s.chunks} | {s.specificity:.4f} | {s.spread:.4f} |" for s in stats
    ]
    return "\n".join(lines) + "\n"
