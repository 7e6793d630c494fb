"""Speed benchmarks: chunking MB/s vs the anchors, builds (cold, no-op, incremental, memory),
and encoding variants. Entry points: ``bench.speed.chunking``, ``bench.speed.builds``,
``bench.speed.encoding`` (each ``main(argv)`` writes a JSON under ``bench/.work/speed/``);
``bench.speed.build_worker`` is the one-build subprocess the build benchmarks time.
"""

from __future__ import annotations

import statistics
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCH_DIR.parent
SPEED_DIR = BENCH_DIR / ".work" / "speed"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None
