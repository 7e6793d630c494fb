"""A generated Obsidian vault (issue 33), and the benchmark step that builds it.

``make_vault(root, notes)`` writes a vault with wikilinks of every form (``[[Name]]``, another
case, ``[[folder/Name]]``, ``[[Name.md]]``, ``#heading``, ``#^block``, ``|alias``, the three
combined, ``[[#heading]]`` inside the note), embeds of notes, sections and attachments (``|200``
sizes included), inline ``#tags`` and nested ones, front-matter ``tags`` and ``aliases``, notes of
one name in two folders, names with spaces, ``&``, ``+``, dots and accents, markdown links between
notes, links inside lists, quotes and tables, wikilinks in code (which stay text), attachments and
an ``.obsidian/`` folder. Deterministic for a seed. Every wikilink names a file of the vault.

    .venv/bin/python -m bench.vault [--notes 1000] [--model]   # -> bench/.work/vault.json

builds it cold, again (no-op) and after one edit (a new link: the target's backlinks change), with
the hashing embedder unless ``--model``, and runs ``pipeline linkcheck``'s check on the site. The
planning stage (parse and chunk every note) is timed side by side with ``vault = false`` and
``true`` on the same notes (medians of three, alternating), the price of reading the vault syntax.
"""

from __future__ import annotations

import argparse
import json
import posixpath
import random
import statistics
import tempfile
import time
from pathlib import Path

FOLDERS = ["", "projects", "people", "areas/health", "archive/2023"]
ODD_NAMES = ["C++ tips", "Q&A notes", "Résumé", "v1.2 release", "Meeting"]
WORDS = ("alpha beta gamma delta vault note link graph index query chunk search model token "
         "budget agent reader page heading block tag alias embed folder static host").split()


def _name(i: int) -> str:
    return ODD_NAMES[i] if i < len(ODD_NAMES) else f"Note {i}"


def _sentence(rng: random.Random, n: int = 10) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def make_vault(root: Path, notes: int = 1000, seed: int = 0) -> dict:
    """Write the vault under ``root``; returns counts of what it wrote."""
    rng = random.Random(seed)
    root = Path(root)
    (root / ".obsidian").mkdir(parents=True, exist_ok=True)
    (root / ".obsidian" / "app.json").write_text('{"attachmentFolderPath": "attachments"}\n')
    (root / "attachments").mkdir(exist_ok=True)
    images = [f"image-{k}.png" for k in range(5)]
    for name in images:
        (root / "attachments" / name).write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
    (root / "attachments" / "spec.pdf").write_bytes(b"%PDF-1.4\n")
    paths = []
    for i in range(notes):
        folder = FOLDERS[i % len(FOLDERS)]
        paths.append((folder, _name(i)))
    paths.append(("projects", "Meeting"))  # a second "Meeting": [[Meeting]] resolves to the shortest path
    counts = {"notes": len(paths), "wikilinks": 0, "embeds": 0, "tags": 0}
    for i, (folder, name) in enumerate(paths):
        sections = [f"Section {k}" for k in range(1, rng.randint(2, 4) + 1)]
        lines = []
        front = []
        if i % 3 == 0:
            front.append(f"aliases: [{name} alias, N{i}]")
        if i % 4 == 0:
            front.append(f"tags: [topic{i % 7}, area/{FOLDERS[i % len(FOLDERS)].split('/')[0] or 'root'}]")
        if front:
            lines += ["---", *front, "---"]
        lines += [f"# {name}", "", _sentence(rng) + f" #kind{i % 5}", ""]
        counts["tags"] += 1

        def other() -> tuple[str, str]:
            j = rng.randrange(len(paths))
            return paths[j] if j != i else paths[(j + 1) % len(paths)]

        for k, section in enumerate(sections):
            f, n = other()
            lines.append(f"## {section}")
            lines.append("")
            forms = [
                f"[[{n}]]", f"[[{n.lower()}]]", f"[[{(f + '/') if f else ''}{n}]]", f"[[{n}.md]]",
                f"[[{n}#Section 1]]", f"[[{n}#^b1]]", f"[[{n}|as {n.lower()}]]", f"[[{n}#Section 1|see there]]",
                f"[[#{sections[0]}]]",
            ]
            chosen = rng.sample(forms, 3)
            counts["wikilinks"] += len(chosen)
            lines.append(f"{_sentence(rng)} See {chosen[0]}, {chosen[1]} and {chosen[2]}. ^b{k + 1}")
            lines.append("")
            layout = k % 4
            f2, n2 = other()
            if layout == 0:
                lines += [f"- a list item naming [[{n2}]]", f"  - nested: ![[{n2}#Section 1]]", ""]
                counts["embeds"] += 1
                counts["wikilinks"] += 1
            elif layout == 1:
                lines += [f"> quoted: [[{n2}|a quote]] and #quoted/tag", ""]
                counts["wikilinks"] += 1
                counts["tags"] += 1
            elif layout == 2:
                lines += ["| note | link |", "| --- | --- |", f"| {k} | [[{n2}#^b1]] and [[{n2}\\|in a table]] |", ""]
                counts["wikilinks"] += 2
            else:
                target = posixpath.relpath(f"{f2}/{n2}.md" if f2 else f"{n2}.md", folder or ".")
                lines += [f"A markdown link: [to {n2}](<{target}>).", ""]
            if k == 0:
                image = rng.choice(images)
                lines += [f"![[{image}]] and ![[{image}|200]] and ![[spec.pdf]] and ![[{n}]]", ""]
                counts["embeds"] += 4
            if k == 1:
                lines += ["`[[not a link]]` and", "```", "[[nor this]] #nor-this", "```", ""]
        text = "\n".join(lines) + "\n"
        path = root / folder / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return counts


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
        *([f"Largest index file (a listing page or a note's resource, its links and backlinks paged): "
           f"{r['largest_index_bytes']:,} bytes.", ""] if "largest_index_bytes" in r else []),
        f"Planning the same notes (parse and chunk; medians of 3, alternating): plain markdown {r['plan_plain_s']} s, "
        f"as a vault {r['plan_vault_s']} s ({r['plan_vault_s'] / r['plan_plain_s']:.2f}x: wikilinks, tags and link "
        "destinations need markdown-it-py's inline parse of every paragraph).",
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--model", action="store_true", help="the real default model instead of the hashing embedder")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / ".work" / "vault.json")
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
        from pipeline.parsing.tokens import default_counter

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
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
