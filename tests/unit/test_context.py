"""The resume-context block, exactly as the seed documents show it."""

from __future__ import annotations

from datetime import UTC, datetime

from session.context import build_resume_context
from session.snapshot import SessionState
from session.workspace.drift import DriftReport

SEED_BLOCK = """# Resumed Session Context
This is a resumed session (ID: a1b2c3d4e5f6).
Originally started: 2026-03-30 10:15 UTC
Last active: 2026-03-31 14:22 UTC

Agent specification file: agent_spec.md

## Previous Session Summary
User designed a customer support agent with three tools. Model selection
was GPT-5 via the DataRobot model catalog. Spec was saved but not yet
implemented in code.

## Key Decisions Made
- Selected GPT-5 as the agent model for strong reasoning capability
- Chose REST API tools over SDK wrappers for portability
- Deferred authentication configuration to implementation phase

## File Changes Since Last Session
- agent_spec.md: modified

IMPORTANT: You are resuming a previous session. Review the context above
before proceeding. If the user's request seems to continue prior work,
use this context. If they start a new topic, proceed normally."""


def seed_state() -> SessionState:
    return SessionState(
        session_id="a1b2c3d4e5f6",
        created_at=datetime(2026, 3, 30, 10, 15, 42, tzinfo=UTC),
        updated_at=datetime(2026, 3, 31, 14, 22, 5, tzinfo=UTC),
        agent_spec_path="agent_spec.md",
        summary=(
            "User designed a customer support agent with three tools. Model selection\n"
            "was GPT-5 via the DataRobot model catalog. Spec was saved but not yet\n"
            "implemented in code."
        ),
        decisions=[
            "Selected GPT-5 as the agent model for strong reasoning capability",
            "Chose REST API tools over SDK wrappers for portability",
            "Deferred authentication configuration to implementation phase",
        ],
    )


def test_block_matches_the_seed_exactly() -> None:
    drift = DriftReport(modified=["agent_spec.md"])
    assert build_resume_context(seed_state(), drift) == SEED_BLOCK


def test_unchanged_count_deleted_and_created_files() -> None:
    drift = DriftReport(modified=["a.md"], deleted=["b.md"], created=["templates/c"], unchanged=3)
    block = build_resume_context(seed_state(), drift)
    assert (
        "- a.md: modified\n- b.md: deleted\n- templates/c: created\n3 tracked file(s) unchanged"
        in block
    )


def test_empty_sections_are_omitted() -> None:
    state = SessionState(session_id="a1b2c3d4e5f6")
    block = build_resume_context(state, DriftReport())
    assert "## Previous Session Summary" not in block
    assert "## Key Decisions Made" not in block
    assert "## File Changes" not in block
    assert "Agent specification file" not in block
    assert block.startswith(
        "# Resumed Session Context\nThis is a resumed session (ID: a1b2c3d4e5f6)."
    )
    assert block.endswith("proceed normally.")
