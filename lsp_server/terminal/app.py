"""The terminal chat: starts the server, runs the prompt loop, renders what arrives.

prompt-toolkit reads the input, rich renders the streamed Markdown; everything the chat
does goes through the server in a subprocess (no second code path into `session/`). On a
terminal the prompt stays up while a reply streams: a line typed then is queued (shown
above the prompt, `/withdraw` takes it back) and sent when the reply ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .. import protocol as proto
from ..client import PROGRESS, SHOW_MESSAGE, LspClient, LspError, PendingRequest, ServerExitedError
from . import questions, start
from .edit_review import EditReview
from .input import LineReader
from .outbox import Outbox
from .render import ReplyView, args_summary

if TYPE_CHECKING:
    from rich.console import Console

NO_MODEL = (
    "No model is configured. Start `agent-assist chat --model NAME --base-url URL` (the key in "
    "AGENT_ASSIST_LLM_API_KEY), or set AGENT_ASSIST_LLM_MODEL_NAME, AGENT_ASSIST_LLM_BASE_URL "
    "and AGENT_ASSIST_LLM_API_KEY (or AGENT_ASSIST_MODEL, OPENAI_BASE_URL, OPENAI_API_KEY); "
    "`agent-assist demo` shows the whole flow without a model."
)


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
        approve_edits: bool = False,
        resume: str | None = None,
        latest: bool = False,
    ) -> None:
        self.workspace = workspace
        self.verbose = verbose
        self.instance_id = instance_id
        self.console = console
        self.reader = reader
        self.options = options or {}
        self.resume = resume  # --resume: an id (prefix), "" for the picker, None: not asked
        self.latest = latest  # --continue
        self.opened = False  # a session chosen at start was opened
        self.client: LspClient | None = None
        self.session_id: str | None = None
        self.reset = False  # the session is a reset's, with no turn yet: autosave skips it
        self.model: str | None = None  # the server's model, from the banner's status
        self.view: ReplyView | None = None
        self.turn: PendingRequest | None = None
        self.cancelling = False
        self.quit = False
        self.main_task: asyncio.Task[Any] | None = None
        self.review = EditReview(self, approve_all=approve_edits)
        self.outbox = Outbox(self)

    # -- printing -----------------------------------------------------------------------

    def say(self, text: str, style: str | None = None) -> None:
        """Print plain text (never markup; control characters shown, not obeyed)."""
        from rich.text import Text

        self.console.print(Text(inert(text), style=style or ""), soft_wrap=True)

    def error(self, text: str) -> None:
        """Print an error line."""
        self.say(f"✗ {text}", "bold red")

    def warn(self, text: str) -> None:
        """Print a warning line."""
        self.say(f"⚠ {text}", "yellow")

    def flush_reply(self) -> None:
        """Print the reply's unfinished block now (something else is printed after it)."""
        if self.view is not None:
            self.view.flush()

    def _server_log(self, line: str) -> None:
        sys.stderr.write(f"[server] {inert(line)}\n")

    # -- server events --------------------------------------------------------------------

    def _listen(self, client: LspClient) -> None:
        client.on(proto.CHAT_DELTA, self._on_delta)
        client.on(proto.CHAT_RETRY, self._on_retry)
        client.on(proto.TOOL_CALL, self._on_tool)
        client.on(proto.DRIFT, self._on_drift)
        client.on(proto.SESSION_CHANGED, self._on_session_changed)
        client.on(SHOW_MESSAGE, self._on_show_message)
        client.on(PROGRESS, self._on_progress)

    def _on_delta(self, params: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.delta(str(params.get("delta", "")))
            self.reader.redraw()

    def _on_retry(self, params: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.restart()
        attempt, reason = params.get("attempt"), params.get("reason")
        self.say(f"  ↻ retrying (attempt {attempt}): {reason}", "yellow")

    def _on_tool(self, params: dict[str, Any]) -> None:
        status = params.get("status")
        if status == "started":
            return  # shown once it is done or failed, with its outcome
        self.flush_reply()
        mark = "✓" if status == "done" else "✗"
        summary = args_summary(params.get("args"))
        self.say(f"  {mark} tool {params.get('tool')} {summary} ({status})", "dim")

    def _on_drift(self, params: dict[str, Any]) -> None:
        parts = [f"{p} (modified)" for p in params.get("modified") or []]
        parts += [f"{p} (deleted)" for p in params.get("deleted") or []]
        parts += [f"{p} (created)" for p in params.get("created") or []]
        if params.get("source") == "resume":
            lead = "Drift since the last session:"
        else:
            lead = "Drift: changed outside the assistant:"
        self.flush_reply()
        self.warn(f"{lead} {', '.join(parts)}")

    def _on_session_changed(self, params: dict[str, Any]) -> None:
        self.session_id = str(params.get("sessionId"))
        self.reset = params.get("reason") == "reset"  # nothing is kept of it until a turn

    def _on_show_message(self, params: dict[str, Any]) -> None:
        message = str(params.get("message", ""))
        kind = params.get("type")
        self.flush_reply()
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

    # -- questions -------------------------------------------------------------------------

    async def read(self, prompt: str) -> str:
        """Read an answer: through the running prompt if there is one, else a prompt of its own."""
        if self.outbox.running:
            line = await self.outbox.question(inert(prompt))
        else:
            try:
                line = await self.reader.read(inert(prompt))
            finally:
                self.install_signals()
        if self.reader.interactive:
            self.say(f"{prompt}{line}")  # the prompt erased itself
        return line

    async def ask(self, message: str, actions: list[str]) -> str | None:
        """Answer `window/showMessageRequest` in the terminal."""
        return await questions.ask(self, message, actions)

    # -- signals --------------------------------------------------------------------------

    def install_signals(self) -> None:
        """Take SIGINT, SIGTERM and SIGHUP (again: prompt-toolkit replaces SIGINT's handler)."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
            loop.add_signal_handler(signal.SIGTERM, self._stop_main)
            loop.add_signal_handler(signal.SIGHUP, self._stop_main)

    def _stop_main(self) -> None:
        if self.main_task is not None:
            self.main_task.cancel()

    def interrupt(self) -> bool:
        """Ctrl+C: cancel the running turn (True), or say that the chat should end (False)."""
        turn = self.turn
        if turn is not None and not turn.future.done() and self.client is not None:
            if self.cancelling:
                return False
            self.cancelling = True
            self.client.cancel(turn)
            return True
        return False

    def _on_sigint(self) -> None:
        if not self.interrupt():
            self._stop_main()

    # -- main loop -------------------------------------------------------------------------

    async def run(self) -> int:
        """Run the chat until the user leaves; return the exit code."""
        self.main_task = asyncio.current_task()
        self.install_signals()
        options = {"driftMessages": False, **self.options}  # drift is printed from the notice
        if self.resume is not None or self.latest:
            options["autoResume"] = "never"  # the session is chosen here, then opened
        client = LspClient(
            self.workspace,
            instance_id=self.instance_id,
            options=options,
            ask=self.ask,
            review=self.review,
            stderr_sink=self._server_log if self.verbose else None,
        )
        self.client = client
        self._listen(client)
        code = 0
        try:
            await client.start()
            await client.wait_session()
            if self.resume is not None or self.latest:
                await start.open_chosen(self, self.resume, self.latest)
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
            kept = await self._session_kept()
            with contextlib.suppress(asyncio.CancelledError):
                await client.shutdown()
            if self.session_id and kept:
                self.say(f"Closed session {self.session_id}. Bye.", "dim")
            elif self.session_id and self.reset:
                self.say("Bye (no turns since the reset: nothing to keep).", "dim")
            elif self.session_id:
                self.say(
                    f"Bye (session {self.session_id} has no turns: saved, not offered to resume).",
                    "dim",
                )
        return code

    async def _session_kept(self) -> bool:
        """Whether the session has anything to keep (a turn); True when the server cannot say."""
        if self.client is None or self.session_id is None:
            return True
        try:
            status = await asyncio.wait_for(self.request(proto.STATUS), 2)
        except (LspError, ServerExitedError, OSError, TimeoutError, asyncio.CancelledError):
            return True
        return bool(status.get("turns")) or bool(status.get("resumed"))

    async def _banner(self) -> None:
        assert self.client is not None
        status = await self.request(proto.STATUS)
        resumed = bool(status.get("resumed"))
        how = "resumed" if resumed or self.opened else "new"
        self.model = status.get("model")
        model = self.model or "none"
        self.say(
            f"agent-assist chat · {self.workspace} · session {status['sessionId']} ({how}) · "
            f"model {model}",
            "bold",
        )
        if resumed or self.opened:
            await start.recap(self, status)
        if status.get("readOnly"):
            self.warn("This session is read-only (damaged log or newer format); /reset to chat.")
        if not self.model:
            self.warn(NO_MODEL)
        self.say(
            "Type a message, /help for commands, Alt+Enter for a new line, Ctrl+D to quit.",
            "dim",
        )

    async def _loop(self) -> int:
        if self.reader.interactive:
            return await self.outbox.run()
        while True:  # lines from a pipe: one after the other, answers to questions included
            try:
                line = await self.read("› ")
            except (EOFError, KeyboardInterrupt):
                return 0
            if await self.handle(line):
                return 0

    async def handle(self, line: str) -> bool:
        """Run one line (a message or a slash command); return True to leave."""
        from .commands import COMMANDS

        line = line.strip()
        if not line:
            return False
        try:
            if line.startswith("/"):
                name, _, rest = line[1:].partition(" ")
                if name in ("exit", "quit"):
                    return True
                handler = COMMANDS.get(name.lower())
                if handler is None:
                    self.say(f"Unknown command /{name} — type /help for the list.", "yellow")
                    return False
                await handler(self, rest.strip())
            else:
                await self.chat(line)
        except LspError as exc:
            self.error(exc.message)
        return False

    async def chat(self, text: str) -> None:
        """Send one message; stream the reply; Ctrl+C cancels it."""
        assert self.client is not None
        if not self.model:
            self.error("No model is configured (see above): nothing was sent.")
            return
        view = ReplyView(self.console)
        self.view = view
        self.cancelling = False
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

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request to the server and return its result."""
        assert self.client is not None
        return await self.client.request(method, params or {})


def approve_edits_setting() -> bool:
    """Return True when AGENT_ASSIST_APPROVE_EDITS says to write the model's edits unasked."""
    return os.environ.get("AGENT_ASSIST_APPROVE_EDITS", "").strip().lower() in ("1", "true", "yes")
