"""The static lexical search index (``_search/``): built after publish, read by both clients.

``text`` turns text into index terms (the JS twin is ``assets/lexical.js`` + ``assets/snowball.js``),
``index`` builds the files, ``rank`` holds the pure scoring and fusion shared by the Python client.
Format and formula: docs/ARCHITECTURE.md ("`_search/`").
"""
