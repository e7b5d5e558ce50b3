"""What an editor does with a server's `workspace/applyEdit`: URIs, text edits, files.

Edits are applied to files on disk inside the workspace only, never through a symlink.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse


def path_to_uri(path: Path) -> str:
    """Return the `file://` URI of an absolute path."""
    return "file://" + quote(str(path.absolute()), safe="/")


def uri_to_path(uri: str) -> Path | None:
    """Return the local path of a `file://` URI (None for anything else)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return Path(unquote(parsed.path))


def _offset(text: str, line: int, character: int) -> int:
    """Turn an LSP position (UTF-16 code units) into an index into `text`."""
    lines = text.split("\n")
    if line >= len(lines):
        return len(text)
    start = sum(len(chunk) + 1 for chunk in lines[:line])
    units = 0
    for index, char in enumerate(lines[line]):
        if units >= character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(lines[line])


def apply_text_edits(text: str, edits: Sequence[Mapping[str, Any]]) -> str:
    """Apply LSP `TextEdit`s (non-overlapping, any order) to `text`."""
    spans = []
    for edit in edits:
        rng = edit["range"]
        start = _offset(text, rng["start"]["line"], rng["start"]["character"])
        end = _offset(text, rng["end"]["line"], rng["end"]["character"])
        spans.append((start, end, str(edit.get("newText", ""))))
    for start, end, new in sorted(spans, key=lambda s: s[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


@dataclass
class PlannedWrite:
    """One file a workspace edit would write: its text before (None: a new file) and after."""

    target: Path
    relative: str
    before: str | None
    after: str

    @property
    def in_git(self) -> bool:
        """True for a file inside a `.git` directory (git runs what its config and hooks say)."""
        return ".git" in Path(self.relative).parts


def refused_in_git(writes: Sequence[PlannedWrite]) -> str | None:
    """Say why `writes` are refused when no one reviews them: one is inside `.git`."""
    git = next((w for w in writes if w.in_git), None)
    return None if git is None else f"{git.target} is inside .git; not written"


class WorkspaceEditor:
    """Applies `workspace/applyEdit` to files on disk, inside the workspace only.

    The edit is untrusted (the model chose it): a path outside the workspace or through a
    symlink is refused, and nothing is written unless every change is valid. A file inside
    `.git` is written only after the user's own yes to its diff (`EditReview`): `apply`,
    which no one reviews, refuses it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.applied: list[str] = []

    def _target(self, uri: str) -> Path:
        path = uri_to_path(uri)
        if path is None:
            raise ValueError(f"not a file URI: {uri}")
        parent = path.parent.resolve()
        if parent != self.root and self.root not in parent.parents:
            raise ValueError(f"{path} is outside the workspace")
        target = parent / path.name
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISLNK(os.lstat(target).st_mode):
                raise ValueError(f"{target} is a symlink; not followed")
        return target

    def _read(self, target: Path) -> str | None:
        try:
            return target.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None

    def _write(self, target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        self.applied.append(target.relative_to(self.root).as_posix())

    def plan(self, edit: Mapping[str, Any]) -> list[PlannedWrite]:
        """Return the files `edit` would write; raise ValueError if any change is refused."""
        planned: dict[Path, PlannedWrite] = {}

        def change(uri: str, edits: Sequence[Mapping[str, Any]]) -> PlannedWrite:
            target = self._target(uri)
            if target not in planned:
                before = self._read(target)
                relative = target.relative_to(self.root).as_posix()
                planned[target] = PlannedWrite(target, relative, before, before or "")
            write = planned[target]
            write.after = apply_text_edits(write.after, edits)
            return write

        try:
            for item in edit.get("documentChanges") or []:
                kind = item.get("kind")
                if kind == "create":
                    write = change(item["uri"], [])
                    if (item.get("options") or {}).get("overwrite", False):
                        write.after = ""
                elif kind is None:
                    change(item["textDocument"]["uri"], item["edits"])
                else:
                    raise ValueError(f"resource operation {kind!r} is not supported")
            for uri, edits in (edit.get("changes") or {}).items():
                change(uri, edits)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed workspace edit ({exc})") from None
        return list(planned.values())

    def commit(self, writes: Sequence[PlannedWrite]) -> tuple[bool, str | None]:
        """Write the planned files; return (applied, failure reason)."""
        try:
            for write in writes:
                self._write(write.target, write.after)
        except OSError as exc:
            return False, str(exc)
        return True, None

    def apply(self, edit: Mapping[str, Any]) -> tuple[bool, str | None]:
        """Apply a `WorkspaceEdit`; return (applied, failure reason)."""
        try:
            writes = self.plan(edit)
        except (OSError, ValueError) as exc:
            return False, str(exc)
        refused = refused_in_git(writes)
        if refused is not None:
            return False, refused
        return self.commit(writes)
