"""Test data shared by the e2e, cli and reliability suites."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any


def make_workspace(tmp_path: Path) -> Path:
    """Create the standard test project: a spec file and one template."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "agent_spec.md").write_text("# Support agent\nthree tools\n")
    (root / "templates").mkdir()
    (root / "templates" / "reply.txt").write_text("Dear {name},\n")
    return root


def stored_manifest(snapshot: dict[str, Any]) -> dict[str, str]:
    """Return a snapshot's `file_manifest` as {path: sha256}, from the JSON as stored.

    The seed's `{path: sha256}` (schema v3, what we write), or packed as schema v4 was:
    {"paths": [...], "sha256": "<64 hex digits per path>"}.
    """
    stored = snapshot["file_manifest"]
    if stored.keys() != {"paths", "sha256"}:
        return dict(stored)
    digests = stored["sha256"]
    return {path: digests[64 * i : 64 * (i + 1)] for i, path in enumerate(stored["paths"])}


def store_manifest(snapshot: dict[str, Any], files: dict[str, str]) -> None:
    """Set a snapshot's `file_manifest` (JSON, as stored: the seed's form) to `files`."""
    snapshot["file_manifest"] = dict(files)


def add_to_manifest(snapshot: dict[str, Any], entries: dict[str, str]) -> None:
    """Add `entries` to a snapshot's stored `file_manifest` (JSON, as stored)."""
    store_manifest(snapshot, {**stored_manifest(snapshot), **entries})


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on (just now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
