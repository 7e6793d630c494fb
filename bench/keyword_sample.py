"""A fixed random sample of generated keywords, for judging keyword quality by hand.

``python -m bench.keyword_sample SITE [SITE ...] [--size 40] [--seed 13]`` reads every generated
``_keywords/words.md`` under the sites, lists ``(site, topic, keyword)`` sorted, and prints a
sample drawn with ``random.Random(seed)``: the same tables give the same sample, so a before
and an after build can be judged on the same method (docs/INTELLIGENCE.md, "Keyword quality on
real documentation").
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from pipeline.topicspec.keywords import is_generated, load_keywords


def generated_keywords(site: Path) -> list[tuple[str, str, str]]:
    """``(site name, topic, keyword)`` of every generated table under ``site``, sorted."""
    out = []
    for table in sorted(site.rglob("_keywords/words.md")):
        if is_generated(table):
            topic = table.parent.parent.relative_to(site).as_posix()
            out += [(site.name, topic, k.name) for k in load_keywords(table)]
    return sorted(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sites", nargs="+", type=Path)
    parser.add_argument("--size", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    everything = [k for site in args.sites for k in generated_keywords(site)]
    sample = random.Random(args.seed).sample(everything, min(args.size, len(everything)))
    print(f"{len(everything)} generated keywords; sample of {len(sample)} (seed {args.seed}):")
    for site, topic, name in sorted(sample):
        print(f"{site}\t{topic or '/'}\t{name}")


if __name__ == "__main__":
    main()
