"""What the lifecycle is given (`LifecycleConfig`) and what its transitions return."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..context import format_utc
from ..events import Persistence
from ..store.editor import EditorProcess
from ..store.session import DEFAULT_HISTORY_TOKENS
from ..workspace.patterns import DEFAULT_TRACKED


@dataclass(frozen=True)
class LifecycleConfig:
    """What the lifecycle needs to know about the user's settings."""

    tracked: tuple[str, ...] = DEFAULT_TRACKED
    persistence: Persistence = "full"
    secrets: tuple[str, ...] = ()
    history_tokens: int = DEFAULT_HISTORY_TOKENS
    # An instance named after a process that changes at each start: with no session of
    # its own, it is offered the project's newest session no process holds.
    offer_unheld: bool = False
    # The editor process such an instance is named after (its pointer records it, and the
    # pointers of its earlier launches are removed once their process is gone).
    editor: EditorProcess | None = None
    # Who writes the turns: the edge ("lsp", "acp") and the client's name, as it said it
    # (recorded in each `turn/start`, so a session shared across editors says which wrote what).
    edge: str | None = None
    client: str | None = None


@dataclass(frozen=True)
class PreviousSession:
    """The session this editor instance used last, offered for resume."""

    session_id: str
    last_active: datetime
    turns: int
    title: str | None
    host: str | None = None  # the machine it was last written on, when not this one
    source: str | None = None  # "seed": in the seed's store, imported if accepted
    last_turn: str | None = None  # how its last turn ended, when not completed

    def prompt(self) -> str:
        """Return the resume question, as the seed asks it (and on which machine, if shared).

        The seed's two lines, with what the session is between them: its title, its turns
        (or that it has none yet), and a last turn that did not complete.
        """
        on = f", on {self.host}" if self.host else ""
        if self.source == "seed":
            on += ", in the seed's store"
        return (
            f"Previous session found (last active: {format_utc(self.last_active)}{on})\n"
            f"{self.description()}\n"
            "Resume previous session?"
        )

    def description(self) -> str:
        """Say what the session is: `"Fix the loader" · 5 turns · its last turn was cancelled`."""
        title = " ".join((self.title or "").split())
        parts = [f"\u201c{title}\u201d" if title else "untitled"]
        if self.source != "seed":  # the seed's files count no turns
            turns = self.turns
            parts.append(f"{turns} turn{'s' * (turns != 1)}" if turns else "no turns yet")
        ended = LAST_TURN_WORDS.get(self.last_turn or "")
        if ended:
            parts.append(ended)
        return " · ".join(parts)


LAST_TURN_WORDS = {
    "interrupted": "its last turn was interrupted",
    "aborted": "its last turn was cancelled",
    "error": "its last turn failed",
}


@dataclass(frozen=True)
class StoreState:
    """Where the sessions are kept, and whether the store takes writes now."""

    kind: str
    location: str
    online: bool
    pending: int


@dataclass(frozen=True)
class SaveResult:
    """What an explicit save did."""

    session_id: str
    checkpoint: int
    saved_at: datetime
    path: str  # where it was written: the snapshot file, or the database


@dataclass(frozen=True)
class ResetResult:
    """What a reset did."""

    old_session_id: str
    session_id: str
    deleted_files: list[str] = field(default_factory=list)
