"""The published site's format, shared by its writers (the stages, ``pipeline.site``) and its
readers (``pipeline.client``, ``pipeline.serve``, ``pipeline.agents``): the tree's names and paths,
the ``index.json`` and ``_search/`` layouts and versions, the ``_embeddings.bin`` codec, hrefs,
the schemas' places, and what a query needs to read ``_search/`` (its terms, rankings, packed
records and vector rows). A leaf: it imports nothing of the pipeline but ``pipeline.errors``,
``pipeline.fsutil`` and ``pipeline.simhash`` (``tests/test_imports.py``), so writers and readers
depend on it and never on each other."""
