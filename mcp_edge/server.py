"""The MCP server: six read-only tools and one resource over the sessions in scope.

stdout is the protocol: logs go to stderr. A tool's bad arguments, a session out of scope or
a store that fails become a tool error (`isError`) with one clear line, never a traceback
for the caller. Tools run one at a time (the SDK runs them in worker threads).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import Field

from session.terminal_text import has_controls

from .lookback import decisions as decisions_answer
from .lookback import dumps, session_markdown
from .lookback import read_session as read_answer
from .resume import file_history as history_answer
from .resume import resume_context as resume_answer
from .scope import RefusedError, Scope

logger = logging.getLogger(__name__)
Fn = TypeVar("Fn", bound=Callable[..., Any])

INSTRUCTIONS = (
    "The recorded history of agent-assist sessions in this project: what was asked, answered, "
    "decided and changed, with every tool call. Start with search_sessions or list_sessions, "
    "then read_session or resume_context. Times are ISO 8601; `since`/`until` also take "
    "durations ago (30m, 12h, 1d, 2w), today or yesterday. Everything is read-only."
)
WHEN = "an ISO date or time, a duration ago (30m, 12h, 1d, 2w), today or yesterday"
BYTES = "the most bytes of the answer's JSON (1000–1000000); a cut answer says how to go on"

SessionId = Annotated[
    str, Field(max_length=64, description="a session id (12 hex characters) or a unique prefix")
]
When = Annotated[str | None, Field(max_length=64, description=WHEN)]
Budget = Annotated[int, Field(ge=1000, le=1_000_000, description=BYTES)]


def clean(name: str, value: str | None) -> str | None:
    """Return `value`, refused if it holds control characters."""
    if value is not None and has_controls(value):
        raise RefusedError(f"{name} must not contain control characters")
    return value


def moment(name: str, text: str | None, *, end: bool = False) -> datetime | None:
    """Return the time `text` names (see `WHEN`)."""
    from session.search import when

    if clean(name, text) is None or text is None:
        return None
    try:
        return when.parse_when(text, end=end, now=when.local_now)
    except ValueError as exc:
        raise RefusedError(f"{name}: {exc}") from None


def guarded(lock: threading.Lock) -> Callable[[Fn], Fn]:
    """Return a decorator: one call at a time, every failure a tool error with one line."""
    from mcp.server.mcpserver.exceptions import ToolError

    def decorate(fn: Fn) -> Fn:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with lock:
                try:
                    return fn(*args, **kwargs)
                except RefusedError as exc:
                    raise ToolError(str(exc)) from None
                except Exception as exc:
                    raise ToolError(failure(exc)) from None

        return run  # type: ignore[return-value]

    return decorate


def failure(exc: Exception) -> str:
    """Return the one line a store's failure is told with (logged on stderr in full)."""
    from session.errors import SessionError
    from session.storage import StorageError

    if isinstance(exc, SessionError | StorageError | OSError):
        text = str(exc).strip().splitlines()
        return f"the session store failed: {text[0] if text else type(exc).__name__}"
    if type(exc).__module__.startswith("psycopg"):
        logger.warning("the PostgreSQL store failed: %s", type(exc).__name__)
        return f"the PostgreSQL store failed ({type(exc).__name__}); try again"
    logger.exception("a tool failed")
    return f"internal error ({type(exc).__name__}); the server's stderr has the details"


def build(scope: Scope) -> Any:
    """Return the `MCPServer` serving `scope`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
    from mcp.types import ToolAnnotations

    server: Any = MCPServer(
        "agent-assist", instructions=INSTRUCTIONS, version=_version(), log_level="WARNING"
    )
    lock = threading.Lock()
    guard = guarded(lock)

    def tool(title: str) -> Callable[[Fn], Fn]:
        hints = ToolAnnotations(
            title=title,
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )

        def register(fn: Fn) -> Fn:
            server.add_tool(guard(fn), annotations=hints, structured_output=False)
            return fn

        return register

    @tool("Search sessions")
    def search_sessions(
        query: Annotated[str, Field(max_length=1000, description="the text to find, literally")],
        since: When = None,
        until: When = None,
        kind: Annotated[
            str | None,
            Field(
                max_length=200,
                description="user, assistant, tool-call, tool-result, drift, decision, summary "
                "(several comma-separated)",
            ),
        ] = None,
        tool: Annotated[str | None, Field(max_length=200, description="one tool's calls")] = None,
        path: Annotated[
            str | None, Field(max_length=4096, description="tool calls and drifts naming it")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="the most hits")] = 20,
    ) -> str:
        """Find past conversation events containing a text (literal, case-insensitive).

        Returns hits, best first: session_id, turn, step, time, event type and a snippet
        with the match in [brackets]. Filters narrow by time, kind of event, tool or path.
        """
        from session.search import FilterError, search_filter

        if not (clean("query", query) or "").strip():
            raise RefusedError("query is empty")
        for name, value in (("kind", kind), ("tool", tool), ("path", path)):
            clean(name, value)
        clean("since", since)
        clean("until", until)
        try:
            filters = search_filter(since=since, until=until, kind=kind, tool=tool, path=path)
        except FilterError as exc:
            raise RefusedError(f"{exc.field}: {exc.reason}") from None
        return dumps({"query": query, "hits": scope.search(query, limit, filters)})

    @tool("List sessions")
    def list_sessions(
        offset: Annotated[int, Field(ge=0, le=10**9, description="skip the N newest")] = 0,
        limit: Annotated[int, Field(ge=1, le=100, description="sessions per page")] = 20,
    ) -> str:
        """List sessions, most recently active first: id, title, phase, turns, last active.

        Paged: pass next_offset back as offset for older ones (absent on the last page).
        """
        rows, total = scope.listing(offset, limit)
        answer: dict[str, Any] = {"sessions": rows, "total": total}
        if offset + len(rows) < total:
            answer["next_offset"] = offset + len(rows)
        return dumps(answer)

    @tool("Read a session")
    def read_session(
        session_id: SessionId,
        from_turn: Annotated[int | None, Field(ge=1, le=10**9)] = None,
        to_turn: Annotated[int | None, Field(ge=1, le=10**9)] = None,
        steps: Annotated[
            bool, Field(description="each model call with its tool calls and results")
        ] = False,
        max_bytes: Budget = 20_000,
    ) -> str:
        """Read a session's turns: each user input and the answer.

        With steps: each model call, its tool calls and their results (long ones folded).
        The answer fits in max_bytes; when cut it gives next_from_turn to continue from.
        """
        return read_answer(scope, session_id, from_turn, to_turn, steps, max_bytes)

    @tool("Resume context")
    def resume_context(session_id: SessionId | None = None) -> str:
        """Give the context a resumed session would start with now, to pick up its work.

        Its summary, key decisions and the tracked files changed since (measured now).
        Default: the newest session.
        """
        return resume_answer(scope, session_id)

    @tool("File history")
    def file_history(
        path: Annotated[
            str, Field(max_length=4096, description="a file of this project (relative path)")
        ],
        since: When = None,
        until: When = None,
        line: Annotated[
            str | None, Field(max_length=1000, description="only diffs adding/removing it")
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="the most changes")] = 50,
        max_bytes: Budget = 20_000,
    ) -> str:
        """List every recorded change of a file of this project, newest first, with diffs.

        Each: the session, turn and step that wrote it (or the drift that saw it changed by
        hand), the user's request then, and a unified diff.
        """
        clean("path", path)
        clean("line", line)
        start, end = moment("since", since), moment("until", until, end=True)
        return history_answer(scope, path, start, end, line, limit, max_bytes)

    @tool("Key decisions")
    def decisions(
        limit: Annotated[int, Field(ge=1, le=200, description="the most decisions")] = 50,
        since: When = None,
    ) -> str:
        """List the key decisions recorded across the sessions, newest first.

        Each with the session (id, title), turn and time it was made in.
        """
        return decisions_answer(scope, limit, moment("since", since))

    del search_sessions, list_sessions, read_session, resume_context, file_history, decisions

    @server.resource(  # type: ignore[untyped-decorator]
        "agent-assist://session/{session_id}",
        name="session",
        description="A session's transcript as Markdown",
        mime_type="text/markdown",
    )
    def session_resource(session_id: str) -> str:
        with lock:
            try:
                return session_markdown(scope, session_id)
            except RefusedError as exc:
                raise ResourceNotFoundError(str(exc)) from None
            except Exception as exc:
                raise ResourceError(failure(exc)) from None

    del session_resource
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-assist")
    except PackageNotFoundError:
        return "0"


def serve(scope: Scope) -> None:
    """Serve MCP on stdio until the client closes it."""
    build(scope).run("stdio")
