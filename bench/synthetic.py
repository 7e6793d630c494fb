"""A deterministic synthetic markdown corpus for build benchmarks (``generate(out, n)``).

Document ``i`` depends only on ``(seed, i)``, so the first N documents of a 1,000-document corpus
are exactly the N-document corpus (the embedding cache of a big build serves a smaller one).
Each document is a realistic how-to/reference page: front matter, a title, an intro, then 1–4
``##`` sections (some with a ``###`` subsection) holding paragraphs, bullet or numbered lists and
fenced code (bash, python, yaml, json). With the ``markdown`` strategy at 256 pieces that gives
~2–6 chunks per document. Documents spread over nested topic directories (depth 1–3).

``edit_section(path, variant)`` rewrites one sentence of one middle section (for the
incremental-rebuild benchmark): exactly one chunk's text changes. ``QUERIES``: ten searches a
reader of such a site might type (the MCP and browser benchmarks ask them).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

# Nested topic directories (depth 1-3).
TOPIC_DIRS = [
    "getting-started",
    "getting-started/installation",
    "getting-started/tutorials",
    "guides/configuration",
    "guides/configuration/advanced",
    "guides/deployment",
    "guides/deployment/containers",
    "guides/deployment/cloud/aws",
    "guides/deployment/cloud/gcp",
    "guides/security",
    "guides/security/authentication",
    "guides/performance",
    "reference/cli",
    "reference/api/rest",
    "reference/api/python",
    "reference/configuration",
    "reference/formats",
    "operations/monitoring",
    "operations/monitoring/alerts",
    "operations/backup",
    "operations/upgrades",
    "operations/troubleshooting",
    "concepts/architecture",
    "concepts/data-model",
    "concepts/storage",
    "concepts/networking",
    "integrations/databases",
    "integrations/messaging",
    "integrations/observability",
    "community/contributing",
]

NOUNS = """scheduler worker queue cluster node replica shard index cache token session request response
endpoint service gateway proxy volume snapshot backup bucket object record table column schema
migration transaction lock lease timeout retry policy quota limit budget metric counter gauge
histogram alert dashboard log trace span event stream topic partition consumer producer offset
checkpoint manifest bundle artifact release version channel plugin extension hook handler filter
middleware route certificate key secret credential role permission account tenant namespace
workspace project pipeline stage job task step runner agent daemon controller operator resource
configuration profile environment variable flag option parameter default template layout theme
document chunk embedding vector model tokenizer parser compiler interpreter runtime container image
registry mirror repository branch commit tag changelog""".split()

VERBS = """stores reads writes validates rejects accepts caches evicts schedules retries batches streams
compresses encrypts decrypts signs verifies rotates renews expires replicates partitions rebalances
indexes queries filters sorts merges splits emits collects exports imports migrates restores
snapshots upgrades rolls back pins resolves loads unloads starts stops restarts drains throttles
limits routes forwards balances registers discovers watches notifies reports logs traces""".split()

ADJECTIVES = """default optional required internal external primary secondary stale fresh durable
transient idempotent incremental concurrent sequential distributed local remote encrypted
compressed cached pending active inactive healthy degraded read-only writable versioned
immutable configurable deterministic lazy eager bounded unbounded regional global""".split()

ADVERBS = """automatically periodically safely quickly lazily eagerly atomically concurrently
transparently explicitly implicitly gradually immediately""".split()

SECTION_TITLES = [
    "Overview", "Prerequisites", "Installation", "Configuration", "Usage", "Examples",
    "How it works", "Limits", "Troubleshooting", "Security considerations", "Performance tuning",
    "Monitoring", "Upgrading", "Rolling back", "Options", "Environment variables",
    "Error handling", "Best practices", "Known issues", "Migration notes", "Design", "Testing",
]

SUBSECTION_TITLES = [
    "Defaults", "Example", "Caveats", "On Linux", "On macOS", "With Docker", "In CI",
    "Advanced options", "Common errors", "Verifying the result",
]

QUERIES = [
    "how do I configure the cache timeout", "retry policy for failed webhooks", "rotate the signing key",
    "backup schedule and restore", "deploy containers to the cloud", "limit requests per token",
    "what does the scheduler do when a worker fails", "set the log level", "migrate the database schema",
    "authentication with tokens",
]

TITLE_VERBS = ["Configuring", "Deploying", "Monitoring", "Scaling", "Debugging", "Securing",
               "Understanding", "Migrating", "Testing", "Tuning", "Backing up", "Restoring"]


def _sentence(rng: random.Random) -> str:
    n1, n2, n3 = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(NOUNS)
    v, a, adv = rng.choice(VERBS), rng.choice(ADJECTIVES), rng.choice(ADVERBS)
    forms = [
        f"The {a} {n1} {v} every {n2} before the {n3} is ready.",
        f"Each {n1} {adv} {v} the {a} {n2}, so the {n3} stays consistent.",
        f"When the {n1} is {a}, the {n2} {v} it and records a {n3}.",
        f"If a {n1} fails, the {n2} {v} the {a} {n3} {adv}.",
        f"Set `{n1}.{n2}` to `{rng.randint(1, 512)}` to change how the {n3} {v} requests.",
        f"By default the {n1} {v} up to {rng.randint(2, 64)} {n2}s per {n3}.",
        f"A {a} {n1} never {v} a {n2} that another {n3} still holds.",
        f"Use the `--{n1}-{n2}` flag when the {n3} must be {a}.",
        f"The {n1} {v} the {n2} in {rng.randint(10, 900)} ms on a {a} {n3}.",
        f"Note that the {a} {n1} {v} only the {n2} named in the {n3}.",
    ]
    return rng.choice(forms)


def _paragraph(rng: random.Random, lo: int = 2, hi: int = 4) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(lo, hi)))


def _list(rng: random.Random) -> str:
    numbered = rng.random() < 0.4
    items = []
    for k in range(rng.randint(3, 5)):
        marker = f"{k + 1}." if numbered else "-"
        n1, n2 = rng.choice(NOUNS), rng.choice(NOUNS)
        items.append(f"{marker} **{n1}**: {_sentence(rng)[:-1].lower()} for the {n2}.")
    return "\n".join(items)


def _code(rng: random.Random) -> str:
    kind = rng.choice(["bash", "python", "yaml", "json"])
    n1, n2, n3 = rng.choice(NOUNS), rng.choice(NOUNS), rng.choice(NOUNS)
    if kind == "bash":
        lines = [f"tool {n1} create {n2}-{rng.randint(1, 99)} --{n3} {rng.randint(1, 16)}",
                 f"tool {n1} status --format json | jq '.{n2}'"]
        if rng.random() < 0.5:
            lines.append(f"export {n3.upper()}_{n1.upper()}={rng.randint(100, 9999)}")
    elif kind == "python":
        lines = [f"from tool import {n1.capitalize()}", "",
                 f"{n1} = {n1.capitalize()}({n2}={rng.randint(1, 64)}, {n3}=True)",
                 f"for item in {n1}.{rng.choice(VERBS).replace(' ', '_')}():",
                 f"    print(item.{n2}, item.{n3})"]
    elif kind == "yaml":
        lines = [f"{n1}:", f"  {n2}: {rng.randint(1, 100)}", f"  {n3}: {rng.choice(ADJECTIVES)}",
                 f"  {rng.choice(NOUNS)}s:", f"    - {rng.choice(NOUNS)}", f"    - {rng.choice(NOUNS)}"]
    else:
        lines = ["{", f'  "{n1}": {rng.randint(1, 100)},', f'  "{n2}": "{rng.choice(ADJECTIVES)}",',
                 f'  "{n3}": [{rng.randint(1, 9)}, {rng.randint(10, 99)}]', "}"]
    return f"```{kind}\n" + "\n".join(lines) + "\n```"


def _section_body(rng: random.Random) -> str:
    blocks = [_paragraph(rng)]
    for _ in range(rng.randint(0, 2)):
        roll = rng.random()
        blocks.append(_list(rng) if roll < 0.35 else _code(rng) if roll < 0.7 else _paragraph(rng, 1, 3))
    return "\n\n".join(blocks)


def document(i: int, seed: int = 0) -> tuple[str, str]:
    """(relative path, markdown text) of document ``i``: a pure function of ``(seed, i)``."""
    rng = random.Random(f"bench-synthetic:{seed}:{i}")
    topic = rng.choice(TOPIC_DIRS)
    subject = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    title = f"{rng.choice(TITLE_VERBS)} the {subject}"
    slug = "-".join(title.lower().replace("the ", "").split())
    parts = [
        "---",
        f"title: {title}",
        f"tags: [{rng.choice(NOUNS)}, {rng.choice(NOUNS)}]",
        f"weight: {rng.randint(1, 100)}",
        "---",
        "",
        f"# {title}",
        "",
        _paragraph(rng, 1, 3),
    ]
    for name in rng.sample(SECTION_TITLES, rng.randint(1, 4)):
        parts += ["", f"## {name}", "", _section_body(rng)]
        if rng.random() < 0.2:
            parts += ["", f"### {rng.choice(SUBSECTION_TITLES)}", "", _section_body(rng)]
    return f"{topic}/{slug}-{i:04d}.md", "\n".join(parts) + "\n"


def generate(out: Path, n_docs: int, seed: int = 0, *, clean: bool = True, folder: str | None = None) -> list[Path]:
    """Write documents 0..n_docs-1 under ``out``, in their topic folders or all in ``folder`` (a flat
    vault: their names are unique); returns their paths."""
    out = Path(out)
    if clean and out.exists():
        shutil.rmtree(out)
    paths = []
    for i in range(n_docs):
        rel, text = document(i, seed)
        path = out / (f"{folder}/{rel.rsplit('/', 1)[1]}" if folder else rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def edit_section(path: Path, variant: int) -> str:
    """Change one sentence in the body of the document's last ``##`` section (its first
    paragraph's last sentence gets a marker word). Returns the section heading edited."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    heads = [k for k, line in enumerate(lines) if line.startswith("## ")]
    if not heads:
        raise ValueError(f"{path}: no ## section to edit")
    h = heads[-1]
    k = h + 2  # heading, blank line, first paragraph
    base = lines[k].split(" [edit ")[0].rstrip()
    lines[k] = f"{base} [edit {variant}]"
    Path(path).write_text("\n".join(lines), encoding="utf-8")
    return lines[h]
