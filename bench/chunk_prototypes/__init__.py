"""Prototype chunking methods for ``bench/quality_experiments.py`` (what works moves into a
strategy): each function returns a split callable ``text -> [(start, end[, embedded text])]``
that the runner wraps in a ``Chunker``. ``markdown``: the shipped strategy, and with preceding
context; ``splitter``: packing and sentence variants patched into the splitter for one call;
``semantic``: the semantic strategy and the section/embedding-drift hybrid.
"""
