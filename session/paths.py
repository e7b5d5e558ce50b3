"""Storage layout: the root directory, project directory names and id validation."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

SESSION_ID_RE = re.compile(r"^[a-f0-9]{12}$")
INSTANCE_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

HOME_ENV = "AGENT_ASSIST_HOME"


def storage_root() -> Path:
    """Return the storage root: `$AGENT_ASSIST_HOME` or the platform config dir."""
    override = os.environ.get(HOME_ENV)
    if override:
        return Path(override).expanduser().absolute()
    return Path(platformdirs.user_config_dir("agent_assist"))


def named_dir(name: str, key: str, digits: int = 8) -> str:
    """Return `<name>_<hash>`: one plain path component, readable, unique by `key`."""
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:digits]
    return f"{_NAME_UNSAFE.sub('_', name).strip('._')[:48] or 'project'}_{digest}"


def project_dir_name(workspace_root: Path) -> str:
    """Return `<name>_<hash8>` for a workspace: a readable name plus a hash of its path."""
    resolved = workspace_root.resolve()
    return named_dir(resolved.name, str(resolved))


SCAN_HINTS_DIR = "scan-hints"


def scan_hint_path(home: Path, workspace_root: Path) -> Path:
    """Return `<home>/scan-hints/<name>_<hash8>.json`: this machine's hint for a workspace."""
    return home / SCAN_HINTS_DIR / f"{project_dir_name(workspace_root)}.json"


def is_valid_session_id(value: object) -> bool:
    """Return True if `value` is a 12-hex-char session id (checked before any path is built)."""
    return isinstance(value, str) and SESSION_ID_RE.fullmatch(value) is not None


def is_valid_instance_id(value: object) -> bool:
    """Return True if `value` is a safe editor-instance id."""
    return isinstance(value, str) and INSTANCE_ID_RE.fullmatch(value) is not None


def sanitize_instance_id(value: str, default: str = "default") -> str:
    """Turn any string (e.g. a client name) into a valid instance id."""
    cleaned = _NAME_UNSAFE.sub("-", value).strip("-.")[:64]
    return cleaned if is_valid_instance_id(cleaned) else default


# The machine's name as other machines see it in "Previous session found (… on HOST)".
HOST_ENV = "AGENT_ASSIST_HOST"


def host_name() -> str:
    """Return `$AGENT_ASSIST_HOST`, else the host name (a container's may be random)."""
    named = os.environ.get(HOST_ENV, "").strip()
    if named:
        return named
    if hasattr(os, "uname"):  # what gethostname() returns on POSIX, without loading socket
        return os.uname().nodename
    import socket

    return socket.gethostname()
