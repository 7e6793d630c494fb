"""``exclude`` globs of the site config: gitignore-style patterns, as MkDocs' ``exclude_docs``.

A path (POSIX, relative to CONTENT) is excluded when the last pattern that matches it, or one of
its parent folders, is not negated. Supported, as in ``.gitignore``:

- ``#`` comments and blank lines are skipped; ``!pattern`` re-includes (last match wins);
- a pattern with a ``/`` before its end is anchored at CONTENT (``/drafts/``, ``docs/old.md``);
  without one it matches a name at any depth (``*.tmp``, ``img/``);
- a trailing ``/`` matches folders only (and so everything inside them);
- ``*`` and ``?`` stay inside one path part, ``[abc]`` is a character class, ``**`` spans parts
  (``**/x``, ``a/**``, ``a/**/b``).

As in git, a file inside an excluded folder cannot be re-included. Excluded files are not
documents and are not copied into the site. No dependency: the translation is a few lines, and
the semantics are pinned by tests (tests/test_sources_exclude.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from pipeline.errors import PipelineError


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """The regex body for one anchored glob (no leading or trailing ``/``)."""
    out = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and glob.find("]", i + 2) != -1:
            end = glob.index("]", i + 2)
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class Exclude:
    """Compiled ``exclude`` patterns; ``Exclude(())`` excludes nothing."""

    patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        rules = []
        for raw in self.patterns:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                raise PipelineError(f"exclude pattern {raw!r} matches nothing")
            anchored = "/" in line
            body = _translate(line.lstrip("/"))
            regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
            rules.append(_Rule(regex, negated, dir_only))
        object.__setattr__(self, "_rules", tuple(rules))

    def _match(self, rel: str, is_dir: bool) -> bool | None:
        """True/False when some rule decides ``rel`` itself, None when none matches."""
        verdict = None
        for rule in self._rules:  # type: ignore[attr-defined]
            if (is_dir or not rule.dir_only) and rule.regex.match(rel):
                verdict = not rule.negated
        return verdict

    def excludes(self, rel: str, *, is_dir: bool = False) -> bool:
        """True when ``rel`` (POSIX, relative to CONTENT) or a folder above it is excluded."""
        if not self._rules:  # type: ignore[attr-defined]
            return False
        parts = PurePosixPath(rel).parts
        for depth in range(1, len(parts)):
            if self._match("/".join(parts[:depth]), True):
                return True
        return bool(self._match("/".join(parts), is_dir))


def exclude_patterns(value: object, where: str) -> tuple[str, ...]:
    """``exclude`` from a TOML file: a list of strings, or one string with a pattern a line
    (as MkDocs writes ``exclude_docs``). Raises PipelineError naming ``where`` otherwise."""
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PipelineError("exclude must be a list of glob patterns (strings) or one string with a pattern a line", path=where)
    patterns = tuple(value)
    Exclude(patterns)  # a bad pattern fails here, when the config is read
    return patterns
