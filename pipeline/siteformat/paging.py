"""The pager of the site's JSON resources: a listing, a document resource or a chunk manifest cut
into consecutive pages of at most ``PAGE_BYTES`` of compact JSON (``pack``), linked with HAL's
``first``/``prev``/``next`` (and ``last`` from the first page: ``paging_links``). A page holds one
entry alone when that entry is bigger. The same inputs give the same bytes."""

from __future__ import annotations

from typing import Callable

import orjson

from pipeline.siteformat.hrefs import site_href
from pipeline.siteformat.indexnames import PAGE_BYTES


def dumps(value: object) -> bytes:
    return orjson.dumps(value)


def pack(costs: list[int], room: Callable[[int], int], most: int | None = None) -> list[tuple[int, int]]:
    """Consecutive slices ``(start, end)`` of entries costing ``costs`` bytes: page ``p`` (from
    0) takes entries while their total stays within ``room(p)`` and, with ``most``, while it has
    fewer than ``most``; a page always takes at least one entry. ``[(0, 0)]`` for none."""
    slices: list[tuple[int, int]] = []
    start = 0
    while start < len(costs) or not slices:
        budget, end, used = room(len(slices)), start, 0
        while end < len(costs) and (most is None or end - start < most):
            if end > start and used + costs[end] > budget:
                break
            used += costs[end]
            end += 1
        slices.append((start, end))
        start = end
    return slices


def paging_links(base_url: str, dir_rel: str, name: Callable[[int], str], page: int, pages: int) -> dict:
    """``self`` and the paging links of page ``page`` of ``pages`` (``last`` on the first only)."""
    href = lambda p: site_href(base_url, dir_rel, name(p))  # noqa: E731
    links = {"self": {"href": href(page)}}
    if page > 1:
        links["first"] = {"href": href(1)}
        links["prev"] = {"href": href(page - 1)}
    if page < pages:
        links["next"] = {"href": href(page + 1)}
        if page == 1:
            links["last"] = {"href": href(pages)}
    return links


def worst_paging_links(base_url: str, dir_rel: str, name: Callable[[int], str], most_pages: int) -> dict:
    """Paging links at least as long as any page's (for a header's size before the pages are known)."""
    href = {"href": site_href(base_url, dir_rel, name(most_pages))}
    return {"self": href, "first": href, "prev": href, "next": href, "last": href}


def _number_cost(value: int) -> int:
    return len(str(value)) + 1


def json_cost(value: object) -> int:
    return len(dumps(value)) + 1


def cut_runs(order: list | None, most: int, cost_of: Callable[[object], int] = _number_cost) -> list[list]:
    """``order`` cut into consecutive runs of at most ``most`` bytes of JSON each (``cost_of`` an
    entry's, comma included; JSON numbers by default); an entry bigger than ``most`` runs alone."""
    if order is None:
        return []
    runs: list[list] = [[]]
    used = 2
    for i in order:
        cost = cost_of(i)
        if runs[-1] and used + cost > most:
            runs.append([])
            used = 2
        runs[-1].append(i)
        used += cost
    return runs


def paged_files(
    *, base_url: str, dir_rel: str, name: Callable[[int], str], costs: list[int],
    page: Callable[[int, int, dict, slice], dict], least: int = 1,
) -> dict[str, bytes]:
    """A resource whose entries cost ``costs`` bytes, cut into pages ``name(p)`` (relative to
    ``dir_rel``) of at most ``PAGE_BYTES``: ``page(number, pages, paging, entries)`` is page
    ``number``'s JSON, given its ``_paging`` links and the slice of entries it holds; its size
    with no entries is what a page spends besides them. At least ``least`` pages (a run, such as
    a long stripe order, may need more pages than the entries)."""
    worst = worst_paging_links(base_url, dir_rel, name, len(costs) + least + 1)
    header = lambda p: len(dumps(page(p + 1, 10**9, worst, slice(0, 0))))  # noqa: E731
    slices = pack(costs, lambda p: PAGE_BYTES - header(p))
    while len(slices) < least:
        slices.append((len(costs), len(costs)))
    out = {}
    for number, (start, end) in enumerate(slices, 1):
        doc = page(number, len(slices), paging_links(base_url, dir_rel, name, number, len(slices)), slice(start, end))
        out[name(number)] = dumps(doc)
    return out
