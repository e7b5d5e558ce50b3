"""The editor process an instance is named after when its editor sends no `instanceId`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EditorProcess:
    """The editor an instance without an `instanceId` is named after: its name and pid."""

    client: str
    pid: int

    def record(self) -> dict[str, object]:
        """Return what a pointer of this editor's instance records of it."""
        return {"client": self.client, "processId": self.pid}
