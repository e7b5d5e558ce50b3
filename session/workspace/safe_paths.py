"""Safe workspace paths: relative, canonical, and inside the workspace once resolved."""

from __future__ import annotations

from pathlib import Path


def is_lexically_safe(relative: object) -> bool:
    """Return True for a canonical relative POSIX path: no `..`, `.`, `//`, NUL, drive or root."""
    if not isinstance(relative, str) or not relative or "\x00" in relative or "\\" in relative:
        return False
    if relative[0] == "/" or (len(relative) > 1 and relative[1] == ":"):
        return False
    return all(part not in ("", ".", "..") for part in relative.split("/"))


def is_safe_relative_path(root: Path, relative: str) -> bool:
    """Return True only for a relative path that stays inside `root` once resolved."""
    if not is_lexically_safe(relative):
        return False
    try:
        root_resolved = root.resolve()
        target = (root_resolved / relative).resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return target == root_resolved or root_resolved in target.parents
