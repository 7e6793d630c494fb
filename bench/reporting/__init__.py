"""The parts of ``bench/report.py`` (``python -m bench.report``, which writes ``docs/BENCHMARKS.md``), one job a module:

- ``inputs``: where the result files are, loading them, the machine, lookups into loaded results;
- ``formatting``: numbers and markdown tables as the report writes them;
- ``targets``: the targets of the issues and their verdicts (*met* / *not met*) from the results;
- ``plots``: the PNGs under ``docs/bench/``;
- ``quality``, ``speed``, ``search``, ``checks``: the markdown of the report's sections, by kind of result.

Nothing here measures anything.
"""
