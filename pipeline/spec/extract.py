"""KeywordExtractor: an authority table for a topic that has no ``_keywords/words.md``.

Pure and deterministic: the same texts give the same table. Definitions (docs/INTELLIGENCE.md):

**Candidates.** Each chunk's source span is reduced to prose segments: code blocks (as
markdown-it finds them, in quotes and lists too), HTML, link targets, markup and MkDocs markup
(include macros, admonition markers, attribute lists, file paths: ``strip_markup``) are
dropped, and segments break at punctuation, table cells, code
spans and line ends of headings. Tokens are lowercase runs of letters/digits, possibly joined
by ``- _ . +`` (``is_code``, ``index.json``, ``hal+json``; a leading ``_`` is kept on such
compounds: ``_links.self``). A candidate phrase is 2-4
consecutive tokens of one segment, none of them a stop word, with a letter somewhere — or one
compound token (``compile-time``, ``base_url``). Plain single words are never key phrases.

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
``pipeline.spec.keywords.keywords_in`` (checked; a phrase that would not is dropped).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from pipeline.parsing.markdown import parse_markdown
from pipeline.spec.keywords import GENERATED_MARKER, Keyword, keyword_pattern, may_occur

MIN_WORDS, MAX_WORDS = 2, 4
MIN_FREQUENCY = 2
MAX_KEYWORDS = 20

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by can cannot could did do does doing done down during each
    either else even every few for from further get gets got had has have having he her here
    hers herself him himself his how however i if in into is it its itself just less let like
    made make makes many may me might more most much must my myself need needs neither no nor
    not now of off often on once one only onto or other others otherwise our ours ourselves out
    over own per rather same see several shall she should since so some such than that the
    their theirs them themselves then there therefore these they this those though through
    thus to too two under until up upon us use used uses using very via was way we well were
    what when where whether which while who whom whose why will with within without would yet
    you your yours yourself yourselves e.g i.e etc eg ie first second new way ways still three
    four five six seven eight nine ten zero yes
    """.split()
)
"""English function words and fillers that never start, end or sit inside a key phrase."""

_HTML = re.compile(r"<!--.*?-->|</?[A-Za-z][^>]*>", re.S)
_IMAGE_OR_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_URL = re.compile(r"(?:https?|ftp)://\S+|www\.\S+")
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+")
_TOKEN = re.compile(r"(?<!\w)_?[^\W_]+(?:[-_.+][^\W_]+)*")
# Everything that ends a phrase: sentence and clause punctuation, brackets, quotes, pipes,
# backticks (code spans are their own segments), slashes, and line ends of headings.
_BREAK = re.compile(r"[,;:!?()\[\]{}\"|/\\=<>\n]|[.'](?=\s|$)|(?<=\s)'")
_MARKED = re.compile(r"`+([^`\n]+?)`+|\*\*([^*\n]+?)\*\*|__([^_\n]+?)__|(?<![\w*])\*([^*\n]+?)\*(?![\w*])|(?<![\w_])_([^_\n]+?)_(?![\w_])")
# MkDocs/FastAPI markup that is no prose (issue 13): include macros (``{* ../../docs_src/x.py
# hl[3] *}``, ``{! x.md !}``, ``--8<-- "file"``), heading attribute lists (``{ #anchor }``),
# admonition and tab markers (``/// tip | Title``, ``////``, ``!!! note "Title"``,
# ``???+ note``): the marker goes, a title stays as its own line. And file paths
# (``app/routers/items.py``, ``../docs_src/``): a run with a slash that starts with ``.``, ``/`` or
# ``~``, ends with ``/`` or a file extension, has two slashes or an ``_``. ``input/output`` stays.
_MACRO = re.compile(r"\{\*.*?\*\}|\{!.*?!\}|^[ \t]*-{2}8<-{2}.*$", re.M)
_ATTR_LIST = re.compile(r"[ \t]*\{:?[ \t]*[#.][^{}\n]*\}")
_ADMONITION = re.compile(r"""^[ \t]*(?:/{3,}|!{3}|\?{3}\+?)[ \t]*(?:[\w-]+)?[ \t]*(?:\|[ \t]*)?(?:"([^"\n]*)"|(.*))$""", re.M)
_PATH = re.compile(r"(?<![\w/.~])(?:[.~]{0,2}/)?[\w.+-]+(?:/[\w.+-]+)+/?(?![\w/])")


def _is_path(run: str) -> bool:
    last = run.rstrip("/").rsplit("/", 1)[-1]
    if run.startswith((".", "/", "~")) or run.endswith("/") or run.count("/") >= 2 or "_" in run:
        return True
    return bool(re.search(r"\.[A-Za-z]\w{0,4}$", last))


def strip_markup(markdown: str) -> str:
    """``markdown`` without include macros, attribute lists, admonition markers and file paths
    (each becomes a phrase break), so none of them can become a keyword."""
    # Each pattern runs only where the text holds the literal every match of it needs: most
    # chunks and nearly every marked span hold none, and a regex scan per pattern was the
    # larger part of keyword extraction.
    text = markdown
    if "{" in text or "--8<--" in text:
        text = _MACRO.sub("\n", text)
    if "///" in text or "!!!" in text or "???" in text:
        text = _ADMONITION.sub(lambda m: (m.group(1) or m.group(2) or "").strip() + "\n", text)  # the title alone
    if "{" in text:
        text = _ATTR_LIST.sub(" ", text)
    if "/" not in text:
        return text
    return _PATH.sub(lambda m: " \n " if _is_path(m.group(0)) else m.group(0), text)


_BLOCK_START = re.compile(r"^[ \t]*(?:>[ \t]?)+|^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+|^[ \t]*\|")


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


def _prose_lines(markdown: str) -> list[str]:
    """The lines of ``markdown`` outside code blocks, fenced or indented, at any depth (in a
    blockquote or a list item too): markdown-it says which lines are code, so ``> ```yaml``
    hides its block as a renderer would. Markup that is no prose is stripped after that."""
    if not _may_hold_code(markdown):  # most marked spans and many chunks: no parse needed
        return strip_markup(markdown).splitlines()
    # A leading blank line: a span that starts with "---" must not be read as front matter.
    code = {number - 1 for number in parse_markdown("\n" + markdown).code_lines()}
    kept = [line for number, line in enumerate(markdown.split("\n")) if number not in code]
    return strip_markup("\n".join(kept)).splitlines()


def _may_hold_code(markdown: str) -> bool:
    """False when no line of ``markdown`` can be code to CommonMark: a fence needs three
    backticks or tildes, an indented block four columns of indentation (four spaces or a tab,
    at any depth of quotes and list items). Parsing is then skipped (tests/test_keywords_extract.py)."""
    return "```" in markdown or "~~~" in markdown or "    " in markdown or "\t" in markdown


def prose(markdown: str, lines: list[str] | None = None) -> str:
    """``markdown`` without fenced code, HTML, link targets, URLs and heading markers. Wrapped
    paragraph lines are joined; headings, list items, quotes and blank lines start new lines.
    ``lines``: ``_prose_lines(markdown)`` when the caller has them (one parse for both uses)."""
    kept: list[str] = []
    for line in _prose_lines(markdown) if lines is None else lines:
        if not line.strip():
            kept.append("\n")
        elif _HEADING.match(line):
            kept.append("\n" + _HEADING.sub("", line).rstrip("# \t") + "\n")
        elif _BLOCK_START.match(line):
            kept.append("\n" + _BLOCK_START.sub("", line) + " ")
        else:
            kept.append(line + " ")
    text = "".join(kept)
    if "<" in text:  # as in strip_markup: only where a match can be
        text = _HTML.sub(" \n ", text)
    if "](" in text:
        text = _IMAGE_OR_LINK.sub(r"\1", text)
    if "://" in text or "www." in text:
        text = _URL.sub(" \n ", text)
    return text


def marked(markdown: str, lines: list[str] | None = None) -> set[str]:
    """Candidate phrases the author marked: inside a heading, a code span or emphasis."""
    spans: list[str] = []
    for line in _prose_lines(markdown) if lines is None else lines:
        if _HEADING.match(line):
            spans.append(_HEADING.sub("", line))
        spans.extend(next(g for g in m.groups() if g) for m in _MARKED.finditer(line))
    found: set[str] = set()
    for span in spans:
        found.update(candidates(span))
    return found


def segments(markdown: str, lines: list[str] | None = None) -> list[list[str]]:
    """Token runs of ``markdown`` between phrase breaks, lowercased (see module docstring)."""
    out = []
    for part in _BREAK.split(prose(markdown, lines).replace("*", " ").replace("`", " ")):
        tokens = [_token(t.lower()) for t in _TOKEN.findall(part)]
        if tokens:
            out.append(tokens)
    return out


def _token(token: str) -> str:
    """A leading ``_`` stays only on identifiers (``_embedded.chunks``); else it is emphasis."""
    return token if not token.startswith("_") or _compound(token[1:]) else token[1:]


def _compound(token: str) -> bool:
    return bool(re.search(r"[^\W_][-_.+][^\W_]", token))


def _ok_token(token: str) -> bool:
    return token not in STOP_WORDS and (len(token) > 1 or token.isdigit())


def _phrase_ok(tokens: tuple[str, ...]) -> bool:
    if not all(_ok_token(t) for t in tokens):
        return False
    if not any(re.search(r"[^\W\d_]", t) for t in tokens):
        return False
    if tokens[0].isdigit():
        return False
    return len(tokens) >= MIN_WORDS or _compound(tokens[0])


def candidates(markdown: str) -> Counter[str]:
    """Occurrences of every candidate phrase in ``markdown``."""
    return _count_candidates(segments(markdown))


_ALPHA = re.compile(r"[^\W\d_]")
_COMPOUND = re.compile(r"[^\W_][-_.+][^\W_]")


@lru_cache(maxsize=1 << 16)
def _token_info(token: str) -> tuple[bool, bool, bool]:
    """(may sit in a phrase, has a letter, may start one): ``_phrase_ok`` per token."""
    ok = _ok_token(token)
    return ok, _ALPHA.search(token) is not None, ok and not token.isdigit()


def _count_candidates(segs: list[list[str]]) -> Counter[str]:
    """``candidates`` of already segmented text. Same phrases and counts as testing every n-gram
    with ``_phrase_ok``: a phrase starts at a token that may start one and ends before the first
    token that may not sit in one; it needs a letter somewhere, and one token must be a compound."""
    counts: Counter[str] = Counter()
    for tokens in segs:
        info = [_token_info(t) for t in tokens]
        size = len(tokens)
        for i in range(size):
            ok, alpha, starts = info[i]
            if not starts:
                continue
            if alpha and _COMPOUND.search(tokens[i]):
                counts[tokens[i]] += 1
            for j in range(i + 1, min(i + MAX_WORDS, size)):
                if not info[j][0]:
                    break
                alpha = alpha or info[j][1]
                if alpha:
                    counts[" ".join(tokens[i : j + 1])] += 1
    return counts


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
    those spans, so a build may keep it for a topic whose spans did not change (``site/memo.py``)."""

    chunks: int  # n: the topic's chunks
    tokens: int  # tokens of every segment: the denominator of r_t(p)
    totals: dict[str, int]  # f(p) of every candidate phrase
    marked: frozenset[str]  # candidates the author marked somewhere in the topic


def count_topic(texts: list[str]) -> TopicCounts:
    """The candidate counts of a topic whose chunk spans are ``texts``."""
    total: Counter[str] = Counter()
    size = 0
    salient: set[str] = set()
    for text in texts:
        lines = _prose_lines(text)  # one markdown parse serves both passes
        segs = segments(text, lines)
        total.update(_count_candidates(segs))
        size += sum(len(tokens) for tokens in segs)
        salient |= marked(text, lines)
    return TopicCounts(len(texts), size, dict(total), frozenset(salient))


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
    ) -> "KeywordExtractor":
        """The extractor of a site whose topics have ``counts``: the same stats as
        ``KeywordExtractor({t: texts(t) for t in counts})``. ``texts(topic)`` (a topic's chunk
        spans) is called only for a phrase whose chunk count d(p) ``chunk_counts[topic]`` lacks;
        the counts it finds are added there (a pure function of the spans and the phrase).
        ``termhood[topic]``: the topic's ``_termhood`` when known (a function of its counts);
        the ones computed are added there."""
        extractor = cls.__new__(cls)
        extractor._init(counts, texts, max_keywords)
        extractor._chunk_counts = chunk_counts if chunk_counts is not None else {}
        extractor._cvalues = termhood if termhood is not None else {}
        return extractor

    def _init(self, counts: dict[str, TopicCounts], texts: Callable[[str], list[str]], max_keywords: int) -> None:
        self.max_keywords = max_keywords
        # by topic name: specificity sums the rates of every topic in this order
        self._counts = {topic: counts[topic] for topic in sorted(counts)}
        self._texts = texts
        self._chunk_counts: dict[str, dict[str, int]] = {}
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
            if chunks is None:
                if texts is None:  # read only when a phrase's chunk count is not known
                    texts = self._texts(topic) if counts is not None else []
                    lowered = [text.lower() if text.isascii() else None for text in texts]
                pattern = keyword_pattern(phrase)
                chunks = known[phrase] = sum(1 for text, low in zip(texts, lowered) if may_occur(phrase, low) and pattern.search(text))
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
        "docs/INTELLIGENCE.md.",
        "",
        "| keyword | score | occurrences | chunks | specificity | spread |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s.name} | {s.score} | {s.occurrences} | {s.chunks} | {s.specificity:.4f} | {s.spread:.4f} |" for s in stats
    ]
    return "\n".join(lines) + "\n"
