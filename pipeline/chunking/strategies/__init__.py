"""Built-in strategies; importing this package registers them."""

from pipeline.chunking.strategies import markdown  # noqa: F401  (first: the others reuse it)
from pipeline.chunking.strategies import character, entry, paragraph, semantic, sentence, tokens  # noqa: F401
