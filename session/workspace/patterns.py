"""Tracked-file globs (`*`, `?`, `[...]`, `**`) and the directories a walk never enters."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TRACKED = ("agent_spec.md", "templates/**")
# Never descended into while expanding globs: version control and dependency caches.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "__pycache__"})
_GLOB_CHARS = re.compile(r"[*?\[]")
# What an editor leaves beside a file is never tracked, whatever the globs: Emacs's auto-save
# `#name#`, lock `.#name` and backup `name~`, Vim's swap `.name.swp` (to `.swa`) and its
# write probe `4913`. (Possessive: the directories are skipped without backtracking.)
EDITOR_LEFTOVERS = r"(?!(?:[^/]*+/)*+(?:#[^/]*#|\.#[^/]*|[^/]*~|\.[^/]*\.sw[a-p]|4913)\Z)"


def _segment_regex(segment: str) -> str:
    out = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            close = segment.find("]", i + 1)
            if close == -1:
                out.append(re.escape(char))
            else:
                body = segment[i + 1 : close].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a workspace glob (`*`, `?`, `[...]`, `**` for any depth) to a regex."""
    segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
    pieces: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            pieces.append(".*" if last else "(?:[^/]+/)*")
        else:
            pieces.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(pieces))


@dataclass(frozen=True)
class TrackedPatterns:
    """The globs of tracked files, compiled once."""

    patterns: tuple[str, ...] = DEFAULT_TRACKED

    def __post_init__(self) -> None:
        cleaned = tuple(p.strip() for p in self.patterns if p and p.strip())
        object.__setattr__(self, "patterns", cleaned)
        regex = "|".join(f"(?:{glob_to_regex(p).pattern})" for p in cleaned) or "(?!)"
        object.__setattr__(self, "_regex", re.compile(f"{EDITOR_LEFTOVERS}(?:{regex})"))

    def matches(self, relative: str) -> bool:
        """Return True if `relative` is covered by a tracked glob."""
        pattern: re.Pattern[str] = self.__dict__["_regex"]
        return pattern.fullmatch(relative) is not None

    @property
    def fullmatch(self) -> Callable[[str], re.Match[str] | None]:
        """Return the compiled globs' `fullmatch` (in C: for filters over many paths)."""
        pattern: re.Pattern[str] = self.__dict__["_regex"]
        return pattern.fullmatch

    def walk_roots(self) -> list[str]:
        """Return the directories to walk: the literal prefix of each pattern."""
        roots: set[str] = set()
        for pattern in self.patterns:
            segments = [s for s in pattern.strip("/").split("/") if s not in ("", ".")]
            literal: list[str] = []
            for segment in segments:
                if _GLOB_CHARS.search(segment):
                    break
                literal.append(segment)
            if len(literal) == len(segments):
                roots.add("/".join(literal[:-1]) + "\x00" + literal[-1])  # one exact path
            else:
                roots.add("/".join(literal))
        return sorted(roots)
