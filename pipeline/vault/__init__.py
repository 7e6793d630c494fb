"""Obsidian vaults (issue 33): wikilinks, embeds, tags and aliases; the links authors wrote."""
