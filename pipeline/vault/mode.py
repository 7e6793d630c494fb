"""Whether a build reads CONTENT as an Obsidian vault, and what a vault leaves out (pure but for
one ``is_dir``).

``vault_config`` turns the config's ``vault = "auto"`` into true when CONTENT holds Obsidian's
settings folder (``.obsidian/``, hidden, so never published), and in a vault puts
``ATTACHMENTS_LEFT_OUT`` before the author's own ``exclude`` patterns unless
``vault_attachments`` is set: every file but documents and the pipeline's inputs is left out
(the author's later ``!*.png`` brings images back).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pipeline.config import SiteConfig

OBSIDIAN_DIR = ".obsidian"
ATTACHMENTS_LEFT_OUT = ("*", "!*/", "!*.md", "!*.yaml", "!*.yml", "!*.json", "!_chunking.toml")


def vault_config(content: Path, config: SiteConfig) -> SiteConfig:
    """``config`` with ``vault`` decided (a bool) and, in a vault, attachments excluded."""
    if isinstance(config.vault, bool) and config.vault is False:
        return config
    on = config.vault is True or (Path(content) / OBSIDIAN_DIR).is_dir()
    if not on:
        return replace(config, vault=False)
    if config.vault is True and config.exclude[: len(ATTACHMENTS_LEFT_OUT)] == ATTACHMENTS_LEFT_OUT:
        return config  # decided already
    exclude = config.exclude if config.vault_attachments else (*ATTACHMENTS_LEFT_OUT, *config.exclude)
    return replace(config, vault=True, exclude=exclude)
