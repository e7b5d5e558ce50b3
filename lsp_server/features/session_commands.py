"""save, reset, new, resume, status, history, search, sessions and open."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from session.derive.steps import turn_steps
from session.derive.transcript import transcript
from session.errors import SessionError, SessionLockedError, SessionNotFoundError
from session.search import FilterError, SearchError, SearchFilter, search_filter
from session.store.rows import ListedRow

from .. import protocol as proto
from ..progress import progress
from ..protocol import lookback as lb
from ..server import AgentAssistServer, RequestFailedError
from .base import Feature, request
from .chat import Chat
from .inspect import HISTORY_FOLD, turn_views
from .mcp import McpTools

DELETE_FILES = "Delete files"
KEEP_FILES = "Keep files"
CANCEL = "Cancel"


async def confirm_file_deletion(ls: AgentAssistServer, targets: list[str]) -> bool:
    """Ask whether reset also deletes the spec file / template dir; Cancel raises."""
    names = " and ".join(f"{t}/" if t == "templates" else t for t in targets)
    answer = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Warning,
            message=f"Start a new session. Also delete {names}?",
            actions=[
                types.MessageActionItem(DELETE_FILES),
                types.MessageActionItem(KEEP_FILES),
                types.MessageActionItem(CANCEL),
            ],
        )
    )
    if answer is None or answer.title == CANCEL:
        raise RequestFailedError(
            "Reset cancelled; nothing was changed.", data=proto.FailureData(cancelled=True).wire()
        )
    return answer.title == DELETE_FILES


def search_filters(params: proto.SearchParams) -> SearchFilter:
    """Return the filters of `agentAssist/search`; a word not understood names its field."""
    try:
        return search_filter(
            since=params.since,
            until=params.until,
            kind=params.kind,
            tool=params.tool,
            path=params.path,
        )
    except FilterError as exc:
        raise proto.ParamsError(
            f"{proto.SEARCH}: invalid field '{exc.field}': {exc.reason}"
        ) from None


class SessionCommands(Feature):
    """The session's own requests: save, reset, new, open, and what they are."""

    name = "session commands"
    needs = (Chat, McpTools)
    _rebuild: asyncio.Task[None] | None = None  # the search index's background rebuild

    @request(proto.SAVE)
    async def save(self, params: proto.EmptyParams) -> proto.SaveResult:
        """Checkpoint at a closed turn (a save during a reply waits for its end)."""
        ls = self.server
        # A checkpoint is a closed-turn boundary: a save during a reply waits for its end,
        # so a restore never rewinds to half a turn (files and conversation would disagree).
        async with ls.turn_lock:
            result = ls.lifecycle.explicit_save()
        return proto.SaveResult(
            session_id=result.session_id,
            checkpoint=result.checkpoint,
            saved_at=result.saved_at,
            path=str(result.path),
        )

    @request(proto.RESET)
    async def reset(self, params: proto.ResetParams) -> proto.ResetResult:
        """Start a new session, deleting this one (and, if confirmed, the spec files)."""
        ls = self.server
        lifecycle = ls.lifecycle
        delete = params.delete_files
        if delete is None:
            targets = lifecycle.reset_targets()
            delete = await confirm_file_deletion(ls, targets) if targets else False
        async with ls.turn_lock:
            result = lifecycle.reset(delete_files=delete)
        ls.announce(proto.SessionChangeReason.RESET)
        return proto.ResetResult(session_id=result.session_id, deleted_files=result.deleted_files)

    @request(proto.NEW)
    async def new(self, params: proto.EmptyParams) -> proto.NewResult:
        """Start a fresh session; the previous one stays whole on disk."""
        ls = self.server
        async with ls.turn_lock:
            previous, session_id = ls.lifecycle.new_session()
        ls.announce(proto.SessionChangeReason.NEW)
        return proto.NewResult(session_id=session_id, previous_session_id=previous)

    @request(proto.RESUME)
    async def resume(self, params: proto.EmptyParams) -> proto.ResumeResult:
        """Return the resume context in use, and what it told the model."""
        ls = self.server
        lifecycle = ls.lifecycle
        origin = ls.origin
        summary, decisions = lifecycle.resume_memory or (None, [])
        changed: list[proto.ChangedFile] = []
        drift = lifecycle.last_drift if origin is not None else None
        if drift is not None:
            held = lifecycle.checkpoints_holding([*drift.modified, *drift.deleted])
            kinds = (("modified", drift.modified), ("deleted", drift.deleted))
            for change, paths in (*kinds, ("created", drift.created)):
                for path in paths:
                    changed.append(
                        proto.ChangedFile(path=path, change=change, checkpoint=held.get(path))
                    )
        resumed = origin in (proto.SessionOrigin.RESUMED, proto.SessionOrigin.OPENED)
        return proto.ResumeResult(
            session_id=lifecycle.session_id,
            context=lifecycle.resume_context,
            origin=origin,
            last_active=lifecycle.last_active if resumed else None,
            summary=summary or None,
            decisions=decisions,
            changed_files=changed,
        )

    @request(proto.STATUS)
    async def status(self, params: proto.EmptyParams) -> proto.StatusResult:
        """Say where this instance's session is."""
        ls = self.server
        chat = self.need(Chat)
        lifecycle = ls.lifecycle
        session = lifecycle.current
        return proto.StatusResult(
            session_id=session.session_id,
            state="running" if chat.turns.running else "idle",
            waiting=chat.turns.waiting,
            resumed=lifecycle.resumed,
            turns=session.state.turns,
            model=ls.config.model.name,
            drift=ls.drift_count,
            read_only=session.read_only,
            persistence=session.state.persistence,
            context_window=ls.config.context_window,
            context_window_source=ls.config.window_source,
            phase=session.state.phase,
            store=proto.StoreStatus.model_validate(lifecycle.store_state(), from_attributes=True),
            project=proto.ProjectInfo.model_validate(
                lifecycle.store.identity, from_attributes=True
            ),
            mcp_servers=self.need(McpTools).states(),
        )

    @request(proto.HISTORY)
    async def history(self, params: proto.HistoryParams) -> proto.HistoryResult:
        """Return a transcript to redraw a chat view from."""
        lifecycle = self.server.lifecycle
        session_id = params.session_id or lifecycle.session_id
        if not lifecycle.store.exists(session_id):
            if session_id == lifecycle.session_id:
                none: list[lb.TurnView] | None = [] if params.steps else None
                return proto.HistoryResult(session_id=session_id, items=[], turns=none)
            raise RequestFailedError(f"no session {session_id} in this project")
        scan = lifecycle.store.read_events(session_id)
        items = proto.transcript_items(transcript(scan.events))
        if not params.steps:
            return proto.HistoryResult(session_id=session_id, items=items)
        turns = turn_views(turn_steps(scan.events, fold=HISTORY_FOLD))
        return proto.HistoryResult(session_id=session_id, items=items, turns=turns)

    @request(proto.SEARCH)
    async def search(self, params: proto.SearchParams) -> proto.SearchResult:
        """Find every event containing the query (literal text)."""
        ls = self.server
        store = ls.lifecycle.store
        filters = search_filters(params)
        if params.session_id is not None and not store.exists(params.session_id):
            raise RequestFailedError(f"no session {params.session_id} in this project")
        search = ls.store_search
        try:
            # An older local index answers while the new one is built, unfiltered: filters
            # need the new one, which a catch-up of the project then finishes at once.
            stale_ok = filters.empty and search.migrating
            if stale_ok and (self._rebuild is None or self._rebuild.done()):
                self._rebuild = ls.spawn(self._rebuild_index(), "search index rebuild")
            hits = await asyncio.to_thread(
                search.search,
                params.query,
                params.session_id,
                params.limit,
                filters,
                stale_ok=stale_ok,
            )
        except (SearchError, SessionError) as exc:
            raise RequestFailedError(f"search is unavailable: {exc}") from None
        return proto.SearchResult(results=[proto.SearchHit.model_validate(h) for h in hits])

    async def _rebuild_index(self) -> None:
        """Build the new search index in the background, with `$/progress`."""
        ls = self.server
        search = ls.store_search
        async with progress(ls, "Rebuilding the search index") as bar:
            while not (step := await asyncio.to_thread(search.build_step)).finished:
                bar.report(f"{step.indexed} of {step.sessions} sessions", step.percentage)

    @request(proto.SESSIONS)
    async def sessions(self, params: proto.SessionsParams) -> proto.SessionsResult:
        """List the project's sessions, newest first (a page of them when asked).

        Those without a turn are folded (counted in `empty`) unless `includeEmpty`; the
        current session is listed even without one.
        """
        lifecycle = self.server.lifecycle
        current = lifecycle.session_id
        rows, total, folded = lifecycle.store.list_rows_page(
            params.offset, params.limit, empty=params.include_empty, keep=current
        )
        return sessions_result(rows, total, current, folded)

    @request(proto.OPEN)
    async def open(self, params: proto.OpenParams) -> proto.OpenResult:
        """Resume another session of this project."""
        ls = self.server
        lifecycle = ls.lifecycle
        if params.session_id == lifecycle.session_id:
            return proto.OpenResult(session_id=params.session_id, context=lifecycle.resume_context)
        async with ls.turn_lock:
            try:
                drift = lifecycle.resume(params.session_id)
            except SessionNotFoundError:
                raise RequestFailedError(
                    f"no session {params.session_id} in this project"
                ) from None
            except SessionLockedError as exc:
                raise RequestFailedError(str(exc)) from None
        ls.announce(proto.SessionChangeReason.OPENED, drift)
        return proto.OpenResult(session_id=params.session_id, context=lifecycle.resume_context)


_PHASES = frozenset(proto.Phase)


def sessions_result(
    rows: list[ListedRow], total: int, current: str | None, folded: int = 0
) -> proto.SessionsResult:
    """Return the `agentAssist/sessions` result of listed rows (`current`: marked active).

    `folded`: how many sessions without a turn were left out.

    The rows go in as fields, their times as text, validated in one call: 10,000 sessions
    in 52 ms rather than 70 ms with a model built per row from parsed times (in-process, the
    collector frozen as in the server). Over LSP the whole list answers in ~80 ms either
    way: sending and the client's parse of 1.8 MB of JSON are the rest.
    """
    sessions = [
        {
            "session_id": sid,
            "title": title,
            "created_at": created,
            "updated_at": updated,
            "turns": turns,
            "parent_session_id": parent or None,
            "phase": phase if phase in _PHASES else None,  # one of a later version: unset
            "active": sid == current,
        }
        for sid, title, created, updated, turns, parent, phase, _ in rows
    ]
    found = {"sessions": sessions, "total": total, "empty": folded}
    return proto.SessionsResult.model_validate(found)
