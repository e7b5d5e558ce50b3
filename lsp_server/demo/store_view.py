"""What the demo reads back from the store: events, summaries, prompts, search hits, files."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

from session.store.backend import SessionStore
from session.store.choose import open_store


class StoreFiles(Protocol):
    """Where the local store keeps the demo project's files, which the demo shows."""

    @property
    def project_dir(self) -> Path:
        """Return the project's directory in the store."""
        ...

    @property
    def checkpoints_dir(self) -> Path:
        """Return the directory of the project's checkpoint records."""
        ...

    def log_path(self, session_id: str) -> Path:
        """Return a session's event log."""
        ...

    def snapshot_path(self, session_id: str) -> Path:
        """Return a session's snapshot."""
        ...

    def pointer_path(self, instance_id: str) -> Path:
        """Return an editor instance's pointer file."""
        ...


class StoreView:
    """The demo project's store, read directly (the server is the only writer)."""

    def __init__(self, workspace: Path, home: Path) -> None:
        from session.local.scope import project_layout

        self.workspace = workspace
        self.home = home
        self.layout: StoreFiles = project_layout(workspace, home)  # the demo shows its files

    @property
    def manager(self) -> SessionStore:
        """Return the store of the demo project (the local files: the demo's own)."""
        return open_store(None, self.workspace, home=self.home)

    def log_types(self, session_id: str, since: int = 0) -> tuple[int, str]:
        """Return (number of events, 'type ×n, …' for events from seq `since`)."""
        events = self.manager.read_events(session_id).events
        counts = Counter(e.type for e in events if e.seq >= since)
        return len(events), ", ".join(f"{t} ×{n}" for t, n in counts.items())

    async def wait_summary(self, session_id: str, timeout: float = 20.0) -> Any:
        """Wait for the summary of every turn so far (None if it does not come in time)."""
        turns = self.manager.read_events(session_id).events
        wanted = sum(1 for e in turns if e.type == "turn/end")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.manager.read_events(session_id).events
            found = [e for e in events if e.type == "session/summary" and e.data.turns >= wanted]
            if found:
                return found[-1]
            await asyncio.sleep(0.1)
        return None

    def resume_lines_sent(self, session_id: str, since: int) -> list[str]:
        """Return the drift lines of the resume context found in a logged system prompt."""
        from session.events import RequestHeaderEvent

        for event in self.manager.read_events(session_id).events:
            if event.seq >= since and isinstance(event, RequestHeaderEvent):
                prompt = event.data.system_prompt or ""
                if "# Resumed Session Context" in prompt:
                    tail = prompt.split("## File Changes Since Last Session", 1)
                    lines = tail[1].strip().splitlines() if len(tail) == 2 else []
                    picked = ["## File Changes Since Last Session"]
                    picked += [line for line in lines if line.startswith("- ")]
                    return picked
        return []

    def search(self, query: str) -> list[dict[str, Any]] | None:
        """Search the store's index directly (None in a build without search)."""
        try:
            importlib.import_module("session.search")  # a build without search lacks it
        except ImportError:
            return None
        search = self.manager.open_search()
        try:
            return [
                {"sessionId": h.session_id, "turn": h.turn, "type": h.type, "snippet": h.snippet}
                for h in search.search(query, limit=5)
            ]
        finally:
            search.close()

    def files(self) -> list[Path]:
        """Return every file in the store, sorted."""
        return [path for path in sorted(self.home.rglob("*")) if path.is_file()]
