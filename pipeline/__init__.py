"""Build a folder of markdown knowledge into a static HAL+JSON site.

Stages: chunk (``pipeline.chunking``) -> spec (``pipeline.topicspec``) -> index (``pipeline.index``),
orchestrated by ``pipeline.site.build``. Stages pass data only through files on disk.
"""

__version__ = "0.1.0"
