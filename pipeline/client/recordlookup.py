"""The chunk records of a ``_search/`` query's hits: found where the fetch plan says, filtered.

One job: a chunk number to its record (``record``: from ``records.json``, a small site's part, a
scope topic's segment or a record block, as ``FetchPlan._container`` names), a record to the
client's ``ChunkRef`` (``chunk_ref``), and the first ``k`` ranked chunks whose records pass the
filters (``select``, which fetches the files its first ``k`` need in one round trip).
"""

from __future__ import annotations

from pipeline.client.searchfilters import Filters
from pipeline.client.searchmanifest import unpacked
from pipeline.client.searchplan import FetchPlan
from pipeline.client.transport import HttpTransport
from pipeline.siteformat.citations import public_base
from pipeline.siteformat.readerrors import CorruptIndex
from pipeline.siteformat.records import ChunkRef, Keyword


class RecordLookup(FetchPlan):
    """The records of an index's chunks, by chunk number."""

    def record(self, number: int, scope: list[int] | None = None) -> dict:
        """The chunk record of ``number``, from the file ``_container`` names (fetched once)."""
        container = self._container(number, scope)
        if container is None:
            rel = self._record_file(number, scope)
            records, offset = self._fetch(rel).records, 0
        else:
            rel, offset, count = container
            records = self._records_of(rel, offset, count)
        try:
            return records[number - offset]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptIndex(f"records: cannot unpack chunk {number} ({exc!r}); rebuild the site",
                               self.transport.locate(rel)) from None

    def _records_of(self, rel: str, first: int, count: int):
        """The unpacked records of the part, segment or block ``rel`` (chunks ``first`` ..
        ``first + count - 1``), unpacked once."""
        key = f"{rel}#records"
        with self._lock:
            held = self._files.get(key)
        if held is None:
            value = self._json(rel)
            held = self.shared(key, lambda: unpacked(value["records"] if "terms" in value else value, self.meta, self._starts,
                                                     first, count, self.transport.locate(rel)))
            with self._lock:
                self._files[key] = held
        return held

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
        self.prefetch(list(dict.fromkeys(self._record_file(n, scope) for n in list(dict.fromkeys(numbers))[:k])))
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

