"""Candidate key phrases of markdown: prose segments, tokens, and the 2-4 word phrases in them.

Pure and deterministic. Definitions (docs/DECISIONS.md "Generated keyword tables"; ``extract.py`` counts and scores them):

**Candidates.** Each chunk's source span is reduced to prose segments: code blocks (as
markdown-it finds them, in quotes and lists too), HTML, link targets, markup and MkDocs markup
(include macros, admonition markers, attribute lists, file paths: ``strip_markup``) are
dropped, and segments break at punctuation, table cells, code
spans and line ends of headings. Tokens are lowercase runs of letters/digits, possibly joined
by ``- _ . +`` (``is_code``, ``index.json``, ``hal+json``; a leading ``_`` is kept on such
compounds: ``_links.self``). A candidate phrase is 2-4
consecutive tokens of one segment, none of them a stop word, with a letter somewhere — or one
compound token (``compile-time``, ``base_url``). Plain single words are never key phrases.

Guarantees: ``candidates`` equals testing every n-gram of every segment with ``_phrase_ok``
(tests/test_keywords_phrases.py checks it against the definition); code, macros, paths and link
targets never yield a phrase.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

from pipeline.parsing.markdown import parse_markdown

MIN_WORDS, MAX_WORDS = 2, 4

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


def prose_lines(markdown: str) -> list[str]:
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
    at any depth of quotes and list items). Parsing is then skipped (tests/test_keywords_phrases.py)."""
    return "```" in markdown or "~~~" in markdown or "    " in markdown or "\t" in markdown


def prose(markdown: str, lines: list[str] | None = None) -> str:
    """``markdown`` without fenced code, HTML, link targets, URLs and heading markers. Wrapped
    paragraph lines are joined; headings, list items, quotes and blank lines start new lines.
    ``lines``: ``prose_lines(markdown)`` when the caller has them (one parse for both uses)."""
    kept: list[str] = []
    for line in prose_lines(markdown) if lines is None else lines:
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
    for line in prose_lines(markdown) if lines is None else lines:
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
    return count_candidates(segments(markdown))


_ALPHA = re.compile(r"[^\W\d_]")
_COMPOUND = re.compile(r"[^\W_][-_.+][^\W_]")


@lru_cache(maxsize=1 << 16)
def _token_info(token: str) -> tuple[bool, bool, bool]:
    """(may sit in a phrase, has a letter, may start one): ``_phrase_ok`` per token."""
    ok = _ok_token(token)
    return ok, _ALPHA.search(token) is not None, ok and not token.isdigit()


def count_candidates(segs: list[list[str]]) -> Counter[str]:
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
