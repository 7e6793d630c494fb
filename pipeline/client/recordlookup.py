"""The chunk records of a ``_search/`` query's hits: found where the fetch plan says, filtered.

One job: a chunk number to its record (``record``: from a fetched topic bundle, ``records.json``,
a topic's own record block or the site-wide one, as ``FetchPlan._record_file`` names), a record
to the client's ``ChunkRef`` (``chunk_ref``), and the first ``k`` ranked chunks whose records pass
the filters (``select``, which fetches the blocks its first ``k`` need in one round trip).
"""

from __future__ import annotations

import bisect

from pipeline.client.citations import public_base
from pipeline.client.errors import CorruptIndex
from pipeline.client.records import ChunkRef, Keyword
from pipeline.client.searchfilters import Filters
from pipeline.client.searchplan import FetchPlan
from pipeline.client.transport import HttpTransport
from pipeline.search.index import SEARCH_DIR


class RecordLookup(FetchPlan):
    """The records of an index's chunks, by chunk number."""

    def record(self, number: int, scope: list[int] | None = None) -> dict:
        """The chunk record of ``number``: from its topic's bundle when fetched, else from the file
        ``_record_file`` names (fetched once)."""
        held = self._held_bundle(number)
        if held is not None:
            bundle, start = held
            return bundle["records"][number - start]
        rel = self._record_file(number, scope)
        if rel == self.records_file():
            try:
                return self._fetch(rel).records[number]
            except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
                raise CorruptIndex(f"records: cannot unpack chunk {number} ({exc!r}); rebuild the site",
                                   self.transport.locate(rel)) from None
        block = self.meta["block"]
        if rel.startswith(f"{SEARCH_DIR}/topics/"):  # a topic's own blocks count from its start
            return self._json(rel)[(number - self.meta["topics"][bisect.bisect_right(self._starts, number) - 1]["start"]) % block]
        return self._json(rel)[number % block]

    @property
    def site_url(self) -> str:
        """The base of the site's public links (``citations.public_base`` of the manifest's ``base_url``)."""
        return public_base(self.meta["base_url"], self.transport.root if isinstance(self.transport, HttpTransport) else None)

    def chunk_ref(self, record: dict) -> ChunkRef:
        return ChunkRef(
            topic=record["topic"],
            document=record["document"],
            source=record["source"],
            index=record["index"],
            path=record["path"],
            href=self.transport.locate(record["path"]),
            title=record["title"],
            header_path=record["header_path"],
            is_code=record["is_code"],
            keywords=tuple(Keyword(name, score) for name, score in record["keywords"]),
            prompt_hashes=tuple(int(h, 16) for h in record["prompt_hashes"]),
            promotion_level=record.get("promotion_level", "standard"),
            start_line=record.get("start_line"),
            end_line=record.get("end_line"),
            site_url=self.site_url,
            page_url=record.get("page_url"),
        )

    def select(self, numbers: list[int], filters: Filters, k: int) -> list[tuple[int, dict]]:
        """The first ``k`` of ``numbers`` (deduplicated) whose records pass ``filters``."""
        out, seen = [], set()
        scope = self.scope(filters)
        self.prefetch([r for r in (self._record_file(n, scope) for n in list(dict.fromkeys(numbers))[:k]) if r])
        for number in numbers:
            if number in seen:
                continue
            seen.add(number)
            record = self.record(number, scope)
            if filters.passes(record):
                out.append((number, record))
                if len(out) == k:
                    break
        return out

