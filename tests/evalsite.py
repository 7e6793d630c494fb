"""A small site for the evaluation tests: three documents in two topics, a hostile heading, two
sections of different documents with the same text, and (in one variant) a ``qa-pairs.md``."""

from __future__ import annotations

from pathlib import Path

from conftest import write_tree
from pipeline.config import SiteConfig
from pipeline.embedding.hashing import HashingEmbedder
from pipeline.site.build import build

EVIL = "<script>alert('x')</script>"
SHARED = ("Restart the widget daemon after every change to its configuration file, "
          "otherwise the old values stay in memory until the next reboot of the machine.")

CONTENT = {
    "guide/setup.md": (
        "# Setup Guide\n\nHow to install the widget daemon on every platform.\n\n"
        "## Install on Linux\n\nUse apt to install the widgetd package, then enable the widgetd service with systemctl.\n\n"
        f"## Install on Windows {EVIL}\n\nRun the MSI installer and accept the firewall prompt for the widget port.\n\n"
        "### Troubleshooting\n\nWhen the installer stops with error 1603, remove the old version first.\n\n"
        f"## Applying changes\n\n{SHARED}\n"
    ),
    "guide/upgrade.md": (
        "# Upgrading\n\nMoving from version one to version two of the widget.\n\n"
        "## Database migration\n\nRun widget-migrate before starting the new daemon; it converts the sqlite schema.\n\n"
        f"## After the upgrade\n\n{SHARED}\n"
    ),
    "reference/config.md": (
        "# Configuration\n\nEvery option of widget.toml.\n\n"
        "## Port\n\nThe port option sets the TCP port the daemon listens on; the default is 8080.\n\n"
        "## Timeout\n\nThe timeout option bounds how long a request may take, in seconds.\n"
    ),
}

QA_PAIRS = (
    "# Questions\n\n"
    "## Q: How do I install the widget on Linux?\n"
    "With apt, see [Install on Linux](setup.md#install-on-linux).\n\n"
    "## Q: What does error 1603 mean when installing?\n"
    "An old version is still installed ([troubleshooting](setup.md#troubleshooting)).\n\n"
    "## Q: Must I restart the widget daemon after a change to its configuration file?\n"
    "Yes, or the old values stay in memory.\n\n"
    "## Q: Xylophone quartz juggling?\n"
    "Nothing in these documents.\n"
)

QUESTIONS = [
    {"question": "which package do I install with apt", "expect": "guide/setup.md#Install on Linux"},
    {"question": "error 1603 from the MSI installer", "expect": "guide/setup.md#troubleshooting"},
    {"question": "what TCP port does the daemon listen on", "expect": "reference/config.md#Port"},
    {"question": "how do I convert the sqlite schema", "expect": ["guide/upgrade.md"]},
    {"question": f"zebra migration patterns {EVIL}", "expect": "reference/config.md#Timeout"},
]


def build_site(root: Path, *, qa_pairs: bool) -> Path:
    files = dict(CONTENT)
    if qa_pairs:
        files["guide/qa-pairs.md"] = QA_PAIRS
    content = write_tree(root / "content", files)
    site = root / "site"
    build(content, site, SiteConfig(title=f"Widget {EVIL}", cache_dir=root / "cache", embedder="hashing"),
          embedder=HashingEmbedder(), progress=False)
    return site
