"""A machine-local cache of a PostgreSQL project's latest sessions, for a start while away.

`<home>/cache/pg/<name>_<digest>/` (the project's name and a digest of its key, as the
spool's directory) holds, for the project's newest sessions (`KEEP`), the snapshot as the
database stored it (scrubbed), the machine it was last written on and its last activity,
and `pointers.json`, the session each editor instance last used. A server keeps it fresh
while the database answers (each snapshot it stores, each pointer it moves) and rebuilds it
when it is missing; a server started while the database is away offers the previous session
from it (`offline.py`). Derived and machine-local: never fsynced, safe to delete, and
nothing in it is trusted beyond what it offers (a damaged file is ignored).
"""

from __future__ import annotations

import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..paths import is_valid_instance_id, is_valid_session_id, named_dir
from ..storage import StorageError, atomic_write_bytes, ensure_private_dir, read_json_file
from ..workspace.identity import ProjectIdentity

logger = logging.getLogger(__name__)

KEEP = 5  # sessions cached per project
_POINTERS = "pointers.json"
_SUFFIX = ".snapshot.json"


def cache_dir(home: Path, identity: ProjectIdentity) -> Path:
    """Return `<home>/cache/pg/<name>_<digest>`: one plain directory whatever the key."""
    return home / "cache" / "pg" / named_dir(identity.name, identity.key, 16)


class SnapshotCache:
    """The cached snapshots and pointers of one project (see the module doc)."""

    def __init__(self, home: Path, identity: ProjectIdentity) -> None:
        self.directory = cache_dir(home, identity)

    def _write(self, name: str, value: Any) -> None:
        import orjson

        try:
            for directory in (self.directory.parent.parent, self.directory.parent, self.directory):
                ensure_private_dir(directory)
            atomic_write_bytes(self.directory / name, orjson.dumps(value), durable=False)
        except (OSError, StorageError) as exc:  # a cache: the session goes on without it
            logger.warning("the session cache %s was not written: %s", self.directory, exc)

    def _read(self, name: str) -> Any:
        try:
            return read_json_file(self.directory / name)
        except (OSError, ValueError):
            return None

    @property
    def empty(self) -> bool:
        """Return True if nothing is cached (missing, or never written)."""
        return next(self._names(), None) is None

    def _names(self) -> Any:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return iter(())
        return (
            n.removesuffix(_SUFFIX)
            for n in names
            if n.endswith(_SUFFIX) and is_valid_session_id(n.removesuffix(_SUFFIX))
        )

    def put(
        self, session_id: str, snapshot: dict[str, Any], host: str | None, last: datetime | None
    ) -> None:
        """Cache a session's stored snapshot; keep only the `KEEP` newest."""
        if not is_valid_session_id(session_id):
            return
        active = last.isoformat() if last is not None else snapshot.get("updated_at")
        entry = {"snapshot": snapshot, "host": host, "last_active": active}
        self._write(f"{session_id}{_SUFFIX}", entry)
        for old_id, _ in self.sessions()[KEEP:]:
            try:
                os.unlink(self.directory / f"{old_id}{_SUFFIX}")
            except OSError:
                pass

    def get(self, session_id: str) -> dict[str, Any] | None:
        """Return a cached entry (`snapshot`, `host`, `last_active`), or None."""
        if not is_valid_session_id(session_id):
            return None
        entry = self._read(f"{session_id}{_SUFFIX}")
        ok = isinstance(entry, dict) and isinstance(entry.get("snapshot"), dict)
        return entry if ok else None

    def sessions(self) -> list[tuple[str, dict[str, Any]]]:
        """Return the cached sessions, most recently active first."""
        found = [(sid, entry) for sid in self._names() if (entry := self.get(sid)) is not None]
        found.sort(key=lambda item: str(item[1].get("last_active") or ""), reverse=True)
        return found

    def pointer(self, instance_id: str) -> str | None:
        """Return the session this editor instance last used, as cached."""
        pointers = self._read(_POINTERS)
        value = pointers.get(instance_id) if isinstance(pointers, dict) else None
        return value if is_valid_session_id(value) else None

    def set_pointer(self, instance_id: str, session_id: str) -> None:
        """Remember the session this editor instance uses now."""
        if not is_valid_instance_id(instance_id) or not is_valid_session_id(session_id):
            return
        pointers = self._read(_POINTERS)
        pointers = pointers if isinstance(pointers, dict) else {}
        if pointers.get(instance_id) != session_id:
            self._write(_POINTERS, {**pointers, instance_id: session_id})
