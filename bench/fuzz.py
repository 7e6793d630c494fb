"""``python -m bench.fuzz --cases 100000``: the long fuzz campaign over generated markdown, front
matter and file names (issue 15, point 8); the cases and the invariants checked are
``tests/fuzzcases.py``'s, of which ``tests/test_fuzz.py`` runs a few thousand."""

from __future__ import annotations

import sys
import time
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings

from bench import WORK, arguments, write_json
from tests.fuzzcases import cases, check_case


def run(n: int, counter, *, seed: int | None = None) -> Counter:
    """Run ``n`` generated cases; returns the outcome counts (raises on the first failure)."""
    outcomes: Counter = Counter()

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
              derandomize=seed is not None)
    @given(cases())
    def one(case):
        outcomes[check_case(*case, counter)] += 1

    one()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__, WORK / "fuzz.json")
    parser.add_argument("--cases", type=int, default=100_000, help="generated cases (default 100,000)")
    parser.add_argument("--seed", type=int, default=None, help="derandomize (same cases every run)")
    args = parser.parse_args(argv)
    from pipeline.embedding.models import default_counter

    counter = default_counter()
    started = time.perf_counter()
    try:
        outcomes = run(args.cases, counter, seed=args.seed)
    except Exception as exc:  # noqa: BLE001 - report the failing case, exit non-zero
        write_json(args.out, {"failed": f"{type(exc).__name__}: {exc}"})
        print(f"FAILED after {time.perf_counter() - started:.0f} s: {type(exc).__name__}: {exc}", file=sys.stderr)
        for note in getattr(exc, "__notes__", []):
            print(note, file=sys.stderr)
        return 1
    total = sum(outcomes.values())
    seconds = time.perf_counter() - started
    print(f"fuzz: {total:,} cases in {seconds:.0f} s, no traceback, every invariant held")
    write_json(args.out, {"cases": total, "seconds": round(seconds, 1), "outcomes": dict(sorted(outcomes.items()))})
    for outcome, count in sorted(outcomes.items()):
        print(f"  {outcome:<13} {count:>9,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
