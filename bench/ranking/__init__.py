"""Ranking experiments beyond fusion (issue 11), one module per family of variants; the runner
is ``bench/ranking_experiments.py`` (``python -m bench.ranking_experiments``).

``base``: the per-set inputs (``Context``), the site's ranking and the metric every family is
scored with; ``rescore``: re-scorings of the fused list (document evidence, pseudo-relevance
feedback, shorter first); ``lexical``: other lexical rankings; ``sentences``: sentence
evidence; ``learned``: a learned linear fusion; ``e5``: a second, packaged encoder;
``maxsim``: token-level evidence; ``pieces``: sub-chunk vectors (each chunk embedded in 2-3
pieces, as a build could precompute). Each family module holds its own ``VARIANTS``.
"""
