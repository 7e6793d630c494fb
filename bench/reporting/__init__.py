"""The parts of ``bench/report.py`` (which writes ``docs/BENCHMARKS.md``), one job a module: ``inputs`` (result
files, machine), ``formatting`` (numbers, tables), ``headline`` (the first table), ``targets`` (verdicts),
``plots`` (PNGs), ``sections`` (one per benchmark). Nothing here measures anything."""
