"""Count tokens with the embedding model's own tokenizer, without importing torch.

The ``tokenizers`` library reads the model's ``tokenizer.json`` in ~30 ms; sentence-transformers
would cost seconds. Counts include the special tokens ([CLS] ... [SEP]) because the model's
``max_seq_length`` does: all-MiniLM-L6-v2 reads 256 pieces including them and drops the rest.

Span counts live in ``spans.py``, the Python WordPiece for ASCII runs in ``wordpiece.py``.
"""

from __future__ import annotations

import itertools
import operator
import re
import threading
from functools import lru_cache
from itertools import accumulate, compress, filterfalse
from pathlib import Path

from tokenizers import Tokenizer

from pipeline.parsing.spans import RUNS, RunMemo, RunOffsets, SpanCounter
from pipeline.parsing.wordpiece import AsciiWordPiece, splits_at_whitespace, tokenizer_config

_RUN = re.compile(r"[^ \t\n\r]+")
_MEMO_LIMIT = 1 << 19  # runs remembered per counter before the memo starts afresh


class TokenCounter:
    """Counts tokens as the embedding model will see them.

    For BERT-style tokenizers (``splits_at_whitespace``) counts are sums over the text's
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
        config = tokenizer_config(tokenizer)
        self.by_runs = splits_at_whitespace(config)
        self._ascii = AsciiWordPiece(config, tokenizer.model) if self.by_runs else None
        self._memo = self._new_memo()
        self._lock = threading.Lock()
        self._truncated: dict[tuple[str, int], str] = {}
        self._last: tuple[str, SpanCounter] | None = None  # strategies and ``assemble`` ask for the same text

    @classmethod
    def from_file(cls, path: str | Path, *, model_max_tokens: int | None = None) -> "TokenCounter":
        return cls(Tokenizer.from_file(str(path)), name=str(path), model_max_tokens=model_max_tokens)

    def _new_memo(self) -> RunMemo:
        if self._ascii is None:
            return RunMemo(RunOffsets(None))
        self._ascii.forget()  # its memo of words is bounded by the runs': dropped together
        return RunMemo(RunOffsets(self._ascii))

    def forget(self) -> None:
        """Start with an empty memo (benchmarks: a cold counter, as in a new process)."""
        self._memo = self._new_memo()
        self._truncated = {}
        self._last = None

    def _learn(self, runs) -> RunMemo:
        """Tokenize the runs not seen yet (one batch) and remember their pieces; returns a memo
        that holds every run of ``runs``."""
        with self._lock:
            return self._learn_locked(runs)

    def _learn_locked(self, runs) -> RunMemo:
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
        ids.update(zip(plain, self._ascii.counts(plain)))  # their offsets: on first use (``RunOffsets``)
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
        parts = RUNS.split(text)  # run, whitespace, run, ..., run (the first and last may be "")
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


class LazyTokenCounter(TokenCounter):
    """A ``TokenCounter`` of a tokenizer file that loads it (~0.2 s: the tokenizer and the
    WordPiece tables) when first asked to count: ``name`` and ``model_max_tokens``, all a
    build's chunking digest reads, need no load, and a no-op rebuild counts nothing. The load
    sets the counter's own attributes, so from then on nothing stands between a caller and them."""

    def __init__(self, path: str, *, model_max_tokens: int | None = None):  # the load is super().__init__
        self.name = str(path)
        self.model_max_tokens = model_max_tokens
        self._loading = threading.Lock()

    @property
    def loaded(self) -> bool:
        return "_tokenizer" in self.__dict__

    def __getattr__(self, attr: str):
        # only for an attribute not set yet: one the load sets (once, whichever thread asks first)
        if attr.startswith("__") or attr == "_loading":  # copy/pickle probes, a half-made instance
            raise AttributeError(attr)
        with self._loading:
            if not self.loaded:
                super().__init__(Tokenizer.from_file(self.name), name=self.name, model_max_tokens=self.model_max_tokens)
        return object.__getattribute__(self, attr)


@lru_cache(maxsize=8)
def counter_for(tokenizer_path: str, model_max_tokens: int | None = None) -> TokenCounter:
    """One shared TokenCounter per tokenizer file and limit (a ``LazyTokenCounter``: loaded at
    its first count)."""
    return LazyTokenCounter(tokenizer_path, model_max_tokens=model_max_tokens)
