"""What a ``_search/`` hit must satisfy besides its rank (``Filters``), for ``Site.search``.

One job: the query's conditions, tested on a topic id (``topic_ok``: the ``topic`` filter, which
narrows every ranking) or on a chunk record (``passes``: the rest, which select among the ranked
chunks). No fetch, no state: a frozen value.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.client.ranking import norm_keyword
from pipeline.siteformat.searchtext import clean_heading


@dataclass(frozen=True)
class Filters:
    """What a hit must satisfy besides its rank. ``None`` means no condition."""

    topic: str | None = None
    keyword: str | None = None
    is_code: bool | None = None
    header_path: str | None = None  # prefix of the cleaned header path, case-insensitive
    entry_type: str | None = None  # front matter ``type``
    tags: tuple[str, ...] = ()  # every one among the front matter ``tags``
    promotion_level: str | None = None  # the document's level, exactly

    def topic_ok(self, topic_id: str) -> bool:
        if self.topic is None:
            return True
        prefix = self.topic.strip("/")
        return not prefix or topic_id == prefix or topic_id.startswith(prefix + "/")

    def passes(self, record: dict) -> bool:
        if self.is_code is not None and bool(record["is_code"]) != self.is_code:
            return False
        if self.keyword is not None:
            wanted = norm_keyword(self.keyword)
            if not any(norm_keyword(name) == wanted for name, _ in record["keywords"]):
                return False
        if self.header_path is not None:
            if not clean_heading(record["header_path"]).lower().startswith(clean_heading(self.header_path).lower()):
                return False
        if self.entry_type is not None and record.get("type") != self.entry_type:
            return False
        if self.promotion_level is not None and record.get("promotion_level", "standard") != self.promotion_level:
            return False
        return all(t in record.get("tags", []) for t in self.tags)

