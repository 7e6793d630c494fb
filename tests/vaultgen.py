"""A generated Obsidian vault (issue 33) for the vault tests and ``bench/vault.py``.

``make_vault(root, notes)`` writes a vault with wikilinks of every form (``[[Name]]``, another
case, ``[[folder/Name]]``, ``[[Name.md]]``, ``#heading``, ``#^block``, ``|alias``, the three
combined, ``[[#heading]]`` inside the note), embeds of notes, sections and attachments (``|200``
sizes included), inline ``#tags`` and nested ones, front-matter ``tags`` and ``aliases``, notes of
one name in two folders, names with spaces, ``&``, ``+``, dots and accents, markdown links between
notes, links inside lists, quotes and tables, wikilinks in code (which stay text), attachments and
an ``.obsidian/`` folder. Deterministic for a seed. Every wikilink names a file of the vault.
"""

from __future__ import annotations

import posixpath
import random
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
