"""The published site's format, shared by its writers (the stages, ``pipeline.site``) and its
readers (``pipeline.client``, ``pipeline.serve``, ``pipeline.agents``): the tree's names and paths,
the ``index.json`` and ``_search/`` layouts and versions, the ``_embeddings.bin`` codec, hrefs and
the schemas' places. A leaf: it imports nothing of the pipeline but ``pipeline.errors`` and
``pipeline.fsutil`` (``tests/test_imports.py``), so writers and readers depend on it and
never on each other."""
