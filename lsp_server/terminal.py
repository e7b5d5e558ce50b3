"""`agent-assist chat`: the terminal client, one more LSP client of `agent-assist serve`.

prompt-toolkit reads the input, rich renders the streamed Markdown; everything the chat
does goes through the server in a subprocess (no second code path into `session/`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import re
import signal
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.live import Live

    from .lsp_client import LspClient, PendingRequest

INSTANCE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
RESUME_QUESTION = "Resume previous session?"
RESUME, NEW_SESSION = "Resume", "New session"
DELETE_FILES, KEEP_FILES, CANCEL = "Delete files", "Keep files", "Cancel"

HELP = [
    ("/save", "save now: a numbered checkpoint of the session and the tracked files"),
    ("/reset, /new", "delete this session, start anew (asks about agent_spec.md, templates/)"),
    ("/fresh", "start a new session; this one stays on disk (/sessions, /open)"),
    ("/checkpoint [n]", "list checkpoints, or restore checkpoint n (files and conversation)"),
    ("/compact", "summarise older turns to free the context window"),
    ("/resume", "print the context injected from the previous session"),
    ("/fork [seq]", "continue in a new session copied up to event seq (default: now)"),
    ("/search <text>", "search every session of this project"),
    ("/sessions", "list this project's sessions"),
    ("/open <id>", "switch to another session of this project"),
    ("/history", "print this session's transcript"),
    ("/status", "session, model and drift status"),
    ("/help", "this list"),
    ("/exit", "save and quit (also Ctrl+D, or Ctrl+C at the prompt)"),
]


def default_instance_id(workspace: Path) -> str:
    """Return the terminal's stable instance id for a directory: `terminal-<hash8>`."""
    digest = hashlib.sha256(str(workspace.resolve()).encode("utf-8", "surrogateescape"))
    return f"terminal-{digest.hexdigest()[:8]}"


# -- input -----------------------------------------------------------------------------------


class LineReader(Protocol):
    """Reads one line of user input; raises EOFError (Ctrl+D) or KeyboardInterrupt (Ctrl+C)."""

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the line typed."""
        ...


class PromptReader:
    """prompt-toolkit input with in-memory history (nothing is written outside the store)."""

    def __init__(self) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import InMemoryHistory

        self.session: PromptSession[str] = PromptSession(history=InMemoryHistory())

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the line typed; what is printed meanwhile goes above it."""
        from prompt_toolkit.patch_stdout import patch_stdout

        with patch_stdout(raw=True):
            return await self.session.prompt_async(prompt)


class PlainReader:
    """Line input from a pipe or file (no terminal): a daemon thread feeds a queue."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[str | None] | None = None

    def _start(self) -> asyncio.Queue[str | None]:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def pump() -> None:
            for line in sys.stdin:
                loop.call_soon_threadsafe(queue.put_nowait, line.rstrip("\n"))
            loop.call_soon_threadsafe(queue.put_nowait, None)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
        return queue

    async def read(self, prompt: str) -> str:
        """Show `prompt` and return the next line; EOFError at the end of input."""
        if self._queue is None:
            self._queue = self._start()
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = await self._queue.get()
        if line is None:
            self._queue.put_nowait(None)
            sys.stdout.write("\n")
            raise EOFError
        sys.stdout.write(line + "\n")
        return line


# -- output ----------------------------------------------------------------------------------


def _args_summary(args: Any, limit: int = 60) -> str:
    if isinstance(args, dict) and isinstance(args.get("path"), str):
        return str(args["path"])
    text = json.dumps(args, ensure_ascii=False) if args else ""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class StreamedMarkdown:
    """Markdown of text that keeps growing; parsed only when the screen is refreshed."""

    def __init__(self) -> None:
        self.text = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.markdown import Markdown

        yield Markdown(self.text)


class ReplyView:
    """One streamed reply: a spinner until the first delta, then live Markdown."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.body = StreamedMarkdown()
        self.live: Live | None = None
        self._showing_text = False
        self._printed = False

    @property
    def text(self) -> str:
        """Return the text streamed so far."""
        return self.body.text

    def start(self) -> None:
        """Show the spinner (refreshed ten times a second by rich)."""
        from rich.live import Live
        from rich.spinner import Spinner

        if not self.console.is_terminal:
            return  # piped output: the reply is printed once, when it is complete
        self.live = Live(
            Spinner("dots", text="Thinking…", style="cyan"),
            console=self.console,
            refresh_per_second=10,
            vertical_overflow="visible",
        )
        self.live.start()

    def delta(self, text: str) -> None:
        """Append streamed text; the next refresh shows it."""
        self.body.text += text
        if self.live is not None and not self._showing_text:
            self._showing_text = True
            self.live.update(self.body, refresh=True)

    def restart(self) -> None:
        """Drop the partial reply (the server retries; its deltas start over)."""
        from rich.spinner import Spinner

        self.body.text = ""
        if self.live is not None and self._showing_text:
            self._showing_text = False
            self.live.update(Spinner("dots", text="Retrying…", style="cyan"), refresh=True)

    def stop(self, final: str | None = None) -> None:
        """Render the final text and release the terminal."""
        from rich.text import Text

        if final and not self.body.text.strip():
            self.body.text = final
        if self.live is not None:
            self.live.update(self.body if self.body.text else Text(""), refresh=True)
            self.live.stop()
            self.live = None
        elif self.body.text and not self._printed:
            self.console.print(self.body)
        self._printed = True


# -- the app ---------------------------------------------------------------------------------


class ChatApp:
    """The terminal chat: starts the server, runs the prompt loop, renders what arrives."""

    def __init__(
        self,
        workspace: Path,
        instance_id: str,
        *,
        console: Console,
        reader: LineReader,
        options: dict[str, Any] | None = None,
        verbose: bool = False,
    ) -> None:
        self.workspace = workspace
        self.verbose = verbose
        self.instance_id = instance_id
        self.console = console
        self.reader = reader
        self.options = options or {}
        self.client: LspClient | None = None
        self.session_id: str | None = None
        self.view: ReplyView | None = None
        self.turn: PendingRequest | None = None
        self.cancelling = False
        self.quit = False
        self.main_task: asyncio.Task[Any] | None = None
        self.commands: dict[str, Callable[[str], Awaitable[None]]] = {
            "save": self.cmd_save,
            "reset": self.cmd_reset,
            "new": self.cmd_reset,
            "fresh": self.cmd_fresh,
            "checkpoint": self.cmd_checkpoint,
            "compact": self.cmd_compact,
            "resume": self.cmd_resume,
            "fork": self.cmd_fork,
            "search": self.cmd_search,
            "sessions": self.cmd_sessions,
            "open": self.cmd_open,
            "history": self.cmd_history,
            "status": self.cmd_status,
            "help": self.cmd_help,
        }

    # -- printing -----------------------------------------------------------------------

    def say(self, text: str, style: str | None = None) -> None:
        """Print plain text (never interpreted as markup)."""
        from rich.text import Text

        self.console.print(Text(text, style=style or ""))

    def error(self, text: str) -> None:
        """Print an error line."""
        self.say(f"✗ {text}", "bold red")

    def warn(self, text: str) -> None:
        """Print a warning line."""
        self.say(f"⚠ {text}", "yellow")

    def _server_log(self, line: str) -> None:
        sys.stderr.write(f"[server] {line}\n")

    # -- server events --------------------------------------------------------------------

    def _listen(self, client: LspClient) -> None:
        from . import protocol as proto

        client.on(proto.CHAT_DELTA, self._on_delta)
        client.on(proto.CHAT_RETRY, self._on_retry)
        client.on(proto.TOOL_CALL, self._on_tool)
        client.on(proto.DRIFT, self._on_drift)
        client.on(proto.SESSION_CHANGED, self._on_session_changed)
        client.on("window/showMessage", self._on_show_message)
        client.on("$/progress", self._on_progress)

    def _on_delta(self, params: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.delta(str(params.get("delta", "")))

    def _on_retry(self, params: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.restart()
        attempt, reason = params.get("attempt"), params.get("reason")
        self.say(f"  ↻ retrying (attempt {attempt}): {reason}", "yellow")

    def _on_tool(self, params: dict[str, Any]) -> None:
        status = params.get("status")
        if status == "started":
            return  # shown once it is done or failed, with its outcome
        mark = "✓" if status == "done" else "✗"
        summary = _args_summary(params.get("args"))
        self.say(f"  {mark} tool {params.get('tool')} {summary} ({status})", "dim")

    def _on_drift(self, params: dict[str, Any]) -> None:
        parts = [f"{p} (modified)" for p in params.get("modified") or []]
        parts += [f"{p} (deleted)" for p in params.get("deleted") or []]
        parts += [f"{p} (created)" for p in params.get("created") or []]
        if params.get("source") == "resume":
            lead = "Drift since the last session:"
        else:
            lead = "Drift: changed outside the assistant:"
        self.warn(f"{lead} {', '.join(parts)}")

    def _on_session_changed(self, params: dict[str, Any]) -> None:
        self.session_id = str(params.get("sessionId"))

    def _on_show_message(self, params: dict[str, Any]) -> None:
        message = str(params.get("message", ""))
        kind = params.get("type")
        if kind == 1:
            self.error(message)
        elif kind == 2:
            self.warn(message)
        else:
            self.say(message, "cyan")

    def _on_progress(self, params: dict[str, Any]) -> None:
        value = params.get("value") or {}
        kind = value.get("kind")
        percentage = value.get("percentage")
        pct = f"{percentage:>3}% " if isinstance(percentage, int) else ""
        if kind == "begin":
            self.say(f"⏳ {value.get('title', 'Working')}…", "cyan")
        elif kind == "report":
            self.say(f"   {pct}{value.get('message', '')}", "cyan")
        elif kind == "end":
            self.say(f"   {value.get('message') or 'done'}", "cyan")

    # -- questions from the server -------------------------------------------------------

    async def read(self, prompt: str) -> str:
        """Read a line; then take SIGINT back (prompt-toolkit replaces its handler)."""
        try:
            return await self.reader.read(prompt)
        finally:
            self._install_signals()

    async def confirm(self, prompt: str, default: bool) -> bool:
        """Ask a yes/no question; Enter takes the default."""
        while True:
            answer = (await self.read(prompt)).strip().lower()
            if not answer:
                return default
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            self.say("Please answer y or n.", "dim")

    async def ask(self, message: str, actions: list[str]) -> str | None:
        """Answer `window/showMessageRequest` in the terminal."""
        try:
            if RESUME_QUESTION in message and RESUME in actions:
                self.say(message.split("\n", 1)[0], "bold")
                resume = await self.confirm(f"{RESUME_QUESTION} [Y/n] ", default=True)
                return RESUME if resume else NEW_SESSION
            if DELETE_FILES in actions and KEEP_FILES in actions:
                delete = await self.confirm(f"{message} [y/N] ", default=False)
                return DELETE_FILES if delete else KEEP_FILES
            self.say(message, "bold")
            for number, title in enumerate(actions, 1):
                self.say(f"  {number}. {title}")
            while True:
                choice = (await self.read("Choose a number (Enter: dismiss) ")).strip()
                if not choice:
                    return None
                if choice.isdigit() and 1 <= int(choice) <= len(actions):
                    return actions[int(choice) - 1]
        except (EOFError, KeyboardInterrupt):
            if RESUME_QUESTION in message:
                self.quit = True
                return None  # dismissed: the server resumes; we then exit
            return CANCEL if CANCEL in actions else None

    # -- signals --------------------------------------------------------------------------

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
            loop.add_signal_handler(signal.SIGTERM, self._stop_main)
            loop.add_signal_handler(signal.SIGHUP, self._stop_main)

    def _stop_main(self) -> None:
        if self.main_task is not None:
            self.main_task.cancel()

    def _on_sigint(self) -> None:
        turn = self.turn
        if turn is not None and not turn.future.done() and self.client is not None:
            if self.cancelling:
                self._stop_main()
                return
            self.cancelling = True
            self.client.cancel(turn)
            return
        self._stop_main()

    # -- main loop -------------------------------------------------------------------------

    async def run(self) -> int:
        """Run the chat until the user leaves; return the exit code."""
        from .lsp_client import LspClient, ServerExitedError

        self.main_task = asyncio.current_task()
        self._install_signals()
        client = LspClient(
            self.workspace,
            instance_id=self.instance_id,
            options={"driftMessages": False, **self.options},  # drift is printed from the notice
            ask=self.ask,
            stderr_sink=self._server_log if self.verbose else None,
        )
        self.client = client
        self._listen(client)
        code = 0
        try:
            await client.start()
            await client.wait_session()
            if not self.quit:
                await self._banner()
                code = await self._loop()
        except asyncio.CancelledError:
            self.say("")
        except (ServerExitedError, OSError) as exc:
            self.error(f"agent-assist server: {exc}")
            code = 1
        finally:
            if self.view is not None:
                self.view.stop()
            with contextlib.suppress(asyncio.CancelledError):
                await client.shutdown()
            if self.session_id:
                self.say(f"Closed session {self.session_id}. Bye.", "dim")
        return code

    async def _banner(self) -> None:
        from .config import HOW_TO_CONFIGURE_MODEL

        assert self.client is not None
        status = await self.client.request("agentAssist/status", {})
        how = "resumed" if status.get("resumed") else "new"
        model = status.get("model") or "none"
        self.say(
            f"agent-assist chat · {self.workspace} · session {status['sessionId']} ({how}) · "
            f"model {model}",
            "bold",
        )
        if status.get("readOnly"):
            self.warn("This session is read-only (damaged log or newer format); /reset to chat.")
        if not status.get("model"):
            self.warn(HOW_TO_CONFIGURE_MODEL)
        self.say("Type a message, /help for commands, Ctrl+D to quit.", "dim")

    async def _loop(self) -> int:
        from .lsp_client import LspError

        while True:
            try:
                line = await self.read("› ")
            except (EOFError, KeyboardInterrupt):
                return 0
            line = line.strip()
            if not line:
                continue
            try:
                if line.startswith("/"):
                    name, _, rest = line[1:].partition(" ")
                    if name in ("exit", "quit"):
                        return 0
                    handler = self.commands.get(name.lower())
                    if handler is None:
                        self.say(f"Unknown command /{name} — type /help for the list.", "yellow")
                        continue
                    await handler(rest.strip())
                else:
                    await self.chat(line)
            except LspError as exc:
                self.error(exc.message)

    async def chat(self, text: str) -> None:
        """Send one message; stream the reply; Ctrl+C cancels it."""
        from . import protocol as proto
        from .lsp_client import LspError

        assert self.client is not None
        view = ReplyView(self.console)
        self.view = view
        self.cancelling = False
        view.start()
        try:
            self.turn = self.client.send_request(proto.CHAT, {"text": text})
            result = await self.turn.future
            view.stop(str(result.get("text") or ""))
        except LspError as exc:
            view.stop()
            if exc.cancelled:
                self.warn("Turn cancelled (recorded as aborted); the session continues.")
            else:
                self.error(exc.message)
            return
        finally:
            self.turn = None
            self.view = None
            view.stop()
        usage = result.get("usage") or {}
        about = "≈" if usage.get("estimated") else ""
        attempts = result.get("attempts") or 1
        self.say(
            f"turn {result.get('turn')} · {about}{usage.get('inputTokens', 0)} in / "
            f"{about}{usage.get('outputTokens', 0)} out tokens"
            + (" (estimated)" if about else "")
            + (f" · {attempts} attempts" if attempts > 1 else ""),
            "dim",
        )

    async def _request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        assert self.client is not None
        return await self.client.request(method, params or {})

    # -- slash commands --------------------------------------------------------------------

    async def cmd_help(self, rest: str) -> None:
        """/help."""
        for name, text in HELP:
            self.say(f"  {name:<16} {text}")

    async def cmd_save(self, rest: str) -> None:
        """/save."""
        result = await self._request("agentAssist/save")
        self.say(
            f"Saved: checkpoint {result['checkpoint']} of session {result['sessionId']} "
            f"({result['path']})",
            "green",
        )

    async def cmd_reset(self, rest: str) -> None:
        """/reset and /new: the server asks about the spec file and templates."""
        from .lsp_client import LspError

        try:
            result = await self._request("agentAssist/reset")
        except LspError as exc:
            self.warn(exc.message)
            return
        deleted = result.get("deletedFiles") or []
        note = f" (deleted {', '.join(deleted)})" if deleted else ""
        self.say(f"New session {result['sessionId']}{note}.", "green")

    async def cmd_fresh(self, rest: str) -> None:
        """/fresh: a new session; the current one is kept."""
        result = await self._request("agentAssist/new")
        self.say(
            f"New session {result['sessionId']}; {result['previousSessionId']} is kept "
            "(/open to go back).",
            "green",
        )

    async def cmd_checkpoint(self, rest: str) -> None:
        """/checkpoint [n]."""
        if rest:
            if not rest.isdigit() or int(rest) < 1:
                self.say("Usage: /checkpoint [n] (n ≥ 1)", "yellow")
                return
            result = await self._request("agentAssist/checkpoint", {"number": int(rest)})
            self.say(f"Restored checkpoint {result['number']}.", "green")
            for label, key in (
                ("restored", "restoredFiles"),
                ("created since (kept)", "createdFiles"),
                ("skipped", "skippedFiles"),
            ):
                if result.get(key):
                    self.say(f"  {label}: {', '.join(result[key])}")
            return
        result = await self._request("agentAssist/checkpoint")
        checkpoints = result.get("checkpoints") or []
        if not checkpoints:
            self.say("No checkpoints yet (/save makes one).")
            return
        rows = [
            [
                str(cp["number"]),
                _short_time(cp["createdAt"]),
                str(cp["turn"]),
                cp.get("title") or "",
                "auto" if cp.get("auto") else "save",
            ]
            for cp in checkpoints
        ]
        columns = ["#", "created", "turn", "title", "kind"]
        self.console.print(_table(f"Checkpoints of {result['sessionId']}", columns, rows))

    async def cmd_compact(self, rest: str) -> None:
        """/compact (progress arrives as $/progress)."""
        result = await self._request("agentAssist/compact")
        if not result.get("compacted"):
            self.say(result.get("reason") or "Nothing to compact yet: the conversation is short.")
            return
        kind = " (extractive summary)" if result.get("fallback") else ""
        self.say(
            f"Compacted{kind}: {result['messagesBefore']} → {result['messagesAfter']} messages, "
            f"{result['tokensBefore']} → {result['tokensAfter']} tokens.",
            "green",
        )

    async def cmd_resume(self, rest: str) -> None:
        """/resume: the block injected into the system prompt."""
        result = await self._request("agentAssist/resume")
        context = result.get("context") or ""
        if not context:
            self.say("No resume context: this session was not resumed.")
            return
        self.say("Injected resume context:", "bold")
        self.say(context)

    async def cmd_fork(self, rest: str) -> None:
        """/fork [seq]."""
        params: dict[str, Any] = {}
        if rest:
            if not rest.isdigit():
                self.say("Usage: /fork [seq]", "yellow")
                return
            params["boundary"] = int(rest)
        result = await self._request("agentAssist/fork", params)
        self.say(
            f"Forked {result['parentSessionId']} at seq {result['boundary']}: "
            f"now in session {result['sessionId']}.",
            "green",
        )

    async def cmd_search(self, rest: str) -> None:
        """/search <text>."""
        from .lsp_client import LspError

        if not rest:
            self.say("Usage: /search <text>", "yellow")
            return
        try:
            result = await self._request("agentAssist/search", {"query": rest, "limit": 20})
        except LspError as exc:
            if exc.not_served:
                self.warn("Search is not available from this server yet.")
                return
            raise
        hits = result.get("results") or []
        if not hits:
            self.say(f"No matches for {rest!r}.")
            return
        rows = [
            [
                str(hit.get("sessionId")),
                "" if hit.get("turn") is None else str(hit["turn"]),
                str(hit.get("type")),
                str(hit.get("snippet")),
            ]
            for hit in hits
        ]
        columns = ["session", "turn", "type", "snippet"]
        self.console.print(_table(f"Matches for {rest!r}", columns, rows))

    async def cmd_sessions(self, rest: str) -> None:
        """/sessions."""
        sessions = (await self._request("agentAssist/sessions")).get("sessions") or []
        if not sessions:
            self.say("No sessions yet.")
            return
        rows = []
        for row in sessions:
            title = row.get("title") or ""
            if row.get("parentSessionId"):
                title = f"{title} (fork of {row['parentSessionId']})".strip()
            rows.append(
                [
                    "●" if row.get("active") else "",
                    row["sessionId"],
                    _short_time(row["updatedAt"]),
                    str(row["turns"]),
                    row.get("phase") or "",
                    title,
                ]
            )
        columns = ["", "id", "updated", "turns", "phase", "title"]
        self.console.print(_table("Sessions of this project", columns, rows))

    async def cmd_open(self, rest: str) -> None:
        """/open <id> (a unique prefix is enough)."""
        if not rest:
            self.say("Usage: /open <session id>", "yellow")
            return
        sessions = (await self._request("agentAssist/sessions")).get("sessions") or []
        matches = [s["sessionId"] for s in sessions if s["sessionId"].startswith(rest)]
        if len(matches) != 1:
            what = "matches several sessions" if matches else "matches no session"
            self.warn(f"{rest!r} {what}; /sessions lists them.")
            return
        result = await self._request("agentAssist/open", {"sessionId": matches[0]})
        self.say(f"Opened session {result['sessionId']}.", "green")
        if result.get("context"):
            self.say(result["context"], "dim")

    async def cmd_history(self, rest: str) -> None:
        """/history: the transcript of the current session."""
        from rich.markdown import Markdown

        result = await self._request("agentAssist/history")
        items = result.get("items") or []
        if not items:
            self.say("No messages yet.")
            return
        for item in items:
            role = item.get("role")
            reason = item.get("endReason")
            if role == "user":
                self.say(f"You (turn {item.get('turn')}): {item.get('text')}", "bold")
            elif role == "assistant":
                if item.get("text"):
                    self.console.print(Markdown(item["text"]))
                if item.get("partial"):
                    self.say(
                        f"  [turn {item.get('turn')} {reason or 'open'}: incomplete]", "yellow"
                    )
                elif reason and reason != "completed":
                    self.say(f"  [turn {item.get('turn')} {reason}]", "yellow")
            elif role == "tool":
                self.say(f"  tool {item.get('text')} ({item.get('status')})", "dim")
            else:
                self.say(f"  {item.get('text')}", "dim")

    async def cmd_status(self, rest: str) -> None:
        """/status."""
        status = await self._request("agentAssist/status")
        rows = [
            ("session", status.get("sessionId")),
            ("state", status.get("state")),
            ("resumed", status.get("resumed")),
            ("turns", status.get("turns")),
            ("phase", status.get("phase") or "none"),
            ("model", status.get("model") or "not configured"),
            ("context window", f"{status.get('contextWindow')} tokens"),
            ("drifted files", status.get("drift")),
            ("read-only", status.get("readOnly")),
            ("persistence", status.get("persistence")),
            ("workspace", str(self.workspace)),
            ("instance", self.instance_id),
        ]
        for key, value in rows:
            self.say(f"  {key:<14} {value}")


def _table(title: str, columns: list[str], rows: list[list[str]]) -> RenderableType:
    """Build a table whose cells are plain text (never markup: snippets hold `[`…`]`)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(title))
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _short_time(iso: str) -> str:
    """Return `YYYY-MM-DD HH:MM` of an ISO timestamp (UTC as written by the server)."""
    return iso.replace("T", " ")[:16]


# -- command line ----------------------------------------------------------------------------


def run_chat(args: argparse.Namespace) -> int:
    """`agent-assist chat`."""
    from rich.console import Console

    workspace = Path(args.workspace or ".").expanduser()
    err = Console(stderr=True, highlight=False)
    if not workspace.is_dir():
        err.print(f"agent-assist chat: {workspace} is not a directory", markup=False)
        return 2
    workspace = workspace.resolve()
    instance_id = args.instance or default_instance_id(workspace)
    if not INSTANCE_RE.fullmatch(instance_id):
        err.print(
            f"agent-assist chat: invalid --instance {instance_id!r} (1-64 of A-Z a-z 0-9 _ . -)",
            markup=False,
        )
        return 2
    options: dict[str, Any] = {}
    if args.context_window is not None:
        options["contextWindow"] = args.context_window
    reader: LineReader = PromptReader() if sys.stdin.isatty() else PlainReader()
    console = Console(highlight=False, soft_wrap=True)
    app = ChatApp(
        workspace,
        instance_id,
        console=console,
        reader=reader,
        options=options,
        verbose=bool(getattr(args, "verbose", False)),
    )
    try:
        return asyncio.run(app.run())
    except KeyboardInterrupt:
        return 130


def register(subparsers: Any) -> None:
    """Add `agent-assist chat`."""
    parser = subparsers.add_parser(
        "chat",
        help="chat in the terminal (starts the server for this directory)",
        description="Chat with the assistant in the terminal. The server runs in a subprocess; "
        "the session is saved on exit and offered for resume next time.",
    )
    parser.add_argument("--workspace", metavar="DIR", help="project directory (default: .)")
    parser.add_argument(
        "--instance",
        metavar="ID",
        help="instance id: which previous session to offer (default: derived from the directory)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        metavar="TOKENS",
        help="the model's context window (compaction starts at 60%% of it)",
    )
    parser.set_defaults(func=run_chat)
