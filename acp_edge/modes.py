"""The seed's phases (design, code, deploy) as ACP session modes (pure)."""

from __future__ import annotations

from acp.helpers import update_current_mode
from acp.schema import CurrentModeUpdate, SessionMode, SessionModeState

from session.lifecycle.recording import PHASES

NONE = "none"  # no phase set
MODES = (
    SessionMode(id=NONE, name="No phase", description="The conversation has no phase set"),
    SessionMode(id="design", name="Design", description="Deciding what to build"),
    SessionMode(id="code", name="Code", description="Writing and changing the code"),
    SessionMode(id="deploy", name="Deploy", description="Shipping and running it"),
)
assert tuple(m.id for m in MODES[1:]) == PHASES


def mode_of(phase: str | None) -> str:
    """Return the mode of a phase (`none` when unset)."""
    return phase if phase in PHASES else NONE


def phase_of(mode_id: str) -> str | None:
    """Return the phase of a mode (None: no phase); ValueError for a mode not ours."""
    if mode_id == NONE:
        return None
    if mode_id not in PHASES:
        raise ValueError(f"unknown mode {mode_id!r} (one of {NONE}, {', '.join(PHASES)})")
    return mode_id


def mode_state(phase: str | None) -> SessionModeState:
    """Return the modes offered and the current one."""
    return SessionModeState(current_mode_id=mode_of(phase), available_modes=list(MODES))


def mode_changed(phase: str | None) -> CurrentModeUpdate:
    """Return the update saying the mode is now `phase`'s (the model set it)."""
    return update_current_mode(mode_of(phase))
