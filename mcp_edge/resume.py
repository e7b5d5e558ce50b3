"""The resume block a resumed session would get now, and a file's history with its diffs.

The resume block is built as a resume builds it (`session.context.build_resume_context`):
the summary (an extractive one standing in for turns the recorded summary does not cover),
the key decisions, and the files changed since, measured now against the session's manifest
on disk. Nothing is recorded: the drift a real resume would append is only reported.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .lookback import dumps, fold, iso, load, meta, shrink, size
from .scope import RefusedError, Scope

MAX_PATHS = 200  # changed files listed of each kind (the rest counted)
MAX_ANSWER = 100_000  # bytes of a resume_context answer


def _drift(scope: Scope, place: Any, state: Any) -> tuple[Any, str | None]:
    """Return the drift of the session's tracked files now (None, why: not measured)."""
    from session.paths import host_name
    from session.snapshot import recorded_manifest
    from session.workspace.drift import detect_file_drift
    from session.workspace.patterns import DEFAULT_TRACKED, TrackedPatterns

    if place.project != scope.project:
        return None, "not measured: the session belongs to another project than this folder"
    baseline = state
    written_on = place.store.session_host(place.session_id)
    if written_on is not None and written_on != host_name():
        baseline = state.model_copy(update={"stat_cache": None, "file_stats": {}})
    report, _ = detect_file_drift(
        scope.workspace,
        state.file_manifest,
        TrackedPatterns(DEFAULT_TRACKED),
        recorded_manifest(baseline),
    )
    return report, None


def resume_context(scope: Scope, session_id: str | None) -> str:
    """Answer `resume_context` for a session (default: the newest of the scope)."""
    from session.context import build_resume_context, remembered
    from session.derive.history import build_history
    from session.summary import extractive_session_summary, plan_summary

    if session_id is None:
        rows, _ = scope.listing(0, 1)
        if not rows:
            raise RefusedError(f"no sessions in {scope.where()}")
        session_id = rows[0]["session_id"]
    place = scope.place(session_id)
    state, events, problems = load(place)
    pending = None
    if state.persistence != "metadata":
        plan = plan_summary(build_history(events), state)
        if plan is not None:
            pending = extractive_session_summary(plan, state.decisions).summary
    drift, why = _drift(scope, place, state)
    last_active = place.store.last_event_time(place.session_id) or state.updated_at
    summary, kept = remembered(state, pending)
    answer: dict[str, Any] = {
        "session": meta(place, state, problems),
        "summary": summary,
        "decisions": kept,
        "context": build_resume_context(state, drift, pending, last_active),
    }
    if drift is not None:
        changed: dict[str, Any] = {"unchanged": drift.unchanged}
        for name, paths in (
            ("modified", drift.modified),
            ("deleted", drift.deleted),
            ("created", drift.created),
        ):
            changed[name] = paths[:MAX_PATHS]
            if len(paths) > MAX_PATHS:
                changed[f"{name}_not_listed"] = len(paths) - MAX_PATHS
        answer["files_changed_since"] = changed
    else:
        answer["files_changed_since"] = why
    if size(answer) > MAX_ANSWER:  # a branch switch's thousands of paths, a long summary
        answer["context"] = fold(answer["context"], MAX_ANSWER // 2)
        answer = shrink(answer, 4000)
        answer["note"] = "cut: the context and long texts are folded"
    return dumps(answer)


def file_history(
    scope: Scope,
    path: str,
    since: datetime | None,
    until: datetime | None,
    line: str | None,
    limit: int,
    max_bytes: int,
) -> str:
    """Answer `file_history`: the changes of a file of this project, newest first, with diffs."""
    from session.storage import StorageError
    from session.timeline import TimelinePathError, workspace_path
    from session.timeline import file_history as history
    from session.timeline.index import TimelineError

    try:
        relative = workspace_path(scope.workspace, path)
    except TimelinePathError as exc:
        raise RefusedError(str(exc)) from None
    if scope.home.kind == "local" and not scope.home.has_sessions():  # nothing to index
        return dumps({"path": relative, "changes": [], "complete": True, "note": "no sessions"})
    try:
        found = history(
            scope.home, scope.workspace, path, since=since, until=until, line=line, limit=limit
        )
    except TimelinePathError as exc:
        raise RefusedError(str(exc)) from None
    except (TimelineError, StorageError) as exc:
        raise RefusedError(f"the file history is unavailable: {exc}") from None
    answer: dict[str, Any] = {"path": found.path, "changes": [], "complete": not found.truncated}
    used = size(answer) + 300
    for n, change in enumerate(found.changes):
        item: dict[str, Any] = {
            "session_id": change.session_id,
            "session_title": change.session_title,
            "turn": change.turn,
            "step": change.step,
            "time": iso(change.ts),
            "kind": change.kind,
            "tool": change.tool,
            "user_message": change.user_message,
            "before_sha256": change.before_sha256,
            "after_sha256": change.after_sha256,
            "diff": change.diff,
        }
        if change.diff is None:
            item["no_diff"] = change.reason or "not kept"
        room = max_bytes - used - 1
        if size(item) > room and change.diff:
            over = size(item) - room
            item["diff"] = fold(change.diff, max(0, len(change.diff.encode()) - over - 60))
        if size(item) > room:
            answer["complete"] = False
            answer["note"] = (
                f"cut at max_bytes {max_bytes} after {n} change(s): narrow with since/until/"
                "line, or raise max_bytes"
            )
            break
        answer["changes"].append(item)
        used += size(item) + 1
    if found.truncated and "note" not in answer:
        answer["note"] = f"more changes than limit {limit}: narrow with since/until/line"
    return dumps(answer)
