"""`agent-assist doctor`: the store, every project's logs, pointers and index, the model.

With a PostgreSQL store (`--store DSN`, else `AGENT_ASSIST_STORE`) the database is checked
instead of the local files, only read: reachable, version, schema, row-level security,
latency, this project's sessions. The model is asked a tiny question unless `--offline`;
the project's MCP servers are listed (`doctor_mcp`); exit 1 if a problem is found. The
findings are collected in a `DoctorReport` (`doctor_report`).
"""

from __future__ import annotations

import argparse
import os
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.redaction import url_without_userinfo
from session.terminal_text import inert

from .doctor_database import check_database
from .doctor_mcp import check_mcp
from .doctor_report import DoctorReport
from .output import counted, plain_console, write_json
from .running import OK, PROBLEM
from .search import search_index
from .targets import in_use

if TYPE_CHECKING:
    from session.local.manager import SessionManager


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def check_root(report: DoctorReport, home: Path) -> bool:
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


def _private(report: DoctorReport, area: str, path: Path) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_IMODE(st.st_mode) & 0o077:
        report.add("warning", area, f"{path.name} is readable by others (mode {_mode(st)})")


def check_session(report: DoctorReport, manager: SessionManager, session_id: str) -> dict[str, Any]:
    """Log health (torn tails, bad lines, read-only and why), snapshot, lock."""
    from session.events import TurnEndEvent, TurnStartEvent
    from session.log.reader import scan_log

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
    busy = in_use(manager, session_id)
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


def check_pointers(report: DoctorReport, manager: SessionManager) -> list[dict[str, Any]]:
    """Each `active_<instance>.json` must name an existing session."""
    from session.local.catalog import pointer_files

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


def check_index(report: DoctorReport, manager: SessionManager) -> dict[str, Any] | None:
    """Check that the search index exists and is up to date with the logs."""
    if search_index() is None:
        return None
    from session.search.freshness import index_freshness

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


def check_model(report: DoctorReport, round_trip: bool, timeout: float) -> None:
    """Model configuration (the key only as set/unset) and a tiny round trip."""
    from engine.config import parse_initialization_options

    config, _ = parse_initialization_options(None, None, os.environ)
    model = config.model
    report.model = {
        "name": model.name,
        "baseUrl": model.base_url and url_without_userinfo(model.base_url),
        "apiKey": "set" if model.api_key else "unset",
        "configured": model.configured,
    }
    if not model.configured:
        report.add(
            "info",
            "model",
            "no model configured (AGENT_ASSIST_LLM_MODEL_NAME, …); chat needs one, "
            "`agent-assist demo` runs without",
        )
        return
    key = "set" if model.api_key else "unset"
    where = url_without_userinfo(model.base_url or "the default endpoint")
    report.add("ok", "model", f"{model.name} at {where} (key {key})")
    if not round_trip:
        return
    import openai

    started = time.monotonic()
    try:
        client = openai.OpenAI(
            base_url=model.base_url,
            api_key=model.api_key or "not-set",
            timeout=timeout,
            max_retries=0,
        )
        client.chat.completions.create(
            model=model.name or "",
            messages=[{"role": "user", "content": "Reply with the word: ok"}],
            max_tokens=5,
        )
    except Exception as exc:
        message = str(exc).replace(model.api_key or "\0", "[REDACTED]")
        report.model["roundTrip"] = {"ok": False, "error": message}
        report.add("problem", "model", f"round trip failed: {type(exc).__name__}: {message}")
        return
    elapsed = time.monotonic() - started
    report.model["roundTrip"] = {"ok": True, "seconds": round(elapsed, 3)}
    report.add("ok", "model", f"round trip answered in {elapsed:.1f} s")


def unrecorded_workspace(manager: SessionManager, here: Path, here_dir: Path) -> str:
    """Name the workspace of a project whose sessions record none (it has none left, say)."""
    from session.local.projects import marker_folders

    if manager.layout.project_dir == here_dir:
        return f"{here} (this folder; no session records it)"
    folders = marker_folders(manager.layout.project_dir)
    if folders:
        return f"{folders[-1]} (the last folder that used it; no session records it now)"
    return "workspace not recorded (no session of it left to say which folder it was)"


def run_doctor(args: argparse.Namespace) -> DoctorReport:
    """Run every check."""
    from session.local.catalog import list_projects, projects_root, refused_projects_root
    from session.local.projects import find_project_dir
    from session.paths import storage_root
    from session.store.choose import SCHEMA_ENV, STORE_ENV, store_kind
    from session.workspace.identity import project_identity

    report = DoctorReport()
    home = storage_root()
    here = Path(getattr(args, "workspace", None) or ".").resolve()
    identity = project_identity(here)
    report.add("info", "project", f"{here} is project {identity.key} ({identity.how})")
    here_dir = find_project_dir(projects_root(home), here, identity)
    spec = getattr(args, "store", None) or os.environ.get(STORE_ENV)
    if store_kind(spec) == "postgresql":
        assert spec is not None
        schema = getattr(args, "schema", None) or os.environ.get(SCHEMA_ENV, "").strip()
        workspace = Path(getattr(args, "workspace", None) or ".").resolve()
        check_database(report, spec.strip(), schema or "agent_assist", workspace)
        report.add("info", "storage", f"local files ({home}) not checked: the store is PostgreSQL")
    elif check_root(report, home):
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
                "index": check_index(report, manager),
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
    check_model(report, round_trip=not args.offline, timeout=args.timeout)
    check_mcp(report, here, online=not args.offline, timeout=args.timeout)
    return report


_MARKS = {"ok": "✓", "info": "·", "warning": "⚠", "problem": "✗"}
_STYLES = {"ok": "green", "info": "dim", "warning": "yellow", "problem": "bold red"}


def cmd_doctor(args: argparse.Namespace) -> int:
    """`agent-assist doctor`."""
    report = run_doctor(args)
    if args.json:
        write_json(report.as_json())
    else:
        console = plain_console()
        for finding in report.findings:
            console.print(
                inert(f"{_MARKS[finding.level]} {finding.area}: {finding.message}"),
                markup=False,
                style=_STYLES[finding.level],
            )
        count = len(report.problems)
        summary = "No problems found." if not count else f"{counted(count, 'problem')} found."
        console.print(summary, markup=False, style="bold")
    return PROBLEM if report.problems else OK
