"""How findable a built site is, with its own search (``pipeline eval SITE``).

Questions (a JSON Lines file, the site's ``qa-pairs.md``, or probes the site makes of itself)
are asked through ``Site.search`` with every method the site supports, each as a reader's
first query; each question's rank of the section or document it expects gives recall@k and
MRR per method, document and topic; sections no question reaches and sections of different
documents that compete are listed. Modules: ``targets`` (what ``expect`` names), ``questions``,
``probes``, ``run`` (asking), ``metrics`` (pure figures), ``competition``, ``evaluation`` (one
run, its JSON), ``report`` (terminal summary) and ``html`` (the report a person opens).
"""

from pipeline.evaluate.evaluation import DEFAULT_K, PROBE_KIND, Evaluation, evaluate

__all__ = ["DEFAULT_K", "PROBE_KIND", "Evaluation", "evaluate"]
