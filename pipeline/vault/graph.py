"""The links authors wrote between a site's documents, both ways (pure): each vault note's
``links`` (its manifest's, ``vault/notes.py``) and the ``backlinks`` they make, with the linked
documents' titles, for the spec record and the document's HAL ``_links`` (``index/hal.py``).

``authored_links`` answers for every document that has a ``links`` list (the notes of a vault):
``{"links": [{"source", "title"}], "backlinks": [...]}``, sources as site paths, links in the
order written, backlinks in path order.
"""

from __future__ import annotations

from typing import Iterable


def authored_links(documents: Iterable[tuple[str, str, list[str] | None]]) -> dict[str, dict]:
    """``documents``: (site path, title, links or None) of every document of the site."""
    documents = list(documents)
    titles = {source: title for source, title, _ in documents}
    out: dict[str, dict] = {}
    backlinks: dict[str, set[str]] = {}
    for source, _, links in documents:
        if links is None:
            continue
        targets = [t for t in dict.fromkeys(links) if t in titles and t != source]
        out[source] = {"links": [{"source": t, "title": titles[t]} for t in targets], "backlinks": []}
        for target in targets:
            backlinks.setdefault(target, set()).add(source)
    for target, sources in backlinks.items():
        if target in out:
            out[target]["backlinks"] = [{"source": s, "title": titles[s]} for s in sorted(sources)]
    return out
