"""Benchmarks (not part of the pipeline package)."""
