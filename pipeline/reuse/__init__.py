"""What a rebuild may reuse from the one before: the build state (``state``), the memo of larger
per-topic results (``memo``) and the files' stat stamps (``stamps``). Below the stages, which
record and consult them; above nothing but the site format's leaves."""
