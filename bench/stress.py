"""``python -m bench.stress``: the build and ``pipeline serve`` under a hostile or crowded machine
(issue 35) at bench size: symlink race, random SIGKILLs, slow-header, slow-body and keep-alive clients;
the functions are ``tests/stress.py``'s (the tests run them at a bounded size)."""

from __future__ import annotations

import json
import os
import shutil

from bench import WORK, arguments, write_json
from tests.stress import keepalive, kills, race, slow


def main(argv: list[str] | None = None) -> int:
    ap = arguments(__doc__, WORK / "stress.json", quick="small counts (a smoke run)")
    args = ap.parse_args(argv)
    scratch = WORK / "stress-scratch"
    q = args.quick
    results = {
        "race": race(scratch / "race", builds=60 if q else 300),
        "kills": kills(scratch / "kills", trials=10 if q else 100),
        "slow": slow(scratch / "slow", slow_clients=150, requests=20 if q else 100),
        "slow_body": slow(scratch / "slowbody", slow_clients=150, requests=20 if q else 100, body=True),
        "keepalive_100": keepalive(scratch / "ka100", clients=100, requests=10 if q else 40),
        "keepalive_200": keepalive(scratch / "ka200", clients=200, requests=10 if q else 40),
        "command": "python -m bench.stress" + (" --quick" if q else ""),
        "machine_load": list(os.getloadavg()),
    }
    shutil.rmtree(scratch, ignore_errors=True)
    write_json(args.out, results)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
