"""The running summary: what is planned, what is recorded, what the resume block shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from session.compaction import (
    FALLBACK_LABEL,
    FORMER_FALLBACK_LABELS,
    CompactionSummary,
    extractive_summary,
)
from session.context import build_resume_context
from session.local.manager import SessionManager
from session.snapshot import merge_decisions
from session.summary import MAX_SUMMARY_WORDS, clip_words, extractive_session_summary

from .conftest import make_lifecycle, run_turn


def test_nothing_is_planned_with_a_turn_open_or_when_everything_is_covered(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    assert lc.plan_summary() is None  # no turns yet
    run_turn(lc, "one", "first")
    plan = lc.plan_summary()
    assert plan is not None and plan.turns == 1
    lc.record_summary(plan, CompactionSummary(summary="S1", decisions=["A"]), fallback=False)
    assert lc.plan_summary() is None
    run_turn(lc, "two", "second", end=None)  # open
    assert lc.plan_summary() is None


def test_the_next_plan_covers_only_the_turns_since(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "alpha question", "alpha answer")
    plan = lc.plan_summary()
    assert plan is not None
    lc.record_summary(plan, CompactionSummary(summary="about alpha"), fallback=False)
    run_turn(lc, "beta question", "beta answer")
    plan = lc.plan_summary()
    assert plan is not None and plan.previous == "about alpha"
    text = plan.transcript(limit=10_000)
    assert "Previous summary:\nabout alpha" in text and "beta question" in text
    assert "alpha question" not in text


def test_a_resumed_session_plans_nothing_new_and_its_block_has_both_sections(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    lc.record_decision("Ship on Friday")
    plan = lc.plan_summary()
    assert plan is not None
    summary = CompactionSummary(summary="We planned the release.", decisions=["ship on friday."])
    lc.record_summary(plan, summary, fallback=False)
    session_id = lc.session_id
    lc.close()
    lc2 = make_lifecycle(manager)
    lc2.resume(session_id)
    assert lc2.plan_summary() is None  # the snapshot's messages are not new turns
    context = lc2.resume_context
    assert "## Previous Session Summary\nWe planned the release." in context
    assert "## Key Decisions Made\n- Ship on Friday\n" in context  # merged, once


def test_turns_the_summary_never_reached_get_an_extractive_one_on_resume(
    manager: SessionManager,
) -> None:
    lc = make_lifecycle(manager)
    for n in range(30):
        run_turn(lc, f"request number {n} " + "word " * 30, f"reply {n}")
    session_id = lc.session_id
    lc.close()  # the process ended before any summary ran
    lc2 = make_lifecycle(manager)
    lc2.resume(session_id)
    block = lc2.resume_context.split("## Previous Session Summary\n", 1)[1]
    summary = block.split("\n\n## Key Decisions Made")[0]
    assert summary.startswith(FALLBACK_LABEL)
    assert "request number 29" in summary and "earlier requests" in summary
    assert len(summary.split()) <= MAX_SUMMARY_WORDS + 1
    assert "## Key Decisions Made\n- none recorded" in lc2.resume_context


def test_metadata_sessions_keep_no_summary(manager: SessionManager) -> None:
    lc = make_lifecycle(manager, persistence="metadata")
    run_turn(lc, "a secret plan", "ok")
    assert lc.plan_summary() is None
    state = lc.current.state
    assert "summary not kept: metadata-only persistence" in build_resume_context(state)


@pytest.mark.parametrize("words", [10, 200, 500])
def test_clip_words(words: int) -> None:
    text = " ".join(f"w{i}" for i in range(words))
    clipped = clip_words(text)
    assert len(clipped.replace(" …", "").split()) == min(words, MAX_SUMMARY_WORDS)
    assert clipped.endswith("…") == (words > MAX_SUMMARY_WORDS)


def test_extractive_summary_names_the_newest_requests(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    for n in range(5):
        run_turn(lc, f"ask {n}", f"answer {n}")
    plan = lc.plan_summary()
    assert plan is not None
    summary = extractive_session_summary(plan, ["keep it"])
    assert summary.summary.startswith(FALLBACK_LABEL)
    assert "(5 requests, newest last)" in summary.summary and "- ask 4" in summary.summary
    assert "Last reply: answer 4" in summary.summary and summary.decisions == ["keep it"]


@pytest.mark.parametrize("label", [FALLBACK_LABEL, *FORMER_FALLBACK_LABELS])
def test_an_extractive_summary_after_another_says_its_label_once(
    manager: SessionManager, label: str
) -> None:
    """The previous summary's label (today's, or the wording of older logs) is not carried."""
    lc = make_lifecycle(manager)
    run_turn(lc, "ask one", "answer one")
    first = lc.plan_summary()
    assert first is not None
    lc.record_summary(
        first, CompactionSummary(summary=f"{label}\nWe chose X.", decisions=[]), fallback=True
    )
    run_turn(lc, "ask two", "answer two")
    plan = lc.plan_summary()
    assert plan is not None and plan.previous is not None and label in plan.previous
    summary = extractive_session_summary(plan, []).summary
    assert summary.startswith(FALLBACK_LABEL) and summary.count("Extractive summary") == 1
    assert "Earlier: We chose X." in summary


def test_extractive_summary_keeps_code_out_and_leaves_no_fence_open(
    manager: SessionManager,
) -> None:
    """A reply's code block is `(code)`: cut open, a fence would make the rest of the
    rendered resume block (the editors show it as Markdown) one code block."""
    lc = make_lifecycle(manager)
    run_turn(lc, "fix it:\n```py\nx = 1\n```\nplease", "Done:\n```python\n" + "y = 2\n" * 40)
    plan = lc.plan_summary()
    assert plan is not None
    summary = extractive_session_summary(plan, []).summary
    assert "```" not in summary and "x = 1" not in summary and "y = 2" not in summary
    assert "- fix it: (code) please" in summary and "Last reply: Done: (code)" in summary
    compacted = extractive_summary(plan.history, []).summary  # compaction's, the same way
    assert "```" not in compacted and "y = 2" not in compacted and "(code)" in compacted


def test_decisions_merge_loosely() -> None:
    merged = merge_decisions(["Use PostgreSQL."], ["use  postgresql", "Deploy on Fridays", ""])
    assert merged == ["Use PostgreSQL.", "Deploy on Fridays"]


def test_last_active_is_the_last_recorded_event_also_after_a_crash(
    manager: SessionManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [datetime(2026, 3, 31, 14, 22, tzinfo=UTC)]
    monkeypatch.setattr("session.log.writer.utcnow", lambda: clock[0])
    lc = make_lifecycle(manager)
    run_turn(lc, "one", "first")
    assert lc.snapshot_and_save()  # the snapshot says 14:22
    clock[0] = datetime(2026, 3, 31, 15, 47, tzinfo=UTC)
    run_turn(lc, "two", "partial answer", end=None)  # then kill -9: no snapshot after it
    session_id = lc.session_id
    assert lc.session is not None and lc.session.lock is not None
    lc.session.log.close()
    lc.session.lock.release()
    lc.session = None
    clock[0] = datetime(2026, 4, 2, 9, 0, tzinfo=UTC)  # relaunched two days later
    lc2 = make_lifecycle(manager)
    previous = lc2.find_previous()
    assert previous is not None and "(last active: 2026-03-31 15:47 UTC)" in previous.prompt()
    lc2.resume(session_id)  # closes the open turn (a recovery event, at 09:00): not activity
    assert "Last active: 2026-03-31 15:47 UTC" in lc2.resume_context


def test_phase_is_one_of_three_or_none(manager: SessionManager) -> None:
    lc = make_lifecycle(manager)
    lc.set_phase("code")
    assert lc.current.state.phase == "code"
    with pytest.raises(ValueError, match="design, code, deploy"):
        lc.set_phase("testing")
    lc.set_phase(None)
    assert lc.current.state.phase is None
    lc.set_phase("deploy")
    assert [i.phase for i in manager.list_sessions()] == ["deploy"]
