"""The seed's own store: its sessions of this project found, listed, and copied into ours.

The seed's tool keeps `~/.config/datarobot/agent_assist/projects/<name>_<hash>/sessions/`
(`$AGENT_ASSIST_SEED_HOME` names another root), holding `<id>.json` session files (schema
v3: the seed's twelve fields) and `active_<pid>.json` pointers. A workspace's directory
there is `<name>_<hash8>` as ours names it (`paths.project_dir_name`) if there is one; the
seed's hash is not documented, so else the one directory whose name part is the
workspace's (sanitized) base name; several such directories: none is taken (it is said).

Nothing is ever written into the seed's store, nothing there is followed through a
symlink, and a file that cannot be read or is not a valid session file is named in a
warning and skipped. Importing copies a session file into the local store as a session
file of ours (`write_state_file`: still the seed's schema), never over a session of that
id; it resumes from its summary, decisions, recent messages and manifest (it has no log).

Locating the store imports no model: `sessions list` pays for reading only when a seed
store holds this project's sessions.
"""

from __future__ import annotations

import logging
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from ..paths import is_valid_session_id, project_dir_name
from ..storage import parse_json, read_file_bytes

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..snapshot import SessionState
    from .backend import SessionStore

logger = logging.getLogger(__name__)

SEED_HOME_ENV = "AGENT_ASSIST_SEED_HOME"
MAX_SESSION_BYTES = 16 * 1024 * 1024  # the seed's files are small; a manifest of 100k files fits
MAX_POINTER_BYTES = 64 * 1024
MAX_ENTRIES = 20_000  # names looked at in a sessions directory
_POINTER_PREFIX, _JSON = "active_", ".json"


def seed_root() -> Path:
    """Return the seed's store root: `$AGENT_ASSIST_SEED_HOME`, else its documented place."""
    override = os.environ.get(SEED_HOME_ENV, "").strip()
    if override:
        return Path(override).expanduser().absolute()
    return Path.home() / ".config" / "datarobot" / "agent_assist"


def _plain_dir(path: Path) -> bool:
    """Return True for a directory that is not a symlink."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _holds_session_files(directory: Path) -> bool:
    """Return True if `directory` has a file named as a session file (`<id>.json`)."""
    try:
        with os.scandir(directory) as listing:
            names = [entry.name for entry in islice(listing, MAX_ENTRIES)]
    except OSError:
        return False
    return any(n.endswith(_JSON) and is_valid_session_id(n[: -len(_JSON)]) for n in names)


@dataclass(frozen=True)
class SeedLocation:
    """Where a workspace's sessions are in the seed's store, or why none were found."""

    looked_at: Path  # the root (or the path given)
    sessions_dir: Path | None
    note: str | None = None  # why `sessions_dir` is None
    missing: bool = False  # True: there is no seed store there at all


def locate(workspace_root: Path, source: Path | None = None) -> SeedLocation:
    """Return the workspace's `sessions/` in the seed's store (or `source`), or why not.

    `source` may be the store's root, one of its `projects/<dir>`, or such a `sessions/`
    (any directory holding `<id>.json` files): a project directory named so is used
    whatever its name.
    """
    root = (source.expanduser() if source is not None else seed_root()).absolute()
    if not root.is_dir():  # the root itself may be a symlink (a dotfiles ~/.config)
        return SeedLocation(root, None, f"no seed store at {root}", missing=True)
    if source is not None and not _plain_dir(root / "projects"):
        if _plain_dir(root / "sessions"):
            return SeedLocation(root, root / "sessions")
        if root.name == "sessions" or _holds_session_files(root):
            return SeedLocation(root, root)
        return SeedLocation(
            root,
            None,
            f"no seed store at {root} (neither its root with projects/, nor a project "
            "directory with sessions/, nor a sessions/ directory)",
            missing=True,
        )
    projects = root / "projects"
    if not _plain_dir(projects):
        return SeedLocation(root, None, f"no seed store at {root} (no projects/)", missing=True)
    exact = project_dir_name(workspace_root)
    project = projects / exact
    if not _plain_dir(project):
        name = exact.rsplit("_", 1)[0]
        try:
            entries = sorted(os.scandir(projects), key=lambda entry: entry.name)
        except OSError as exc:
            return SeedLocation(root, None, f"{projects}: cannot be read ({exc.strerror or exc})")
        named = [
            Path(entry.path)
            for entry in entries
            if "_" in entry.name
            and entry.name.rsplit("_", 1)[0] == name
            and entry.is_dir(follow_symlinks=False)
        ]
        if not named:
            return SeedLocation(root, None, f"no sessions of this project in {projects}")
        if len(named) > 1:
            listed = ", ".join(path.name for path in named)
            return SeedLocation(
                root,
                None,
                f"several projects in {projects} are named {name} ({listed}); not knowing "
                f"which is this one, none is used (name one: --from {projects}/<dir>)",
            )
        project = named[0]
    if not _plain_dir(project / "sessions"):
        return SeedLocation(root, None, f"no sessions of this project in {project}")
    return SeedLocation(root, project / "sessions")


@dataclass(frozen=True)
class SeedSession:
    """One readable session file of the seed's store."""

    session_id: str
    path: Path
    state: SessionState
    active: bool = False  # a pointer of the seed's names it

    @property
    def updated_at(self) -> datetime:
        """Return the time of its last save (the seed's `updated_at`)."""
        return self.state.updated_at

    @property
    def title(self) -> str | None:
        """Return its title, else the first line of its summary."""
        line = (self.state.summary or "").strip().split("\n")[0][:80]
        return self.state.title or line or None


@dataclass
class SeedScan:
    """What the seed's store holds of one workspace: its sessions, newest first."""

    location: SeedLocation
    sessions: list[SeedSession] = field(default_factory=list)
    problems: list[tuple[Path, str]] = field(default_factory=list)  # skipped: (file, why)

    @property
    def note(self) -> str | None:
        """Return why there is nothing to import, or None."""
        if self.location.note is not None:
            return self.location.note
        if not self.sessions and not self.problems:
            return f"no sessions of this project in {self.location.sessions_dir}"
        return None

    @property
    def warnings(self) -> list[str]:
        """Return a warning per file skipped, naming it."""
        return [f"{path}: {why}; skipped (left as it is)" for path, why in self.problems]

    def find(self, session_id: str) -> SeedSession | None:
        """Return the session of that id, or None."""
        return next((s for s in self.sessions if s.session_id == session_id), None)


def read_seed_file(path: Path, session_id: str) -> tuple[SessionState | None, str | None]:
    """Read a seed's session file as ours reads one, writing nothing: (state, or why not).

    No manifest cache is written beside it (`snapshot_file.read` would): the seed's store
    is only read.
    """
    from pydantic import ValidationError

    from ..snapshot import FutureSchemaError, SessionState, migrate_snapshot

    try:
        data, _ = read_file_bytes(path, MAX_SESSION_BYTES)
        raw = parse_json(data)
    except FileNotFoundError:
        return None, "gone while being read"
    except ValueError as exc:
        return None, f"cannot be read ({exc})"
    if not isinstance(raw, dict):
        return None, "not a session file (not a JSON object)"
    try:
        migrated, _version = migrate_snapshot(raw)
        state = SessionState.model_validate(migrated)
    except FutureSchemaError:
        return None, f"written by a newer version (schema_version {raw['schema_version']})"
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return None, f"not a valid session file ({where}: {first['msg']})"
    except ValueError as exc:
        return None, f"not a valid session file ({exc})"
    if state.session_id != session_id:
        return None, f"not a valid session file (it names session {state.session_id})"
    return state, None


def _pointed(path: Path) -> str | None:
    """Return the session a seed's pointer names (`session_id`, or ours `sessionId`)."""
    try:
        raw = parse_json(read_file_bytes(path, MAX_POINTER_BYTES)[0])
    except (FileNotFoundError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    named = raw.get("session_id", raw.get("sessionId"))
    return named if is_valid_session_id(named) else None


def scan(workspace_root: Path, source: Path | None = None) -> SeedScan:
    """Return the seed's sessions of the workspace (see `locate`), newest first."""
    location = locate(workspace_root, source)
    found = SeedScan(location)
    directory = location.sessions_dir
    if directory is None:
        return found
    try:
        with os.scandir(directory) as listing:
            entries = list(islice(listing, MAX_ENTRIES))
    except OSError as exc:
        found.problems.append((directory, f"cannot be read ({exc.strerror or exc})"))
        return found
    active: set[str] = set()
    for entry in sorted(entries, key=lambda e: e.name):
        name, path = entry.name, Path(entry.path)
        if not name.endswith(_JSON):
            continue
        if entry.is_symlink():
            found.problems.append((path, "a symlink (never followed)"))
            continue
        if name.startswith(_POINTER_PREFIX):
            if (named := _pointed(path)) is not None:
                active.add(named)
            continue
        session_id = name[: -len(_JSON)]
        if not is_valid_session_id(session_id):
            continue  # not a session file's name: nothing is built from it
        state, why = read_seed_file(path, session_id)
        if state is None:
            found.problems.append((path, why or "unreadable"))
            continue
        found.sessions.append(SeedSession(session_id, path, state))
    found.sessions = [
        SeedSession(s.session_id, s.path, s.state, s.session_id in active) for s in found.sessions
    ]
    found.sessions.sort(key=lambda s: (s.updated_at, s.session_id), reverse=True)
    return found


@dataclass(frozen=True)
class ImportOutcome:
    """What importing one seed session did."""

    session_id: str
    status: str  # "imported", "would-import", "already-imported", "in-use"
    message: str


def is_imported(store: SessionStore, session_id: str) -> bool:
    """Return True if the store has a session of that id (imported, or ours)."""
    return store.exists(session_id)


def newest_unimported(store: SessionStore) -> SeedSession | None:
    """Return the seed's newest session of this project not in `store`, if any.

    Cheap when there is no seed store (a stat or two). The files skipped are logged.
    """
    found = scan(store.workspace_root)
    for warning in found.warnings:
        logger.warning("seed store: %s", warning)
    return next((s for s in found.sessions if not is_imported(store, s.session_id)), None)


def import_offered(
    store: SessionStore,
    session_id: str,
    importer: Callable[[SeedSession], ImportOutcome],
) -> None:
    """Import the seed's session offered for resume (no-op if it is here already).

    `importer(seed)`: the store's own, its redactor bound (`local/seed_import.import_session`,
    PostgreSQL's `pg/importing.import_seed_session`).
    """
    from ..errors import SessionError

    if store.exists(session_id):
        return
    seed = scan(store.workspace_root).find(session_id)
    if seed is None:
        raise SessionError(f"session {session_id} is no longer in the seed's store")
    outcome = importer(seed)
    if outcome.status not in ("imported", "already-imported"):
        raise SessionError(f"session {session_id}: {outcome.message}")
