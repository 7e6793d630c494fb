"""WordPiece for runs of printable ASCII, in Python, and the check that a tokenizer splits at whitespace.

Guarantees: ``splits_at_whitespace(config)`` is True only for tokenizers whose word pieces never
span a space, tab, CR or LF, so that a text's pieces are its whitespace-separated runs' pieces
(what ``TokenCounter`` relies on to count by runs). ``AsciiWordPiece`` gives the same pieces and
counts as the tokenizer for a run of printable ASCII without an added token's text, and None for
any other run (the tokenizer must say); tests/test_tokens.py checks both against the tokenizer.
Pure: no I/O; imports neither ``tokenizers`` nor torch.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from itertools import accumulate, compress, filterfalse


def tokenizer_config(tokenizer) -> dict:
    """The tokenizer's JSON configuration (``Tokenizer.to_str``), or {} when it cannot be read."""
    try:
        config = json.loads(tokenizer.to_str())
    except Exception:  # noqa: BLE001 - any doubt: tokenize whole texts
        return {}
    return config if isinstance(config, dict) else {}


_PRE = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")  # the BERT pre-tokenizer on printable ASCII
_PRE_LINES = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\n]|\n")  # the same, newlines apart
_SEEDABLE = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")  # one word or one punctuation character to ``_PRE``
_NOT_PLAIN = re.compile(r"[^!-~\n]")  # in runs joined by newlines: a run that is not printable ASCII
_NOT_PLAIN_RUN = re.compile(r"[^!-~]")  # in one run: ``AsciiWordPiece._plain`` less its added-token check


class AsciiWordPiece:
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

    def __init__(self, wordpiece: AsciiWordPiece):
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


def splits_at_whitespace(config: dict) -> bool:
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
