"""The demo's steps: chat, exit, drift, resume, search, restore and fork, narrated.

With no model configured it starts a scripted local OpenAI-compatible server, clearly
labelled as the demo model; with one configured it uses that model. Every step goes through
`agent-assist serve` over LSP (the same client as `agent-assist chat`), and what happened on
disk is read back from the store and printed.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.terminal_text import inert

from .. import protocol as proto
from ..client import SHOW_MESSAGE, LspClient, LspError, ServerExitedError
from .narration import Narrator
from .script import (
    INSTANCE,
    QUESTIONS,
    REPLY_TEMPLATE,
    SPEC,
    SPEC_EDIT,
    demo_script,
    demo_summaries,
)
from .store_view import StoreView

if TYPE_CHECKING:
    from rich.console import Console

    from ..fake_model import FakeOpenAI


class Demo:
    """Runs the demo steps and narrates them."""

    def __init__(self, console: Console, *, keep: bool, verbose: bool = False) -> None:
        self.console = console
        self.keep = keep
        self.verbose = verbose
        self.tmp = Path(tempfile.mkdtemp(prefix="agent-assist-demo-"))
        self.home = self.tmp / "store"
        self.workspace = self.tmp / "workspace"
        self.out = Narrator(console, self.tmp)
        self.store = StoreView(self.workspace, self.home)
        self.fake: FakeOpenAI | None = None
        self.client: LspClient | None = None
        self.env: dict[str, str] = {}
        self._streaming = False

    # -- narration --------------------------------------------------------------------------

    # -- server ---------------------------------------------------------------------------

    def _server_log(self, line: str) -> None:
        sys.stderr.write(f"[server] {inert(line)}\n")

    def _on_delta(self, params: dict[str, Any]) -> None:
        if not self._streaming:
            self._streaming = True
            self.console.print("  assistant: ", end="", style="bold", highlight=False)
        delta = inert(str(params.get("delta", "")))  # per delta: each character on its own
        self.console.print(delta, end="", markup=False, highlight=False)
        self.console.file.flush()

    def _on_tool(self, params: dict[str, Any]) -> None:
        if params.get("status") == "started":
            args = params.get("args") or {}
            where = args.get("path", "") if isinstance(args, dict) else ""
            self.out.say(f"  tool call: {params.get('tool')} {where}", "magenta")

    def _on_drift(self, params: dict[str, Any]) -> None:
        files = [f"{p} (modified)" for p in params.get("modified") or []]
        files += [f"{p} (deleted)" for p in params.get("deleted") or []]
        files += [f"{p} (created)" for p in params.get("created") or []]
        self.out.say(f"  drift ({params.get('source')}): {', '.join(files)}", "yellow")

    def _on_message(self, params: dict[str, Any]) -> None:
        self.out.say(f"  server says: {params.get('message')}", "yellow")

    async def _ask(self, message: str, actions: list[str]) -> str | None:
        first, _, question = message.partition("\n")
        self.out.say(f"  {first}", "bold")
        self.out.say(f"  {question or 'Resume previous session?'} [Y/n] Y   (answered by the demo)")
        return "Resume" if "Resume" in actions else None

    async def launch(self) -> dict[str, Any]:
        """Start `agent-assist serve` for the demo workspace and wait for its session."""
        client = LspClient(
            self.workspace,
            instance_id=INSTANCE,
            env=self.env,
            ask=self._ask,
            client_name="agent-assist-demo",
            stderr_sink=self._server_log if self.verbose else None,
        )
        client.on(proto.CHAT_DELTA, self._on_delta)
        client.on(proto.TOOL_CALL, self._on_tool)
        client.on(proto.DRIFT, self._on_drift)
        client.on(SHOW_MESSAGE, self._on_message)
        self.client = client
        await client.start()
        self.out.say(f"  started `agent-assist serve` (pid {client.pid}), instance id {INSTANCE!r}")
        changed = await client.wait_session(60)
        self.out.say(f"  session {changed['sessionId']}: {changed['reason']}")
        return changed

    async def chat(self, text: str) -> dict[str, Any]:
        """Send one message and stream the reply."""
        assert self.client is not None
        self.out.say(f"  you: {text}", "bold")
        self._streaming = False
        result: dict[str, Any] = await self.client.request(proto.CHAT, {"text": text})
        if self._streaming:
            self.console.print()
        elif result.get("text"):
            self.out.say(f"  assistant: {result['text']}")
        return result

    async def stop(self) -> None:
        """Shut the server down (it autosaves)."""
        if self.client is not None:
            await self.client.shutdown()
            self.out.say(
                f"  server exited (code {self.client.returncode}); it autosaved on shutdown"
            )
            self.client = None

    # -- the flow ---------------------------------------------------------------------------

    def setup_model(self) -> None:
        """Use the configured model, or start the labelled demo model."""
        from rich.panel import Panel

        from engine.config import parse_initialization_options

        from ..fake_model import FakeOpenAI

        env = dict(os.environ)
        env["AGENT_ASSIST_HOME"] = str(self.home)
        env.setdefault("PYDANTIC_AI_NO_BANNER", "1")
        config, _ = parse_initialization_options(None, None, os.environ)
        if config.model.configured:
            self.out.say(f"Model: {config.model.name} (configured in your environment)", "bold")
        else:
            for key in list(env):
                if key.startswith(("OPENAI_", "AGENT_ASSIST_LLM_")) or key == "AGENT_ASSIST_MODEL":
                    del env[key]
            self.fake = FakeOpenAI(demo_script(), label="demo").start()
            self.fake.add_summary(*demo_summaries())
            env.update(
                AGENT_ASSIST_LLM_MODEL_NAME=self.fake.model_id,
                AGENT_ASSIST_LLM_BASE_URL=self.fake.base_url,
                AGENT_ASSIST_LLM_API_KEY="demo-key-not-secret",
            )
            self.console.print(
                Panel(
                    f"DEMO MODEL: no model is configured, so the replies come from a scripted "
                    f"local server ({self.fake.model_id} at {self.fake.base_url}). They are canned "
                    "text, not AI. Set AGENT_ASSIST_LLM_MODEL_NAME (and _BASE_URL, _API_KEY) "
                    "to run the demo with a real model.",
                    title="demo model",
                    style="bold yellow",
                ),
                markup=False,
                soft_wrap=False,  # wrap inside the panel instead of cutting the text off
            )
        self.env = env

    def setup_workspace(self) -> None:
        """Create the temporary project and store."""
        self.out.heading("a fresh project in a temporary directory")
        (self.workspace / "templates").mkdir(parents=True)
        (self.workspace / "agent_spec.md").write_text(SPEC, encoding="utf-8")
        (self.workspace / "templates" / "reply.txt").write_text(REPLY_TEMPLATE, encoding="utf-8")
        self.out.say(f"  demo directory: {self.tmp}")
        self.out.say(f"  AGENT_ASSIST_HOME={self.home} (your real store is not touched)")
        self.out.show_file(self.workspace / "agent_spec.md")
        self.out.say(
            f"  {self.out.rel(self.workspace / 'templates' / 'reply.txt')}: reply template"
        )

    async def first_launch(self) -> tuple[str, int]:
        """Two turns (one writes a file), an explicit save, exit; return (session, checkpoint)."""
        self.out.heading("launch the server and chat (turn 1 reads the spec)")
        changed = await self.launch()
        session_id = str(changed["sessionId"])
        await self.chat(QUESTIONS[0])
        count, types = self.store.log_types(session_id)
        log = self.store.layout.log_path(session_id)
        self.out.disk(f"{self.out.rel(log)}: {count} events ({types})")

        self.out.heading("turn 2 writes a file through workspace/applyEdit")
        before = count
        result = await self.chat(QUESTIONS[1])
        count, types = self.store.log_types(session_id, since=before)
        self.out.disk(f"the log grew to {count} events (+{types})")
        greeting = self.workspace / "templates" / "greeting.txt"
        if greeting.exists():
            self.out.show_file(greeting)
        records = sorted((self.store.layout.checkpoints_dir / session_id).glob("*.json"))
        for record in records:
            self.out.disk(
                f"{self.out.rel(record)}: automatic checkpoint after a turn that wrote files"
            )
        self.out.say(f"  (turn {result['turn']} used {result['usage']['requests']} model requests)")

        self.out.heading("the running summary, kept in the background after each turn")
        summary = await self.store.wait_summary(session_id)
        if summary is None:
            self.out.say(
                "  (the model has not summarised yet; the resume block will say what it can)"
            )
        else:
            kind = "extractive (no usable model)" if summary.data.fallback else "by the model"
            self.out.disk(
                f"session/summary #{summary.seq} ({kind}), covering {summary.data.turns} "
                f"turn{'s' * (summary.data.turns != 1)}:"
            )
            for line in summary.data.summary.splitlines():
                self.out.say(f"    | {line}")
            for decision in summary.data.decisions:
                self.out.say(f"    | decision: {decision}")

        self.out.heading("save, then exit")
        assert self.client is not None
        saved = await self.client.request(proto.SAVE, {})
        self.out.disk(
            f"checkpoint {saved['checkpoint']} saved; snapshot {self.out.rel(Path(saved['path']))}"
        )
        await self.stop()
        pointer = self.store.layout.pointer_path(INSTANCE)
        self.out.disk(f"{self.out.rel(pointer)} = {pointer.read_text(encoding='utf-8').strip()}")
        snapshot = self.store.layout.snapshot_path(session_id)
        self.out.disk(f"{self.out.rel(snapshot)} ({snapshot.stat().st_size} bytes, schema v3)")
        return session_id, int(saved["checkpoint"])

    def edit_behind_the_back(self) -> None:
        """Change a tracked file while no assistant runs."""
        self.out.heading("edit agent_spec.md behind the assistant's back")
        spec = self.workspace / "agent_spec.md"
        with spec.open("a", encoding="utf-8") as fh:
            fh.write(SPEC_EDIT)
        self.out.say("  appended an 'Escalation' section while the server was not running")
        self.out.show_file(spec)

    async def relaunch(self, session_id: str) -> None:
        """Relaunch: the resume question, drift, the injected context, a third turn."""
        self.out.heading("relaunch: the resume question")
        before, _ = self.store.log_types(session_id)
        changed = await self.launch()
        if changed["sessionId"] != session_id or changed["reason"] != "resumed":
            raise RuntimeError(f"expected to resume {session_id}, got {changed}")
        count, types = self.store.log_types(session_id, since=before)
        self.out.disk(f"the same log continues: {count} events (+{types})")

        self.out.heading("the resume context injected into the system prompt")
        assert self.client is not None
        context = (await self.client.request(proto.RESUME, {}))["context"]
        for line in context.splitlines():
            self.out.say(f"    | {line}")

        self.out.heading("turn 3: the model knows which files changed")
        before = count
        await self.chat(QUESTIONS[2])
        carried = self.store.resume_lines_sent(session_id, before)
        if carried:
            self.out.say("  the system prompt of this turn (logged in request/header) carried:")
            for line in carried:
                self.out.say(f"    | {line}")
        greeting = self.workspace / "templates" / "greeting.txt"
        if greeting.exists():
            self.out.show_file(greeting)

    async def search(self) -> None:
        """Search every session of the project."""
        self.out.heading("search the project's sessions")
        assert self.client is not None
        query = "greeting"
        try:
            result = await self.client.request(proto.SEARCH, {"query": query, "limit": 5})
            hits = result.get("results") or []
            source = proto.SEARCH
        except LspError as exc:
            if not exc.not_served:
                raise
            hits = self.store.search(query)
            if hits is None:
                self.out.say("  search is not available in this build yet; skipped")
                return
            source = f"the store's index (this server does not serve {proto.SEARCH} yet)"
        self.out.say(f"  query {query!r} via {source}: {len(hits)} hit(s)")
        for hit in hits[:5]:
            self.out.say(
                f"    session {hit['sessionId']} turn {hit.get('turn')} {hit['type']}: "
                f"{hit['snippet']}"
            )
        index = self.store.layout.project_dir / "index.sqlite"
        if index.exists():
            self.out.disk(
                f"{self.out.rel(index)} ({index.stat().st_size} bytes, a projection of the logs)"
            )

    async def restore(self, session_id: str, number: int) -> None:
        """Restore the saved checkpoint: files and conversation go back."""
        self.out.heading(f"restore checkpoint {number} (the explicit save)")
        assert self.client is not None
        listing = await self.client.request(proto.CHECKPOINT, {})
        for cp in listing["checkpoints"]:
            kind = "auto" if cp["auto"] else "save"
            self.out.say(f"    #{cp['number']} turn {cp['turn']} ({kind}): {cp['title']}")
        before, _ = self.store.log_types(session_id)
        result = await self.client.request(proto.CHECKPOINT, {"number": number})
        self.out.say(f"  restored files: {', '.join(result['restoredFiles']) or 'none'}")
        count, types = self.store.log_types(session_id, since=before)
        self.out.disk(f"nothing was rewritten in the log; it grew to {count} events (+{types})")
        for name in ("agent_spec.md", "templates/greeting.txt"):
            path = self.workspace / name
            if path.exists():
                self.out.show_file(path)
        history = await self.client.request(proto.HISTORY, {})
        turns = sorted({i["turn"] for i in history["items"] if i["turn"] is not None})
        self.out.say(f"  the conversation rewound: the transcript now has turns {turns}")

    async def fork(self, session_id: str) -> None:
        """Fork the session right after turn 1."""
        from session.events import TurnEndEvent

        self.out.heading("fork the session after turn 1")
        assert self.client is not None
        events = self.store.manager.read_events(session_id).events
        boundary = next(e.seq for e in events if isinstance(e, TurnEndEvent) and e.turn == 1)
        parent_size = self.store.layout.log_path(session_id).stat().st_size
        result = await self.client.request(
            proto.FORK, {"sessionId": session_id, "boundary": boundary}
        )
        child = result["sessionId"]
        count, _ = self.store.log_types(child)
        self.out.say(
            f"  new session {child}, forked from {result['parentSessionId']} at seq {boundary}"
        )
        self.out.disk(f"{self.out.rel(self.store.layout.log_path(child))}: {count} events copied")
        unchanged = self.store.layout.log_path(session_id).stat().st_size == parent_size
        self.out.disk(f"the parent's log is {'untouched' if unchanged else 'CHANGED'}")

    def store_tree(self) -> None:
        """List every file in the store."""
        self.out.heading("what the store holds now")
        for path in self.store.files():
            self.out.say(f"  {self.out.rel(path)} ({path.stat().st_size} bytes)")

    async def run(self) -> int:
        """Run every step; clean up unless --keep."""
        self.out.say("agent-assist demo: the whole flow, through the real server", "bold")
        code = 0
        try:
            self.setup_model()
            self.setup_workspace()
            session_id, checkpoint = await self.first_launch()
            self.edit_behind_the_back()
            await self.relaunch(session_id)
            await self.search()
            await self.restore(session_id, checkpoint)
            await self.fork(session_id)
            await self.stop()
            self.store_tree()
            self.console.print()
            self.out.say("Demo complete.", "bold green")
        except (LspError, ServerExitedError, RuntimeError, OSError, TimeoutError) as exc:
            self.out.say(f"Demo failed: {exc}", "bold red")
            code = 1
        finally:
            if self.client is not None:
                await self.client.shutdown()
            if self.fake is not None:
                self.fake.stop()
            if self.keep:
                self.out.say(f"Kept the demo data in {self.tmp}", "bold")
                self.out.say(
                    f"  look around: AGENT_ASSIST_HOME={self.home} agent-assist sessions list "
                    f"--workspace {self.workspace}"
                )
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.out.say(f"Removed the temporary demo data ({self.tmp}); --keep keeps it.")
        return code
