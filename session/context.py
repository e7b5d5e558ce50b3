"""The resume-context block injected into the system prompt of a resumed session."""

from __future__ import annotations

from datetime import UTC, datetime

from .snapshot import SessionState
from .workspace.drift import DriftReport

_CLOSING = (
    "IMPORTANT: You are resuming a previous session. Review the context above\n"
    "before proceeding. If the user's request seems to continue prior work,\n"
    "use this context. If they start a new topic, proceed normally."
)


def format_utc(moment: datetime) -> str:
    """Format a timestamp as `YYYY-MM-DD HH:MM UTC`."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


NOT_KEPT = "summary not kept: metadata-only persistence"


def remembered(state: SessionState, pending_summary: str | None = None) -> tuple[str, list[str]]:
    """Return the summary and the key decisions a resumed session's model is given."""
    if state.persistence == "metadata":
        summary = (
            f"{NOT_KEPT}. The earlier messages were not kept either: ask the user for "
            "any context you need."
        )
        return summary, [NOT_KEPT] if state.turns else []
    summary = pending_summary or state.summary or state.compacted_history_summary or ""
    return summary.strip(), [d.strip() for d in state.decisions]


def build_resume_context(
    state: SessionState,
    drift: DriftReport | None = None,
    pending_summary: str | None = None,
    last_active: datetime | None = None,
) -> str:
    """Build the `# Resumed Session Context` block.

    A session with turns always has its summary and decisions sections; `pending_summary`
    stands in for turns the recorded summary does not cover yet.
    """
    lines = [
        "# Resumed Session Context",
        f"This is a resumed session (ID: {state.session_id}).",
        f"Originally started: {format_utc(state.created_at)}",
        f"Last active: {format_utc(last_active or state.updated_at)}",
    ]
    if state.agent_spec_path:
        lines += ["", f"Agent specification file: {state.agent_spec_path}"]
    summary, kept = remembered(state, pending_summary)
    decisions = [f"- {d}" for d in kept]
    if summary or state.turns:
        lines += ["", "## Previous Session Summary", (summary or "(no summary yet)").strip()]
    if decisions or state.turns:
        lines += ["", "## Key Decisions Made", *(decisions or ["- none recorded"])]
    if drift is not None and (drift.has_drift or drift.unchanged):
        lines += ["", "## File Changes Since Last Session"]
        lines += [f"- {path}: modified" for path in drift.modified]
        lines += [f"- {path}: deleted" for path in drift.deleted]
        lines += [f"- {path}: created" for path in drift.created]
        if drift.unchanged:
            lines.append(f"{drift.unchanged} tracked file(s) unchanged")
    lines += ["", _CLOSING]
    return "\n".join(lines)
