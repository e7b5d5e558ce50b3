"""Which checkpoint holds a resume's changed files: worked out in a thread from the resume on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from session.checkpoint_holding import Holding, PendingHolding
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager

from .conftest import make_lifecycle, run_turn

CHANGED = ["templates/prompt.txt", "agent_spec.md"]  # modified, then deleted


def resumed_with_changes(manager: SessionManager, workspace: Path) -> SessionLifecycle:
    """A saved session (checkpoint 1 keeps both files), one file edited, one deleted, resumed."""
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    assert lc.explicit_save().checkpoint == 1
    assert lc.close()
    (workspace / "templates" / "prompt.txt").write_text("hello {name}, edited\n")
    (workspace / "agent_spec.md").unlink()
    lc = make_lifecycle(manager)
    assert lc.resume_or_start(lc.find_previous(), True) == "resumed"
    drift = lc.last_drift
    assert drift is not None and [*drift.modified, *drift.deleted] == CHANGED
    return lc


def test_the_resume_starts_the_lookup_and_the_editor_gets_its_answer(
    manager: SessionManager, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lc = resumed_with_changes(manager, workspace)
    pending = lc.pending_holding
    assert pending is not None and pending.answers(lc.session_id, CHANGED)

    def refuse(*args: object) -> Holding:
        raise AssertionError("looked up again")

    monkeypatch.setattr(lc.checkpoints, "holding", refuse)
    assert lc.checkpoints_holding(CHANGED) == {"templates/prompt.txt": 1, "agent_spec.md": 1}
    with pytest.raises(AssertionError, match="looked up again"):  # other paths: asked now
        lc.checkpoints_holding(["templates/prompt.txt"])
    monkeypatch.undo()
    lc.close()


def test_a_checkpoint_written_after_the_resume_is_not_missed(
    manager: SessionManager, workspace: Path
) -> None:
    lc = resumed_with_changes(manager, workspace)
    assert lc.explicit_save().checkpoint == 2  # keeps the edited file; the deleted one is gone
    assert lc.pending_holding is None
    assert lc.checkpoints_holding(CHANGED) == {"templates/prompt.txt": 2, "agent_spec.md": 1}
    lc.close()


def test_a_resume_without_changed_files_starts_nothing(
    manager: SessionManager, workspace: Path
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.explicit_save()
    assert lc.close()
    lc = make_lifecycle(manager)
    assert lc.resume_or_start(lc.find_previous(), True) == "resumed"
    assert lc.pending_holding is None
    lc.close()


def test_a_lookup_that_failed_in_its_thread_is_asked_again_and_its_warnings_handed_over() -> None:
    calls: list[str] = []

    def holding(session_id: str, paths: Sequence[str], warnings: list[str]) -> Holding:
        calls.append(session_id)
        warnings.append(f"warned {len(calls)}")
        if len(calls) == 1:
            raise OSError("the disk went away for a moment")
        return dict.fromkeys(paths, 3)

    pending = PendingHolding("s1", ["a.txt"], holding)
    warnings: list[str] = []
    assert pending.result(warnings) == {"a.txt": 3}
    assert calls == ["s1", "s1"] and warnings == ["warned 2"]
    assert not pending.answers("s2", ["a.txt"]) and not pending.answers("s1", ["b.txt"])


def test_a_lookup_kept_for_later_runs_in_the_caller() -> None:
    ran: list[Sequence[str]] = []

    def holding(session_id: str, paths: Sequence[str], warnings: list[str]) -> Holding:
        ran.append(paths)
        return dict.fromkeys(paths)

    pending = PendingHolding("s1", ["a.txt"], holding, background=False)
    assert ran == []
    assert pending.result([]) == {"a.txt": None} and ran == [("a.txt",)]
