"""An Obsidian vault (issue 33) of ``--notes`` generated notes (``tests/vaultgen.py``: wikilinks of
every form, embeds, tags, aliases, attachments, an ``.obsidian/`` folder) built as a site.

The vault is built cold, again (no-op) and after one edit (a new link: the target's backlinks
change), with the hashing embedder unless ``--model``, and ``pipeline linkcheck``'s check runs on
the site. The planning stage (parse and chunk every note) is timed side by side with ``vault = false`` and
``true`` on the same notes (medians of three, alternating), the price of reading the vault syntax.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from bench import WORK, arguments, write_json
from tests.vaultgen import make_vault

def _timed_build(content: Path, site: Path, config) -> float:
    from pipeline.site.build import build

    start = time.perf_counter()
    build(content, site, config, progress=False)
    return time.perf_counter() - start


def _planning(content: Path, vault: bool, counter) -> float:
    from pipeline.chunking.tool import plan_chunks
    from pipeline.config import SiteConfig

    start = time.perf_counter()
    plan_chunks(content, SiteConfig(embedder="hashing", vault=vault), counter)
    return time.perf_counter() - start


def report_section(r: dict | None) -> str:
    """The ``vault`` step's figures for docs/BENCHMARKS.md."""
    if not r:
        return "No `vault.json` (`python -m bench.vault`).\n"
    return "\n".join([
        f"A generated vault (`bench/vault.py`): {r['notes']} notes, {r['wikilinks']} wikilinks of every form, "
        f"{r['embeds']} embeds, `{r['embedder']}` embedder, one process.",
        "",
        "| cold build s | no-op s (median of 3) | one edit s (a new link) | links checked | broken | `.obsidian/` or attachments published |",
        "|---|---|---|---|---|---|",
        f"| {r['cold_s']} | {r['noop_s']} | {r['edit_s']} | {r['links_checked']} | {r['broken']} | "
        f"{'yes' if r['obsidian_published'] or r['attachments_published'] else 'no'} |",
        "",
        f"Largest index file (a listing page or a note's resource, its links and backlinks paged): {r['largest_index_bytes']:,} bytes.",
        "",
        f"Planning the same notes (parse and chunk; medians of 3, alternating): plain markdown {r['plan_plain_s']} s, "
        f"as a vault {r['plan_vault_s']} s ({r['plan_vault_s'] / r['plan_plain_s']:.2f}x: wikilinks, tags and link "
        "destinations need markdown-it-py's inline parse of every paragraph).",
        "",
    ])


def main() -> None:
    parser = arguments(__doc__, WORK / "vault.json")
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--model", action="store_true", help="the real default model instead of the hashing embedder")
    args = parser.parse_args()
    from pipeline.config import SiteConfig
    from pipeline.quiet import set_quiet
    from pipeline.site.linkcheck import check_site

    set_quiet()
    with tempfile.TemporaryDirectory(prefix="bench-vault-") as tmp:
        tmp = Path(tmp)
        counts = make_vault(tmp / "vault", args.notes)
        config = SiteConfig(embedder="minilm" if args.model else "hashing", cache_dir=tmp / "cache")
        cold = _timed_build(tmp / "vault", tmp / "site", config)
        noop = statistics.median(_timed_build(tmp / "vault", tmp / "site", config) for _ in range(3))
        edited = tmp / "vault" / "people" / "Note 7.md"
        edited.write_text(edited.read_text() + "\nOne more link: [[Note 11]].\n")
        edit = _timed_build(tmp / "vault", tmp / "site", config)
        report = check_site(tmp / "site")
        from pipeline.embedding.models import default_counter

        counter = default_counter()
        plain, vault = [], []
        for _ in range(3):
            plain.append(_planning(tmp / "vault", False, counter))
            vault.append(_planning(tmp / "vault", True, counter))
        index = json.loads((tmp / "site" / "index.json").read_text())
        result = {
            **counts, "embedder": config.embedder, "cold_s": round(cold, 2), "noop_s": round(noop, 2),
            "edit_s": round(edit, 2), "links_checked": report.checked, "broken": len(report.broken),
            "missing_in_source": len(report.missing_in_source),
            "obsidian_published": (tmp / "site" / ".obsidian").exists(),
            "attachments_published": (tmp / "site" / "attachments").exists(),
            "root_documents": index["documents"],  # index format 2: the listing's count (its entries are paged)
            # the largest index file a reader fetches (listings and document resources, backlinks paged within)
            "largest_index_bytes": max(p.stat().st_size for p in [*(tmp / "site").rglob("index.json"),
                                                                   *(tmp / "site").rglob("_index/*.json")]),
            "plan_plain_s": round(statistics.median(plain), 2), "plan_vault_s": round(statistics.median(vault), 2),
        }
    write_json(args.out, result)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
