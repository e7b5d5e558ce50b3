"""`agent-assist sessions …` and `agent-assist doctor`: the store, read (and pruned) directly.

Exit codes: 0 ok, 1 a problem was found (or a deletion was refused or not confirmed),
2 usage. Nothing here ever touches a project other than the one asked about, and nothing
is deleted without a confirmation (or `--yes`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import stat
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.console import Console

    from session.manager import SessionInfo, SessionManager
    from session.models import Event, SessionState

OK, PROBLEM, USAGE = 0, 1, 2
NOT_AVAILABLE = "search is not available in this build (session/search.py is missing)"
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class UsageError(Exception):
    """Bad arguments (exit code 2)."""


class ProblemError(Exception):
    """Something the user should know went wrong (exit code 1)."""


# -- shared helpers ----------------------------------------------------------------------------


def _quiet_session_logs(args: argparse.Namespace) -> int:
    """Damage is reported by the command itself; the library's warnings would repeat it.

    Return the level to put back afterwards (the commands also run in-process).
    """
    logger = logging.getLogger("session")
    previous = logger.level
    if not getattr(args, "verbose", False):
        logger.setLevel(logging.ERROR)
    return previous


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def _write_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _short(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def parse_duration(text: str) -> timedelta:
    """Parse `90d`, `12h`, `2w`, `30m`, `45s`."""
    match = _DURATION.fullmatch(text)
    if match is None:
        raise UsageError(f"invalid duration {text!r}: use a number and a unit, e.g. 90d, 12h, 2w")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def _workspace(args: argparse.Namespace) -> Path:
    path = Path(args.workspace or ".").expanduser()
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory")
    return path.resolve()


def project_manager(args: argparse.Namespace) -> SessionManager:
    """Return the manager of the project of `--workspace` (default: the current directory)."""
    from session.manager import SessionManager

    return SessionManager(_workspace(args))


def _workspace_root_of(project_dir: Path) -> str | None:
    """Return the workspace root recorded in a project's snapshots or logs."""
    from session.log import parse_event_line
    from session.models import SessionStartEvent
    from session.storage import read_json_file

    sessions = project_dir / "sessions"
    if not sessions.is_dir():
        return None
    for entry in sorted(sessions.iterdir()):
        if entry.is_symlink():
            continue
        if entry.name.endswith(".json") and not entry.name.startswith("active_"):
            try:
                raw = read_json_file(entry, max_bytes=16 * 1024 * 1024)
            except (ValueError, OSError):
                continue
            if isinstance(raw, dict) and isinstance(raw.get("workspace_root"), str):
                return str(raw["workspace_root"])
        elif entry.name.endswith(".events.jsonl"):
            try:
                with open(entry, "rb") as fh:
                    first = fh.readline()
                event = parse_event_line(first)
            except (ValueError, OSError):
                continue
            if isinstance(event, SessionStartEvent) and event.data.workspace_root:
                return event.data.workspace_root
    return None


def manager_for_project_dir(home: Path, project_dir: Path) -> SessionManager:
    """Return a manager for an existing `projects/<name>_<hash8>/` directory."""
    from session.manager import SessionManager

    root = _workspace_root_of(project_dir)
    manager = SessionManager(Path(root) if root else project_dir, home=home)
    if manager.project_dir != project_dir:  # moved or unknown workspace: use the dir as it is
        manager.project_dir = project_dir
        manager.sessions_dir = project_dir / "sessions"
        manager.checkpoints_dir = project_dir / "checkpoints"
        manager.blobs_dir = project_dir / "blobs"
    return manager


def project_dirs(home: Path) -> list[Path]:
    """Return the project directories of the store (never through a symlink)."""
    projects = home / "projects"
    if not projects.is_dir() or projects.is_symlink():
        return []
    return sorted(p for p in projects.iterdir() if p.is_dir() and not p.is_symlink())


def managers(args: argparse.Namespace) -> list[SessionManager]:
    """Return the current project's manager, or every project's with `--all-projects`."""
    if getattr(args, "all_projects", False):
        from session.paths import storage_root

        home = storage_root()
        return [manager_for_project_dir(home, d) for d in project_dirs(home)]
    return [project_manager(args)]


def resolve_session(manager: SessionManager, wanted: str) -> str:
    """Return the session id matching `wanted` exactly or as a unique prefix (≥ 4 chars)."""
    if not re.fullmatch(r"[a-f0-9]{1,12}", wanted):
        raise UsageError(f"invalid session id {wanted!r} (12 lowercase hex characters)")
    ids = sorted(manager.session_ids())
    if wanted in ids:
        return wanted
    matches = [i for i in ids if i.startswith(wanted)] if len(wanted) >= 4 else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ProblemError(f"{wanted!r} matches several sessions: {', '.join(matches)}")
    raise ProblemError(f"no session {wanted} in project {manager.project_dir.name}")


def in_use(manager: SessionManager, session_id: str) -> bool:
    """Return True if a running process holds the session's lock (probed, never created)."""
    from session.manager import SessionError, SessionLockedError

    if not manager.lock_path(session_id).exists():
        return False
    try:
        lock = manager.acquire_lock(session_id)
    except SessionLockedError:
        return True
    except SessionError:
        return False
    lock.release()
    return False


def confirm(question: str, assume_yes: bool) -> bool:
    """Ask y/N on the terminal (stderr, so `--json` output stays clean); EOF is no."""
    if assume_yes:
        return True
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _state(manager: SessionManager, session_id: str, events: list[Event]) -> SessionState:
    from session.manager import state_from_events

    state, _ = manager.read_snapshot(session_id)
    if state is None:
        state = state_from_events(session_id, events)
    return state


def _info_json(info: SessionInfo, manager: SessionManager, busy: bool) -> dict[str, Any]:
    row: dict[str, Any] = {
        "sessionId": info.session_id,
        "title": info.title,
        "createdAt": _iso(info.created_at),
        "updatedAt": _iso(info.updated_at),
        "turns": info.turns,
        "phase": info.phase,
        "inUse": busy,
        "project": manager.project_dir.name,
        "workspace": str(manager.workspace_root),
    }
    if info.parent_session_id:
        row["parentSessionId"] = info.parent_session_id
    return row


def _run(args: argparse.Namespace, fn: Any) -> int:
    """Run a command body, mapping errors to exit codes."""
    from session.manager import SessionError
    from session.storage import StorageError

    level = _quiet_session_logs(args)
    try:
        return int(fn(args))
    except UsageError as exc:
        sys.stderr.write(f"agent-assist: {exc}\n")
        return USAGE
    except (ProblemError, SessionError, StorageError, OSError) as exc:
        sys.stderr.write(f"agent-assist: {exc}\n")
        return PROBLEM
    finally:
        logging.getLogger("session").setLevel(level)


# -- sessions list / show / export -------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    """`sessions list`."""
    rows: list[dict[str, Any]] = []
    for manager in managers(args):
        for info in manager.list_sessions():
            rows.append(_info_json(info, manager, in_use(manager, info.session_id)))
    if args.json:
        _write_json({"sessions": rows})
        return OK
    console = _console()
    if not rows:
        console.print("No sessions.", markup=False)
        return OK
    from rich.table import Table
    from rich.text import Text

    table = Table()
    columns = ["id", "updated (UTC)", "turns", "phase", "title", "status"]
    if args.all_projects:
        columns.insert(0, "project")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        title = row["title"] or ""
        if row.get("parentSessionId"):
            title = f"{title} (fork of {row['parentSessionId']})".strip()
        cells = [
            row["sessionId"],
            row["updatedAt"].replace("T", " ")[:16],
            str(row["turns"]),
            row["phase"] or "",
            title,
            "in use" if row["inUse"] else "",
        ]
        if args.all_projects:
            cells.insert(0, row["project"])
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    return OK


@dataclass
class SessionDump:
    """A session read from disk: metadata, events, transcript and what was wrong."""

    session_id: str
    state: SessionState
    events: list[Event]
    items: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    read_only: str | None = None


def load_session(manager: SessionManager, session_id: str) -> SessionDump:
    """Read a session's log (and snapshot) without opening it for writing."""
    from session.derive import transcript

    from .protocol import transcript_items

    scan = manager.read_events(session_id)
    warnings: list[str] = []
    state, snapshot_read_only = manager.read_snapshot(session_id, warnings)
    if state is None:
        state = _state(manager, session_id, scan.events)
    problems = [p.message for p in scan.problems if p.kind != "recovered"] + warnings
    return SessionDump(
        session_id,
        state,
        scan.events,
        transcript_items(transcript(scan.events)),
        problems,
        scan.read_only_reason or snapshot_read_only,
    )


def _meta(dump: SessionDump, manager: SessionManager) -> dict[str, Any]:
    state = dump.state
    meta: dict[str, Any] = {
        "sessionId": dump.session_id,
        "title": state.title,
        "createdAt": _iso(state.created_at),
        "updatedAt": _iso(state.updated_at),
        "turns": state.turns,
        "events": len(dump.events),
        "parentSessionId": state.parent_session_id,
        "workspace": str(manager.workspace_root),
        "log": str(manager.log_path(dump.session_id)),
        "persistence": state.persistence,
        "problems": dump.problems,
        "readOnly": dump.read_only,
    }
    return meta


def cmd_show(args: argparse.Namespace) -> int:
    """`sessions show ID`: metadata and transcript."""
    manager = project_manager(args)
    session_id = resolve_session(manager, args.id)
    dump = load_session(manager, session_id)
    if args.json:
        _write_json({**_meta(dump, manager), "items": dump.items})
        return OK
    console = _console()
    meta = _meta(dump, manager)
    console.print(f"Session {session_id}: {meta['title'] or '(untitled)'}", markup=False)
    console.print(
        f"created {meta['createdAt']} · updated {meta['updatedAt']} · {meta['turns']} turns · "
        f"{meta['events']} events",
        markup=False,
        style="dim",
    )
    if meta["parentSessionId"]:
        console.print(f"fork of {meta['parentSessionId']}", markup=False, style="dim")
    console.print(f"log: {meta['log']}", markup=False, style="dim")
    for problem in dump.problems:
        console.print(f"⚠ {problem}", markup=False, style="yellow")
    if dump.read_only:
        console.print(f"⚠ read-only: {dump.read_only}", markup=False, style="yellow")
    console.print()
    for item in dump.items:
        _print_item(console, item)
    return OK


def _print_item(console: Console, item: dict[str, Any]) -> None:
    role, text, turn = item["role"], item["text"], item.get("turn")
    if role == "user":
        console.print(f"You (turn {turn}): {text}", markup=False, style="bold")
    elif role == "assistant":
        if text:
            console.print(f"Assistant: {text}", markup=False)
        reason = item.get("endReason")
        if reason and reason != "completed":
            console.print(f"  [turn {turn} {reason}]", markup=False, style="yellow")
    elif role == "tool":
        console.print(f"  tool {text} ({item.get('status')})", markup=False, style="dim")
    else:
        console.print(f"  {text}", markup=False, style="dim")


def transcript_markdown(dump: SessionDump, manager: SessionManager) -> str:
    """Render a session as a readable Markdown document."""
    meta = _meta(dump, manager)
    lines = [
        f"# Session {dump.session_id}" + (f": {meta['title']}" if meta["title"] else ""),
        "",
        f"- Workspace: `{meta['workspace']}`",
        f"- Created: {meta['createdAt']}",
        f"- Last active: {meta['updatedAt']}",
        f"- Turns: {meta['turns']}",
    ]
    if meta["parentSessionId"]:
        lines.append(f"- Forked from: {meta['parentSessionId']}")
    for problem in dump.problems:
        lines.append(f"- Warning: {problem}")
    current_turn: int | None = None
    for item in dump.items:
        turn = item.get("turn")
        if turn is not None and turn != current_turn:
            current_turn = turn
            lines += ["", f"## Turn {turn}"]
        role, text = item["role"], item["text"]
        if role == "user":
            lines += ["", "**You:**", "", text]
        elif role == "assistant":
            if text:
                lines += ["", "**Assistant:**", "", text]
            reason = item.get("endReason")
            if reason and reason != "completed":
                lines += ["", f"_(turn {reason})_"]
        elif role == "tool":
            lines += ["", f"> tool `{text}` ({item.get('status')})"]
        else:
            lines += ["", f"_{text}_"]
    return "\n".join(lines) + "\n"


def cmd_export(args: argparse.Namespace) -> int:
    """`sessions export ID --format md|json [-o FILE]`."""
    manager = project_manager(args)
    session_id = resolve_session(manager, args.id)
    dump = load_session(manager, session_id)
    if args.format == "md":
        text = transcript_markdown(dump, manager)
    else:
        payload = {
            "session": _meta(dump, manager),
            "transcript": dump.items,
            "events": [event.model_dump(mode="json") for event in dump.events],
        }
        text = json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    if args.output and args.output != "-":
        out = Path(args.output).expanduser()
        out.write_text(text, encoding="utf-8")
        sys.stderr.write(f"Exported session {session_id} to {out} ({len(text)} characters)\n")
    else:
        sys.stdout.write(text)
    return OK


# -- sessions rm / prune ---------------------------------------------------------------------


def _drop_pointers(manager: SessionManager, session_id: str) -> list[Path]:
    """Remove the `active_*.json` pointers that name a deleted session."""
    from session.storage import read_json_file, unlink_quiet

    removed: list[Path] = []
    if not manager.sessions_dir.is_dir():
        return removed
    for entry in manager.sessions_dir.glob("active_*.json"):
        try:
            raw = read_json_file(entry, max_bytes=64 * 1024)
        except (ValueError, OSError):
            continue
        if isinstance(raw, dict) and raw.get("sessionId") == session_id and unlink_quiet(entry):
            removed.append(entry)
    return removed


def delete_unless_in_use(manager: SessionManager, session_id: str) -> list[Path]:
    """Delete a session's files while holding its lock; SessionLockedError if it is in use."""
    from session.checkpoints import CheckpointStore

    lock = manager.acquire_lock(session_id)
    try:
        removed = manager.delete_session(session_id)
        removed += _drop_pointers(manager, session_id)
    finally:
        lock.release()
    # Blobs only its checkpoints used (shared ones stay): nothing else ever deletes them.
    removed += CheckpointStore(manager).collect_garbage()
    return removed


def cmd_rm(args: argparse.Namespace) -> int:
    """`sessions rm ID`: refuses a session in use; asks unless --yes."""
    from session.manager import SessionLockedError

    manager = project_manager(args)
    session_id = resolve_session(manager, args.id)
    if in_use(manager, session_id):
        raise ProblemError(f"session {session_id} is in use by a running agent-assist; not deleted")
    info = next((i for i in manager.list_sessions() if i.session_id == session_id), None)
    label = f"{session_id}" + (f" ({info.title!r}, {info.turns} turns)" if info else "")
    if not confirm(f"Delete session {label}? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    try:
        removed = delete_unless_in_use(manager, session_id)
    except SessionLockedError:
        raise ProblemError(
            f"session {session_id} is in use by a running agent-assist; not deleted"
        ) from None
    if args.json:
        _write_json({"deleted": [session_id], "removed": [str(p) for p in removed]})
    else:
        sys.stdout.write(f"Deleted session {session_id} ({len(removed)} files).\n")
    return OK


def cmd_prune(args: argparse.Namespace) -> int:
    """`sessions prune --older-than 90d [--dry-run]`: this project only."""
    from session.manager import SessionLockedError

    age = parse_duration(args.older_than)
    manager = project_manager(args)
    cutoff = datetime.now(UTC) - age
    old = [i for i in manager.list_sessions() if i.updated_at < cutoff]
    busy = [i for i in old if in_use(manager, i.session_id)]
    candidates = [i for i in old if i not in busy]
    report: dict[str, Any] = {
        "project": manager.project_dir.name,
        "olderThan": args.older_than,
        "cutoff": _iso(cutoff),
        "candidates": [i.session_id for i in candidates],
        "skippedInUse": [i.session_id for i in busy],
        "deleted": [],
        "dryRun": bool(args.dry_run),
    }
    out: list[str] = []
    for info in candidates:
        out.append(f"  {info.session_id}  {_short(info.updated_at)}  {info.title or ''}")
    for info in busy:
        out.append(f"  {info.session_id}  in use: skipped")
    if not args.json:
        head = "Would delete" if args.dry_run else "Older than " + args.older_than
        sys.stdout.write(f"{head}: {len(candidates)} session(s) in {manager.project_dir.name}\n")
        sys.stdout.write("".join(line + "\n" for line in out))
    if args.dry_run or not candidates:
        if args.json:
            _write_json(report)
        return OK
    if not confirm(f"Delete {len(candidates)} session(s)? This cannot be undone.", args.yes):
        raise ProblemError("not confirmed; nothing was deleted (use --yes to skip the question)")
    for info in candidates:
        try:
            delete_unless_in_use(manager, info.session_id)
        except SessionLockedError:
            report["skippedInUse"].append(info.session_id)
            continue
        report["deleted"].append(info.session_id)
    if args.json:
        _write_json(report)
    else:
        sys.stdout.write(f"Deleted {len(report['deleted'])} session(s).\n")
    return OK


# -- search / reindex --------------------------------------------------------------------------


def _search_index() -> Any:
    """Return `session.search.SearchIndex`, or None in a build without search."""
    import importlib

    try:
        search = importlib.import_module("session.search")
    except ImportError:
        return None
    return getattr(search, "SearchIndex", None)


def cmd_search(args: argparse.Namespace) -> int:
    """`sessions search TEXT`."""
    index_cls = _search_index()
    if index_cls is None:
        raise ProblemError(NOT_AVAILABLE)
    if not args.text.strip():
        raise UsageError("search text is empty")
    results: list[dict[str, Any]] = []
    for manager in managers(args):
        if not manager.sessions_dir.is_dir():
            continue
        with index_cls.for_project(manager) as index:
            index.sync(manager)
            for hit in index.search(args.text, limit=args.limit):
                results.append(
                    {
                        "project": manager.project_dir.name,
                        "sessionId": hit.session_id,
                        "seq": hit.seq,
                        "turn": hit.turn,
                        "type": hit.type,
                        "snippet": hit.snippet,
                    }
                )
    if args.json:
        _write_json({"query": args.text, "results": results})
        return OK
    console = _console()
    if not results:
        console.print(f"No matches for {args.text!r}.", markup=False)
        return OK
    from rich.table import Table
    from rich.text import Text

    table = Table()
    columns = ["session", "turn", "seq", "type", "snippet"]
    if args.all_projects:
        columns.insert(0, "project")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in results:
        cells = [
            row["sessionId"],
            "" if row["turn"] is None else str(row["turn"]),
            str(row["seq"]),
            row["type"],
            row["snippet"],
        ]
        if args.all_projects:
            cells.insert(0, row["project"])
        table.add_row(*(Text(c) for c in cells))
    console.print(table)
    return OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """`sessions reindex`: rebuild the search index from the logs."""
    index_cls = _search_index()
    if index_cls is None:
        raise ProblemError(NOT_AVAILABLE)
    reports = []
    for manager in managers(args):
        if not manager.sessions_dir.is_dir():
            continue
        with index_cls.for_project(manager) as index:
            stats = index.rebuild(manager)
        reports.append(
            {
                "project": manager.project_dir.name,
                "sessions": stats.sessions,
                "events": stats.events,
                "rows": stats.rows,
                "skipped": stats.skipped,
                "problems": list(stats.problems),
            }
        )
    if args.json:
        _write_json({"projects": reports})
    else:
        for r in reports:
            sys.stdout.write(
                f"{r['project']}: {r['sessions']} sessions, {r['events']} events, "
                f"{r['rows']} text rows indexed\n"
            )
            for problem in r["problems"]:
                sys.stdout.write(f"  ⚠ {problem}\n")
        if not reports:
            sys.stdout.write("Nothing to index.\n")
    return PROBLEM if any(r["skipped"] for r in reports) else OK


# -- doctor ------------------------------------------------------------------------------------

Level = Literal["ok", "info", "warning", "problem"]


@dataclass
class Finding:
    """One line of the doctor's report."""

    level: Level
    area: str
    message: str


@dataclass
class DoctorReport:
    """Everything `doctor` found, for the table and for `--json`."""

    findings: list[Finding] = field(default_factory=list)
    root: dict[str, Any] = field(default_factory=dict)
    projects: list[dict[str, Any]] = field(default_factory=list)
    model: dict[str, Any] = field(default_factory=dict)

    def add(self, level: Level, area: str, message: str) -> None:
        """Record a finding."""
        self.findings.append(Finding(level, area, message))

    @property
    def problems(self) -> list[Finding]:
        """Return the findings that make `doctor` exit 1."""
        return [f for f in self.findings if f.level == "problem"]

    def as_json(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        return {
            "ok": not self.problems,
            "root": self.root,
            "projects": self.projects,
            "model": self.model,
            "findings": [f.__dict__ for f in self.findings],
            "problems": [f"{f.area}: {f.message}" for f in self.problems],
            "warnings": [f"{f.area}: {f.message}" for f in self.findings if f.level == "warning"],
        }


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
    from session.log import scan_log
    from session.models import TurnEndEvent, TurnStartEvent

    area = f"{manager.project_dir.name}/{session_id}"
    log_path = manager.log_path(session_id)
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
    _private(report, area, manager.snapshot_path(session_id))
    return row


def check_pointers(report: DoctorReport, manager: SessionManager) -> list[dict[str, Any]]:
    """Each `active_<instance>.json` must name an existing session."""
    from session.paths import is_valid_instance_id

    pointers: list[dict[str, Any]] = []
    if not manager.sessions_dir.is_dir():
        return pointers
    for entry in sorted(manager.sessions_dir.glob("active_*.json")):
        instance = entry.name[len("active_") : -len(".json")]
        area = f"{manager.project_dir.name}/{entry.name}"
        if not is_valid_instance_id(instance):
            report.add("problem", area, "unexpected pointer file name")
            continue
        warnings: list[str] = []
        target = manager.read_pointer(instance, warnings)
        for warning in warnings:
            report.add("problem", area, f"{warning} (the instance starts a fresh session)")
        pointers.append({"instance": instance, "sessionId": target, "ok": not warnings})
    return pointers


def check_index(report: DoctorReport, manager: SessionManager) -> dict[str, Any] | None:
    """Check that the search index exists and is up to date with the logs."""
    import sqlite3

    search = _search_index()
    if search is None:
        return None
    area = f"{manager.project_dir.name}/index"
    path = manager.project_dir / "index.sqlite"
    if not path.exists():
        report.add("info", area, "no search index yet (built on the first search)")
        return {"exists": False}
    if path.is_symlink():
        report.add("problem", area, "index.sqlite is a symlink; the index refuses to use it")
        return {"exists": True, "symlink": True}
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT session_id, scanned_size FROM sessions").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        report.add("warning", area, f"unreadable ({exc}); it is rebuilt on the next search")
        return {"exists": True, "readable": False}
    indexed = {str(sid): int(size) for sid, size in rows}
    stale = []
    for session_id in manager.session_ids():
        log = manager.log_path(session_id)
        size = log.stat().st_size if log.exists() else 0
        if indexed.get(session_id, -1) != size:
            stale.append(session_id)
    if stale:
        report.add(
            "warning",
            area,
            f"behind the logs for {len(stale)} session(s); it catches up on the next search "
            "(`agent-assist sessions reindex` rebuilds it)",
        )
    else:
        report.add("ok", area, f"up to date ({len(indexed)} sessions)")
    return {"exists": True, "readable": True, "stale": stale}


def check_model(report: DoctorReport, round_trip: bool, timeout: float) -> None:
    """Model configuration (the key only as set/unset) and a tiny round trip."""
    from .config import parse_initialization_options

    config, _ = parse_initialization_options(None, None, os.environ)
    model = config.model
    report.model = {
        "name": model.name,
        "baseUrl": model.base_url,
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
    report.add(
        "ok", "model", f"{model.name} at {model.base_url or 'the default endpoint'} (key {key})"
    )
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


def run_doctor(args: argparse.Namespace) -> DoctorReport:
    """Run every check."""
    from session.paths import storage_root

    report = DoctorReport()
    home = storage_root()
    if check_root(report, home):
        projects = home / "projects"
        if projects.is_symlink():
            report.add("problem", "storage", f"{projects} is a symlink; the server refuses it")
        for directory in project_dirs(home):
            manager = manager_for_project_dir(home, directory)
            root = _workspace_root_of(directory)
            sessions = [check_session(report, manager, sid) for sid in manager.session_ids()]
            entry: dict[str, Any] = {
                "project": directory.name,
                "workspace": root,
                "workspaceExists": bool(root and Path(root).is_dir()),
                "sessions": sessions,
                "pointers": check_pointers(report, manager),
                "index": check_index(report, manager),
            }
            report.projects.append(entry)
            where = root or "unknown workspace"
            if root and not Path(root).is_dir():
                where += " (no longer exists)"
            report.add("ok", "projects", f"{directory.name}: {len(sessions)} session(s), {where}")
        if not report.projects:
            report.add("ok", "projects", "no projects yet")
    check_model(report, round_trip=not args.offline, timeout=args.timeout)
    return report


_MARKS = {"ok": "✓", "info": "·", "warning": "⚠", "problem": "✗"}
_STYLES = {"ok": "green", "info": "dim", "warning": "yellow", "problem": "bold red"}


def cmd_doctor(args: argparse.Namespace) -> int:
    """`agent-assist doctor`."""
    report = run_doctor(args)
    if args.json:
        _write_json(report.as_json())
    else:
        console = _console()
        for finding in report.findings:
            console.print(
                f"{_MARKS[finding.level]} {finding.area}: {finding.message}",
                markup=False,
                style=_STYLES[finding.level],
            )
        count = len(report.problems)
        summary = "No problems found." if not count else f"{count} problem(s) found."
        console.print(summary, markup=False, style="bold")
    return PROBLEM if report.problems else OK


# -- argparse ----------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add `agent-assist sessions …` and `agent-assist doctor`."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", metavar="DIR", help="project directory (default: .)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    sessions = subparsers.add_parser(
        "sessions",
        help="list, show, search, export and delete stored sessions",
        description="Work with the stored sessions of this project. Exit codes: 0 ok, "
        "1 problem, 2 usage.",
    )
    sub = sessions.add_subparsers(dest="sessions_command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", parents=[common], help="list sessions (newest first)")
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.set_defaults(func=lambda a: _run(a, cmd_list))

    p = sub.add_parser("show", parents=[common], help="print a session's transcript")
    p.add_argument("id", help="session id (or a unique prefix)")
    p.set_defaults(func=lambda a: _run(a, cmd_show))

    p = sub.add_parser("search", parents=[common], help="full-text search of the sessions")
    p.add_argument("text")
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.add_argument("--limit", type=int, default=20, help="most results per project")
    p.set_defaults(func=lambda a: _run(a, cmd_search))

    p = sub.add_parser("export", parents=[common], help="export a session as Markdown or JSON")
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument("--format", choices=("md", "json"), default="md")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.set_defaults(func=lambda a: _run(a, cmd_export))

    p = sub.add_parser("rm", parents=[common], help="delete a session (asks first)")
    p.add_argument("id", help="session id (or a unique prefix)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(func=lambda a: _run(a, cmd_rm))

    p = sub.add_parser("prune", parents=[common], help="delete sessions not used for a while")
    p.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 90d, 12h, 2w")
    p.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask")
    p.set_defaults(func=lambda a: _run(a, cmd_prune))

    p = sub.add_parser("reindex", parents=[common], help="rebuild the search index from the logs")
    p.add_argument("--all-projects", action="store_true", help="every project in the store")
    p.set_defaults(func=lambda a: _run(a, cmd_reindex))

    doctor = subparsers.add_parser(
        "doctor",
        help="check the store, the logs, the index and the model",
        description="Check the storage root, every project's logs, snapshots and pointers, "
        "the search index and the model configuration. Exit 1 if a problem is found.",
    )
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--offline", action="store_true", help="skip the model round trip")
    doctor.add_argument(
        "--timeout", type=float, default=10.0, help="seconds for the model round trip"
    )
    doctor.set_defaults(func=lambda a: _run(a, cmd_doctor))
