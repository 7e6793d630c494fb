"""Built-in strategies; importing this package registers them."""

from pipeline.chunking.strategies import markdown  # noqa: F401
