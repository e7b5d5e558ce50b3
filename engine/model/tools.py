"""The model's tools (read, list and write workspace files, safe paths only) and their deps."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from session.lifecycle import SessionLifecycle
from session.workspace.files import read_workspace_file, unlink_if_hard_linked
from session.workspace.patterns import SKIPPED_DIRS
from session.workspace.protected import in_git_directory, protection
from session.workspace.safe_paths import is_safe_relative_path

from .limits import CallBudget

BASE_INSTRUCTIONS = (
    "You are Agent Assist, an AI assistant working inside the user's code editor on the "
    "project in the current workspace. Use the tools to read, list and write workspace "
    "files (paths are relative to the workspace root). Record important decisions with "
    "record_decision and the conversation phase (design, code, deploy) with set_phase. "
    "Be concise."
)
# For a model the server takes no tools for (it refused them: `faults.TOOLS_REFUSED_PATTERNS`).
NO_TOOLS_INSTRUCTIONS = (
    "You are Agent Assist, an AI assistant working inside the user's code editor on the "
    "project in the current workspace. With this model you have no tools: you cannot read "
    "or write files yourself, so ask the user to paste what you need to see. Be concise."
)
# Our tools' names: an MCP server's tool whose prefixed name is one of them is not offered.
OUR_TOOLS = frozenset({"read_file", "write_file", "list_files", "record_decision", "set_phase"})
MAX_READ_BYTES = 256 * 1024  # the most one read_file call returns, whatever the window
MIN_READ_BYTES = 2 * 1024  # the least, however small the window
MAX_SCAN_BYTES = 8 << 20  # how far into a file read_file can go (a part at a time)
MAX_LIST_ENTRIES = 500
REPEATS_BEFORE_NOTE = 2  # identical reads in a turn before the result says so


def repeat_note(deps: ToolDeps, *call: str) -> str:
    """Count a read (tool name and arguments); from the third alike, a note to move on.

    Small local models call list_files on the same directory again and again until the
    turn's request limit ends it: they are told they already have the result.
    """
    count = deps.calls[call] = deps.calls.get(call, 0) + 1
    if count <= REPEATS_BEFORE_NOTE:
        return ""
    return (
        f"[call {count} of {call[0]} with these arguments in this turn, and nothing was "
        "written since: you have this result already. Use it and answer the user.]"
    )


def read_limit(context_window: int) -> int:
    """Return the bytes one read_file call returns: a quarter of the window (4 bytes a token).

    A local model's window is often 2,048-8,192 tokens: a whole source file read into it
    left no room for the rest of the turn, and the next request overflowed.
    """
    return max(MIN_READ_BYTES, min(MAX_READ_BYTES, context_window))


@dataclass(frozen=True)
class EditOutcome:
    """What the editor did with a whole-file edit (true when applied).

    `refused`: the editor was asked and answered no (the user rejected it, or it failed):
    why, if it said. Then nothing may be written: a write behind its back would overrule
    the user. Not applied and not refused: the editor cannot take edits (written directly).
    """

    applied: bool
    refused: str | None = None

    def __bool__(self) -> bool:
        return self.applied


class EditorHost(Protocol):
    """What tools need from the editor side (each edge implements it).

    `call_id`: the model's id of the tool call being run (None outside one), so an edge
    can name the call it asks about.
    """

    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        """Apply a whole-file edit through the editor (see `EditOutcome`)."""
        ...

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        """Ask the user whether the model may write `relative` (`reason`: why it is asked).

        False when the user says no or dismisses the question, or the editor cannot ask.
        """
        ...

    def protected_globs(self) -> tuple[str, ...]:
        """Return the user's protected-path globs (added to the built-in ones)."""
        ...

    async def read_document(self, relative: str) -> str | None:
        """Return the editor's text of `relative`, unsaved changes and all.

        None when the editor does not hold it (or could not say): then disk holds what
        the user sees. Asked only about a path `read_file` has checked.
        """
        ...


class ToolCallConfirmer(Protocol):
    """What an `EditorHost` may also do: ask before an MCP server's tool runs (`mcp`)."""

    async def confirm_tool(self, server: str, tool: str, args: dict[str, Any]) -> bool:
        """Ask the user whether the model may call `tool` of MCP server `server` with `args`.

        False when the user says no or dismisses the question, or the editor cannot ask.
        """
        ...


async def confirm_tool_call(host: EditorHost, server: str, tool: str, args: dict[str, Any]) -> bool:
    """Ask through `host.confirm_tool` (`ToolCallConfirmer`); a host without it cannot ask: no."""
    ask = getattr(host, "confirm_tool", None)  # optional: edges that ask implement it
    if ask is None:
        return False
    answer: bool = await ask(server, tool, args)
    return answer


@dataclass
class ToolDeps:
    """What the agent's tools act on."""

    lifecycle: SessionLifecycle
    host: EditorHost
    read_limit: int = MAX_READ_BYTES  # bytes one read_file call returns (`read_limit()`)
    # (tool, arguments) -> times called in this turn since the last write (`repeat_note`)
    calls: dict[tuple[str, ...], int] = field(default_factory=dict)
    budget: CallBudget | None = None  # the turn's tool-call limits (`limits.CallBudget`)

    @property
    def root(self) -> Path:
        """Return the workspace root."""
        return self.lifecycle.workspace_root


class ToolError(Exception):
    """A tool refused; the message goes back to the model."""


def _checked_path(deps: ToolDeps, path: str) -> Path:
    relative = path.strip().removeprefix("./") or "."
    if relative != "." and not is_safe_relative_path(deps.root, relative):
        raise ToolError(f"path {path!r} is outside the workspace or not allowed")
    target = deps.root / relative
    try:
        if relative != "." and stat.S_ISLNK(os.lstat(target).st_mode):
            raise ToolError(f"{path} is a symlink; symlinks are not followed")
    except FileNotFoundError:
        pass
    except OSError as exc:  # a name too long, a component that is a file, ...
        raise ToolError(f"path {path!r} cannot be used: {exc.strerror}") from None
    return target


async def read_file(deps: ToolDeps, path: str, start_line: int = 1) -> str:
    """Read a UTF-8 text file of the workspace from line `start_line` (1-based).

    As much as `deps.read_limit` allows, in whole lines; what does not fit is said, with
    the `start_line` that reads on. The path is checked before the editor is asked.
    """
    if start_line < 1:
        raise ToolError(f"start_line must be 1 or more, not {start_line}")
    target = _checked_path(deps, path)
    # A directory is no document: the editor is not asked (the disk read says what it is).
    relative = path.strip().removeprefix("./")
    unsaved = None if target.is_dir() else await deps.host.read_document(relative)
    if unsaved is not None:  # open in the editor: what the user sees, saved or not
        data = unsaved.encode("utf-8")[: MAX_SCAN_BYTES + 1]
    else:
        data = _read_disk(target, path)
    deps.lifecycle.note_assistant_file(path)
    text = _part(data, start_line, deps.read_limit)
    note = repeat_note(deps, "read_file", path, str(start_line))
    return f"{text}\n{note}" if note else text


def _read_disk(target: Path, path: str) -> bytes:
    """Return up to `MAX_SCAN_BYTES` + 1 bytes of a regular file (never through a symlink)."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"{path} does not exist") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ToolError(f"{path} is not a regular file")
        return fh.read(MAX_SCAN_BYTES + 1)


def _part(data: bytes, start_line: int, limit: int) -> str:
    """Return the lines of `data` from `start_line` that fit `limit` bytes, and what is left."""
    whole = len(data) <= MAX_SCAN_BYTES
    lines = data[:MAX_SCAN_BYTES].splitlines(keepends=True)
    if start_line == 1 and whole and len(data) <= limit:
        return data.decode("utf-8", errors="replace")  # the usual case: all of it
    if start_line > len(lines):
        count = f"{len(lines)} line{'s' * (len(lines) != 1)}"
        return f"[the file has {count}: nothing from line {start_line}]"
    taken: list[bytes] = []
    size = 0
    for line in lines[start_line - 1 :]:
        if taken and size + len(line) > limit:
            break
        taken.append(line[: limit - size] if size + len(line) > limit else line)
        size += len(taken[-1])
    last = start_line + len(taken) - 1
    text = b"".join(taken).decode("utf-8", errors="replace")
    if len(taken[-1]) < len(lines[last - 1]):
        text += f"\n[line {last} is cut at {limit} bytes: it is longer than one read can show]"
    if last < len(lines):
        text += (
            f"\n[lines {start_line}-{last} of {len(lines)}: call read_file with "
            f"start_line={last + 1} to read on]"
        )
    elif not whole:
        text += f"\n[the file is larger than {MAX_SCAN_BYTES >> 20} MB: the rest cannot be read]"
    return text


def list_files(deps: ToolDeps, directory: str = ".") -> list[str]:
    """List a workspace directory (directories end with `/`)."""
    target = _checked_path(deps, directory)
    entries: list[str] = []
    try:
        with os.scandir(target) as scan:
            for entry in sorted(scan, key=lambda e: e.name):
                if entry.is_symlink() or entry.name in SKIPPED_DIRS:
                    continue
                entries.append(entry.name + ("/" if entry.is_dir() else ""))
                if len(entries) >= MAX_LIST_ENTRIES:
                    entries.append(f"[truncated at {MAX_LIST_ENTRIES} entries]")
                    break
    except FileNotFoundError:
        raise ToolError(f"{directory} does not exist") from None
    except NotADirectoryError:
        raise ToolError(f"{directory} is not a directory") from None
    except OSError as exc:
        raise ToolError(f"cannot list {directory}: {exc.strerror}") from None
    note = repeat_note(deps, "list_files", directory)
    return [*entries, note] if note else entries


EXEC_BITS = 0o111
EXECUTABLE_REASON = "it is executable: what the model writes would run as a program"


def _executable(target: Path) -> bool:
    try:
        st = os.lstat(target)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and bool(st.st_mode & EXEC_BITS)


def _drop_exec(fd: int) -> bool:
    """Clear the executable (and setuid/setgid) bits of an open file; True if it had some."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode) or not mode & (EXEC_BITS | stat.S_ISUID | stat.S_ISGID):
        return False
    os.fchmod(fd, stat.S_IMODE(mode) & ~(EXEC_BITS | stat.S_ISUID | stat.S_ISGID))
    return True


async def _allowed(
    deps: ToolDeps, path: str, relative: str, target: Path, call_id: str | None
) -> bool:
    """Ask about a protected path (a refusal raises); return True if the user said yes.

    An executable file is asked about too; without a yes it is written, not executable.
    """
    why = protection(relative, deps.host.protected_globs()) or in_git_directory(deps.root, relative)
    executable = _executable(target)
    if why is None:
        return executable and await deps.host.confirm(relative, EXECUTABLE_REASON, call_id)
    if executable:
        why += "; it is executable and stays so"
    if not await deps.host.confirm(relative, why, call_id):
        raise ToolError(
            f"{path} is a protected path ({why}). Writing it needs the user's yes, and the "
            "user did not give it (or the editor cannot ask): nothing was written. Do not "
            "write it another way; tell the user what you wanted to change and why."
        )
    return True


async def write_file(deps: ToolDeps, path: str, content: str, call_id: str | None = None) -> str:
    """Write a workspace file through the editor (undoable) or directly.

    A protected path is written only after the user said yes; an executable file the
    user did not confirm loses its executable bits. `call_id`: the tool call's id.
    """
    target = _checked_path(deps, path)
    relative = path.strip().removeprefix("./")
    data = content.encode("utf-8")
    deps.calls.clear()  # a read after a write may see something new
    confirmed = await _allowed(deps, path, relative, target, call_id)
    before = await _replaced(deps, relative, target)
    if not os.path.lexists(target):  # an editor creates it empty first: not the user's
        deps.lifecycle.note_assistant_creating(relative)
    outcome = await deps.host.apply_file_edit(relative, content, call_id)
    if outcome.applied:
        deps.lifecycle.note_assistant_write(relative, data)
        deps.lifecycle.record_file_change(call_id, relative, before, data)
        note = "" if confirmed else _drop_exec_after_edit(target)
        return f"{relative}: edit applied in the editor ({len(data)} bytes; undoable there){note}"
    if outcome.refused is not None:
        raise ToolError(
            f"{path}: the editor did not apply the edit ({outcome.refused}): nothing was "
            "written. Do not write it another way; tell the user what you wanted to change."
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if not is_safe_relative_path(deps.root, relative):  # parent dirs may have changed
            raise ToolError(f"path {path!r} is outside the workspace")
        unlink_if_hard_linked(target)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(target, flags, 0o644)
        with os.fdopen(fd, "wb") as fh:
            dropped = not confirmed and _drop_exec(fd)
            fh.write(data)
    except OSError as exc:  # a directory there, no space left, not allowed, ...
        raise ToolError(f"cannot write {path}: {exc.strerror}") from None
    deps.lifecycle.note_assistant_write(relative, data)
    deps.lifecycle.record_file_change(call_id, relative, before, data)
    return f"{relative}: written ({len(data)} bytes){NOT_EXECUTABLE if dropped else ''}"


async def _replaced(deps: ToolDeps, relative: str, target: Path) -> bytes | None:
    """Return what a write replaces: the editor's text if it holds the file, else disk's.

    None: no such file (or not a regular one, or unreadable: nothing to show as before).
    """
    if not os.path.lexists(target):
        return None
    unsaved = await deps.host.read_document(relative)
    if unsaved is not None:
        return unsaved.encode("utf-8")
    return read_workspace_file(deps.root, relative)


NOT_EXECUTABLE = "; it is no longer executable (the user did not confirm keeping it so)"


def _drop_exec_after_edit(target: Path) -> str:
    """Clear the executable bits of a file the editor wrote; the note for the model."""
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        return NOT_EXECUTABLE if _drop_exec(fd) else ""
    except OSError:
        return ""
    finally:
        os.close(fd)
