"""The local store's self-diagnosis: its root, every project's logs, pointers and index.

What `agent-assist doctor` checks of the local files, only read: the storage root (ours,
private, writable), each session's log and snapshot (torn tails, bad lines, why it would
open read-only), the pointers, and the search index's freshness. Findings go to a
`Findings` (the doctor's report), so this layer knows nothing of how they are shown.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Literal, Protocol

from ..events import TurnEndEvent, TurnStartEvent
from ..log.reader import scan_log
from ..terminal_text import counted
from ..workspace.identity import ProjectIdentity
from .catalog import list_projects, pointer_files, projects_root, refused_projects_root
from .manager import SessionManager
from .projects import find_project_dir, marker_folders

Level = Literal["ok", "info", "warning", "problem"]


class Findings(Protocol):
    """Where the checks report: a finding per line, and the root and projects as data."""

    root: dict[str, Any]
    projects: list[dict[str, Any]]

    def add(self, level: Level, area: str, message: str) -> None:
        """Record a finding."""
        ...


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def check_root(report: Findings, home: Path) -> bool:
    """Storage root: present, a real directory, ours, private, writable."""
    info: dict[str, Any] = {"path": str(home), "exists": False}
    report.root = info
    try:
        st = os.lstat(home)
    except FileNotFoundError:
        report.add("ok", "storage", f"{home} does not exist yet (created on first use)")
        return False
    except OSError as exc:
        report.add("problem", "storage", f"{home}: cannot stat ({exc.strerror or exc})")
        return False
    info.update(exists=True, mode=_mode(st))
    if stat.S_ISLNK(st.st_mode):
        report.add("problem", "storage", f"{home} is a symlink; the server refuses to use it")
        return False
    if not stat.S_ISDIR(st.st_mode):
        report.add("problem", "storage", f"{home} is not a directory")
        return False
    writable = os.access(home, os.W_OK | os.X_OK)
    info["writable"] = writable
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        report.add("problem", "storage", f"{home} belongs to uid {st.st_uid}, not to you")
    if not writable:
        report.add("problem", "storage", f"{home} is not writable: sessions cannot be saved")
    if stat.S_IMODE(st.st_mode) & 0o002:
        report.add("problem", "storage", f"{home} is world-writable (mode {_mode(st)})")
    elif stat.S_IMODE(st.st_mode) & 0o077:
        report.add(
            "warning", "storage", f"{home} is readable by others (mode {_mode(st)}; expected 0700)"
        )
    if writable and not stat.S_IMODE(st.st_mode) & 0o077:
        report.add("ok", "storage", f"{home} (mode {_mode(st)}, writable)")
    elif writable:
        report.add("ok", "storage", f"{home} is writable")
    return True


def _private(report: Findings, area: str, path: Path) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_IMODE(st.st_mode) & 0o077:
        report.add("warning", area, f"{path.name} is readable by others (mode {_mode(st)})")


def check_session(report: Findings, manager: SessionManager, session_id: str) -> dict[str, Any]:
    """Log health (torn tails, bad lines, read-only and why), snapshot, lock."""
    area = f"{manager.layout.project_dir.name}/{session_id}"
    log_path = manager.layout.log_path(session_id)
    row: dict[str, Any] = {"sessionId": session_id, "problems": [], "readOnly": None}
    if log_path.is_symlink():
        report.add("problem", area, "the event log is a symlink; it is never opened")
        row["problems"].append("log is a symlink")
        return row
    scan = scan_log(log_path)
    row["events"] = len(scan.events)
    row["logBytes"] = log_path.stat().st_size if log_path.exists() else 0
    busy = session_id in manager.held_locks([session_id])  # probed, never taken
    row["inUse"] = busy
    for problem in scan.problems:
        if problem.kind == "recovered":
            report.add("info", area, problem.message)
            continue
        message = problem.message
        if problem.kind == "torn_tail":
            message += " (it is terminated and acknowledged when the session is next opened)"
        report.add("problem", area, message)
        row["problems"].append(problem.message)
    warnings: list[str] = []
    state, future = manager.read_snapshot(session_id, warnings)
    for warning in warnings:
        report.add("problem", area, warning)
        row["problems"].append(warning)
    reason = scan.read_only_reason or future
    if reason:
        row["readOnly"] = reason
        report.add("problem", area, f"opens read-only: {reason}")
    if not log_path.exists():
        if state is not None and state.last_seq >= 0:
            report.add("warning", area, "the event log is missing; only the snapshot is left")
    open_turn = None
    for event in scan.events:
        if isinstance(event, TurnStartEvent):
            open_turn = event.turn
        elif isinstance(event, TurnEndEvent):
            open_turn = None
    if open_turn is not None and not busy:
        report.add(
            "info", area, f"turn {open_turn} never ended (closed as interrupted on next open)"
        )
    _private(report, area, log_path)
    _private(report, area, manager.layout.snapshot_path(session_id))
    return row


def check_pointers(report: Findings, manager: SessionManager) -> list[dict[str, Any]]:
    """Each `active_<instance>.json` must name an existing session."""
    pointers: list[dict[str, Any]] = []
    for pointer in pointer_files(manager):
        area = f"{manager.layout.project_dir.name}/{pointer.path.name}"
        if not pointer.valid:
            report.add("problem", area, "unexpected pointer file name")
            continue
        warnings: list[str] = []
        target = manager.read_pointer(pointer.instance_id, warnings)
        for warning in warnings:
            report.add("problem", area, f"{warning} (the instance starts a fresh session)")
        pointers.append({"instance": pointer.instance_id, "sessionId": target, "ok": not warnings})
    return pointers


def check_index(report: Findings, manager: SessionManager) -> dict[str, Any]:
    """Check that the search index exists and is up to date with the logs."""
    from ..search.freshness import index_freshness  # absent from a build without search

    area = f"{manager.layout.project_dir.name}/index"
    found = index_freshness(manager.layout)
    if not found.exists:
        report.add("info", area, "no search index yet (built on the first search)")
        return {"exists": False}
    if found.symlink:
        report.add("problem", area, "index.sqlite is a symlink; the index refuses to use it")
        return {"exists": True, "symlink": True}
    if found.error is not None:
        report.add("warning", area, f"unreadable ({found.error}); it is rebuilt on the next search")
        return {"exists": True, "readable": False}
    if found.stale:
        report.add(
            "warning",
            area,
            f"behind the logs for {counted(len(found.stale), 'session')}; it catches up on the "
            "next search (`agent-assist sessions reindex` rebuilds it)",
        )
    else:
        report.add("ok", area, f"up to date ({counted(len(found.indexed), 'session')})")
    return {"exists": True, "readable": True, "stale": found.stale}


def unrecorded_workspace(manager: SessionManager, here: Path, here_dir: Path) -> str:
    """Name the workspace of a project whose sessions record none (it has none left, say)."""
    if manager.layout.project_dir == here_dir:
        return f"{here} (this folder; no session records it)"
    folders = marker_folders(manager.layout.project_dir)
    if folders:
        return f"{folders[-1]} (the last folder that used it; no session records it now)"
    return "workspace not recorded (no session of it left to say which folder it was)"


def diagnose(
    report: Findings, home: Path, here: Path, identity: ProjectIdentity, *, searchable: bool
) -> None:
    """Check the store at `home` and every project in it (`here`: the folder asked about).

    `searchable`: this build has search, so each project's index is checked too.
    """
    if not check_root(report, home):
        return
    here_dir = find_project_dir(projects_root(home), here, identity)
    refused = refused_projects_root(home)
    if refused is not None:
        report.add("problem", "storage", f"{refused} is a symlink; the server refuses it")
    for project in list_projects(home):
        manager = project.manager
        sessions = [check_session(report, manager, sid) for sid in manager.layout.session_ids()]
        entry: dict[str, Any] = {
            "project": project.name,
            "workspace": project.workspace_root,
            "workspaceExists": project.workspace_exists,
            "sessions": sessions,
            "pointers": check_pointers(report, manager),
            "index": check_index(report, manager) if searchable else None,
        }
        report.projects.append(entry)
        where = project.workspace_root or unrecorded_workspace(manager, here, here_dir)
        if project.workspace_root and not project.workspace_exists:
            where += " (no longer exists)"
        report.add(
            "ok", "projects", f"{project.name}: {counted(len(sessions), 'session')}, {where}"
        )
    if not report.projects:
        report.add("ok", "projects", "no projects yet")
