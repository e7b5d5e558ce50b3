"""`agent-assist demo`: the whole flow, offline, against the real server in a temp workspace.

With no model configured it starts a scripted local OpenAI-compatible server, clearly
labelled as the demo model; with one configured it uses that model. Every step goes through
`agent-assist serve` over LSP (the same client as `agent-assist chat`), and what happened on
disk is read back from the store and printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from session.manager import SessionManager

    from .fake_openai import FakeOpenAI
    from .lsp_client import LspClient

INSTANCE = "demo-terminal"
SPEC = """# Support agent

Answers billing questions politely and briefly.

## Tools
- lookup_invoice(number)
"""
SPEC_EDIT = """
## Escalation
Refunds over 100 EUR go to a human.
"""
REPLY_TEMPLATE = "Dear {name},\n\n{answer}\n\nBest regards,\nSupport\n"
GREETING_V1 = "Hello {name}, thanks for contacting support!\n"
GREETING_V2 = "Hello {name}, thanks for contacting support! Refunds over 100 EUR: a human helps.\n"

QUESTIONS = (
    "What does agent_spec.md describe?",
    "Add a one-line greeting template as templates/greeting.txt.",
    "I edited the spec. Please update the greeting so it mentions refunds.",
)


def demo_script() -> list[Any]:
    """Return the demo model's replies, in the order the server will ask for them."""
    stream = {"chunk": 10, "delay": 0.02}
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]},
        {
            "text": "It describes a **support agent** that answers billing questions politely "
            "and briefly, with one tool: `lookup_invoice(number)`.",
            **stream,
        },
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "templates/greeting.txt", "content": GREETING_V1},
                }
            ]
        },
        {"text": "Done: `templates/greeting.txt` now holds a one-line greeting.", **stream},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "templates/greeting.txt", "content": GREETING_V2},
                }
            ]
        },
        {"text": "Updated the greeting: it now says that a human handles big refunds.", **stream},
    ]


def demo_summaries() -> list[Any]:
    """Return the demo model's answers to the background session-summary requests."""
    summary = (
        "The user is designing a billing support agent (agent_spec.md: polite, brief, one "
        "tool lookup_invoice). Agent Assist read the spec and wrote templates/greeting.txt, "
        "a one-line greeting."
    )
    decisions = ["Keep replies polite and brief", "Greet customers from templates/greeting.txt"]
    reply = {
        "tool_calls": [
            {"name": "final_result", "arguments": {"summary": summary, "decisions": decisions}}
        ]
    }
    return [reply] * 4


class Demo:
    """Runs the demo steps and narrates them."""

    def __init__(self, console: Console, *, keep: bool, verbose: bool = False) -> None:
        self.console = console
        self.keep = keep
        self.verbose = verbose
        self.tmp = Path(tempfile.mkdtemp(prefix="agent-assist-demo-"))
        self.home = self.tmp / "store"
        self.workspace = self.tmp / "workspace"
        self.fake: FakeOpenAI | None = None
        self.client: LspClient | None = None
        self.env: dict[str, str] = {}
        self.step = 0
        self._streaming = False

    # -- narration --------------------------------------------------------------------------

    def heading(self, title: str) -> None:
        """Print a numbered step heading."""
        from rich.rule import Rule

        self.step += 1
        self.console.print()
        self.console.print(Rule(f"Step {self.step} · {title}", align="left", style="cyan"))

    def say(self, text: str, style: str | None = None) -> None:
        """Print plain text (no markup)."""
        self.console.print(text, markup=False, style=style or "", highlight=False)

    def disk(self, text: str) -> None:
        """Print what happened on disk."""
        self.say(f"  on disk: {text}", "green")

    def show_file(self, path: Path) -> None:
        """Print a file's path and content, indented."""
        self.say(f"  {self.rel(path)}:", "green")
        for line in path.read_text(encoding="utf-8").splitlines():
            self.say(f"    | {line}")

    def rel(self, path: Path) -> str:
        """Return `path` relative to the demo directory."""
        try:
            return str(path.relative_to(self.tmp))
        except ValueError:
            return str(path)

    # -- store ------------------------------------------------------------------------------

    @property
    def manager(self) -> SessionManager:
        """Return the store's view of the demo project."""
        from session.manager import SessionManager

        return SessionManager(self.workspace, home=self.home)

    def log_types(self, session_id: str, since: int = 0) -> tuple[int, str]:
        """Return (number of events, 'type ×n, …' for events from seq `since`)."""
        events = self.manager.read_events(session_id).events
        counts = Counter(e.type for e in events if e.seq >= since)
        return len(events), ", ".join(f"{t} ×{n}" for t, n in counts.items())

    # -- server ---------------------------------------------------------------------------

    def _server_log(self, line: str) -> None:
        sys.stderr.write(f"[server] {line}\n")

    def _on_delta(self, params: dict[str, Any]) -> None:
        if not self._streaming:
            self._streaming = True
            self.console.print("  assistant: ", end="", style="bold", highlight=False)
        self.console.print(params.get("delta", ""), end="", markup=False, highlight=False)
        self.console.file.flush()

    def _on_tool(self, params: dict[str, Any]) -> None:
        if params.get("status") == "started":
            args = params.get("args") or {}
            where = args.get("path", "") if isinstance(args, dict) else ""
            self.say(f"  tool call: {params.get('tool')} {where}", "magenta")

    def _on_drift(self, params: dict[str, Any]) -> None:
        files = [f"{p} (modified)" for p in params.get("modified") or []]
        files += [f"{p} (deleted)" for p in params.get("deleted") or []]
        files += [f"{p} (created)" for p in params.get("created") or []]
        self.say(f"  drift ({params.get('source')}): {', '.join(files)}", "yellow")

    def _on_message(self, params: dict[str, Any]) -> None:
        self.say(f"  server says: {params.get('message')}", "yellow")

    async def _ask(self, message: str, actions: list[str]) -> str | None:
        first, _, question = message.partition("\n")
        self.say(f"  {first}", "bold")
        self.say(f"  {question or 'Resume previous session?'} [Y/n] Y   (answered by the demo)")
        return "Resume" if "Resume" in actions else None

    async def launch(self) -> dict[str, Any]:
        """Start `agent-assist serve` for the demo workspace and wait for its session."""
        from . import protocol as proto
        from .lsp_client import LspClient

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
        client.on("window/showMessage", self._on_message)
        self.client = client
        await client.start()
        self.say(f"  started `agent-assist serve` (pid {client.pid}), instance id {INSTANCE!r}")
        changed = await client.wait_session(60)
        self.say(f"  session {changed['sessionId']}: {changed['reason']}")
        return changed

    async def chat(self, text: str) -> dict[str, Any]:
        """Send one message and stream the reply."""
        assert self.client is not None
        self.say(f"  you: {text}", "bold")
        self._streaming = False
        result: dict[str, Any] = await self.client.request("agentAssist/chat", {"text": text})
        if self._streaming:
            self.console.print()
        elif result.get("text"):
            self.say(f"  assistant: {result['text']}")
        return result

    async def stop(self) -> None:
        """Shut the server down (it autosaves)."""
        if self.client is not None:
            await self.client.shutdown()
            self.say(f"  server exited (code {self.client.returncode}); it autosaved on shutdown")
            self.client = None

    # -- the flow ---------------------------------------------------------------------------

    def setup_model(self) -> None:
        """Use the configured model, or start the labelled demo model."""
        from rich.panel import Panel

        from .config import parse_initialization_options
        from .fake_openai import FakeOpenAI

        env = dict(os.environ)
        env["AGENT_ASSIST_HOME"] = str(self.home)
        env.setdefault("PYDANTIC_AI_NO_BANNER", "1")
        config, _ = parse_initialization_options(None, None, os.environ)
        if config.model.configured:
            self.say(f"Model: {config.model.name} (configured in your environment)", "bold")
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
        self.heading("a fresh project in a temporary directory")
        (self.workspace / "templates").mkdir(parents=True)
        (self.workspace / "agent_spec.md").write_text(SPEC, encoding="utf-8")
        (self.workspace / "templates" / "reply.txt").write_text(REPLY_TEMPLATE, encoding="utf-8")
        self.say(f"  demo directory: {self.tmp}")
        self.say(f"  AGENT_ASSIST_HOME={self.home} (your real store is not touched)")
        self.show_file(self.workspace / "agent_spec.md")
        self.say(f"  {self.rel(self.workspace / 'templates' / 'reply.txt')}: reply template")

    async def first_launch(self) -> tuple[str, int]:
        """Two turns (one writes a file), an explicit save, exit; return (session, checkpoint)."""
        self.heading("launch the server and chat (turn 1 reads the spec)")
        changed = await self.launch()
        session_id = str(changed["sessionId"])
        await self.chat(QUESTIONS[0])
        count, types = self.log_types(session_id)
        self.disk(f"{self.rel(self.manager.log_path(session_id))}: {count} events ({types})")

        self.heading("turn 2 writes a file through workspace/applyEdit")
        before = count
        result = await self.chat(QUESTIONS[1])
        count, types = self.log_types(session_id, since=before)
        self.disk(f"the log grew to {count} events (+{types})")
        greeting = self.workspace / "templates" / "greeting.txt"
        if greeting.exists():
            self.show_file(greeting)
        records = sorted((self.manager.checkpoints_dir / session_id).glob("*.json"))
        for record in records:
            self.disk(f"{self.rel(record)}: automatic checkpoint after a turn that wrote files")
        self.say(f"  (turn {result['turn']} used {result['usage']['requests']} model requests)")

        self.heading("the running summary, kept in the background after each turn")
        summary = await self.wait_summary(session_id)
        if summary is None:
            self.say("  (the model has not summarised yet; the resume block will say what it can)")
        else:
            kind = "extractive (no usable model)" if summary.data.fallback else "by the model"
            self.disk(
                f"session/summary #{summary.seq} ({kind}), covering {summary.data.turns} turns:"
            )
            for line in summary.data.summary.splitlines():
                self.say(f"    | {line}")
            for decision in summary.data.decisions:
                self.say(f"    | decision: {decision}")

        self.heading("save, then exit")
        assert self.client is not None
        saved = await self.client.request("agentAssist/save", {})
        self.disk(
            f"checkpoint {saved['checkpoint']} saved; snapshot {self.rel(Path(saved['path']))}"
        )
        await self.stop()
        pointer = self.manager.pointer_path(INSTANCE)
        self.disk(f"{self.rel(pointer)} = {pointer.read_text(encoding='utf-8').strip()}")
        snapshot = self.manager.snapshot_path(session_id)
        self.disk(f"{self.rel(snapshot)} ({snapshot.stat().st_size} bytes, schema v3)")
        return session_id, int(saved["checkpoint"])

    def edit_behind_the_back(self) -> None:
        """Change a tracked file while no assistant runs."""
        self.heading("edit agent_spec.md behind the assistant's back")
        spec = self.workspace / "agent_spec.md"
        with spec.open("a", encoding="utf-8") as fh:
            fh.write(SPEC_EDIT)
        self.say("  appended an 'Escalation' section while the server was not running")
        self.show_file(spec)

    async def relaunch(self, session_id: str) -> None:
        """Relaunch: the resume question, drift, the injected context, a third turn."""
        self.heading("relaunch: the resume question")
        before, _ = self.log_types(session_id)
        changed = await self.launch()
        if changed["sessionId"] != session_id or changed["reason"] != "resumed":
            raise RuntimeError(f"expected to resume {session_id}, got {changed}")
        count, types = self.log_types(session_id, since=before)
        self.disk(f"the same log continues: {count} events (+{types})")

        self.heading("the resume context injected into the system prompt")
        assert self.client is not None
        context = (await self.client.request("agentAssist/resume", {}))["context"]
        for line in context.splitlines():
            self.say(f"    | {line}")

        self.heading("turn 3: the model knows which files changed")
        before = count
        await self.chat(QUESTIONS[2])
        carried = self._resume_lines_sent(session_id, before)
        if carried:
            self.say("  the system prompt of this turn (logged in request/header) carried:")
            for line in carried:
                self.say(f"    | {line}")
        greeting = self.workspace / "templates" / "greeting.txt"
        if greeting.exists():
            self.show_file(greeting)

    async def wait_summary(self, session_id: str, timeout: float = 20.0) -> Any:
        """Wait for the summary of every turn so far (None if it does not come in time)."""
        turns = self.manager.read_events(session_id).events
        wanted = sum(1 for e in turns if e.type == "turn/end")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            events = self.manager.read_events(session_id).events
            found = [e for e in events if e.type == "session/summary" and e.data.turns >= wanted]
            if found:
                return found[-1]
            await asyncio.sleep(0.1)
        return None

    def _resume_lines_sent(self, session_id: str, since: int) -> list[str]:
        """Return the drift lines of the resume context found in a logged system prompt."""
        from session.models import RequestHeaderEvent

        for event in self.manager.read_events(session_id).events:
            if event.seq >= since and isinstance(event, RequestHeaderEvent):
                prompt = event.data.system_prompt or ""
                if "# Resumed Session Context" in prompt:
                    tail = prompt.split("## File Changes Since Last Session", 1)
                    lines = tail[1].strip().splitlines() if len(tail) == 2 else []
                    picked = ["## File Changes Since Last Session"]
                    picked += [line for line in lines if line.startswith("- ")]
                    return picked
        return []

    async def search(self) -> None:
        """Search every session of the project."""
        from .lsp_client import LspError

        self.heading("search the project's sessions")
        assert self.client is not None
        query = "greeting"
        try:
            result = await self.client.request("agentAssist/search", {"query": query, "limit": 5})
            hits = result.get("results") or []
            source = "agentAssist/search"
        except LspError as exc:
            if not exc.not_served:
                raise
            hits = self._search_store(query)
            if hits is None:
                self.say("  search is not available in this build yet; skipped")
                return
            source = "the store's index (this server does not serve agentAssist/search yet)"
        self.say(f"  query {query!r} via {source}: {len(hits)} hit(s)")
        for hit in hits[:5]:
            self.say(
                f"    session {hit['sessionId']} turn {hit.get('turn')} {hit['type']}: "
                f"{hit['snippet']}"
            )
        index = self.manager.project_dir / "index.sqlite"
        if index.exists():
            self.disk(f"{self.rel(index)} ({index.stat().st_size} bytes, a projection of the logs)")

    def _search_store(self, query: str) -> list[dict[str, Any]] | None:
        try:
            from session.search import SearchIndex
        except ImportError:
            return None
        manager = self.manager
        with SearchIndex.for_project(manager) as index:
            index.sync(manager)
            return [
                {"sessionId": h.session_id, "turn": h.turn, "type": h.type, "snippet": h.snippet}
                for h in index.search(query, limit=5)
            ]

    async def restore(self, session_id: str, number: int) -> None:
        """Restore the saved checkpoint: files and conversation go back."""
        self.heading(f"restore checkpoint {number} (the explicit save)")
        assert self.client is not None
        listing = await self.client.request("agentAssist/checkpoint", {})
        for cp in listing["checkpoints"]:
            kind = "auto" if cp["auto"] else "save"
            self.say(f"    #{cp['number']} turn {cp['turn']} ({kind}): {cp['title']}")
        before, _ = self.log_types(session_id)
        result = await self.client.request("agentAssist/checkpoint", {"number": number})
        self.say(f"  restored files: {', '.join(result['restoredFiles']) or 'none'}")
        count, types = self.log_types(session_id, since=before)
        self.disk(f"nothing was rewritten in the log; it grew to {count} events (+{types})")
        for name in ("agent_spec.md", "templates/greeting.txt"):
            path = self.workspace / name
            if path.exists():
                self.show_file(path)
        history = await self.client.request("agentAssist/history", {})
        turns = sorted({i["turn"] for i in history["items"] if i["turn"] is not None})
        self.say(f"  the conversation rewound: the transcript now has turns {turns}")

    async def fork(self, session_id: str) -> None:
        """Fork the session right after turn 1."""
        from session.models import TurnEndEvent

        self.heading("fork the session after turn 1")
        assert self.client is not None
        events = self.manager.read_events(session_id).events
        boundary = next(e.seq for e in events if isinstance(e, TurnEndEvent) and e.turn == 1)
        parent_size = self.manager.log_path(session_id).stat().st_size
        result = await self.client.request(
            "agentAssist/fork", {"sessionId": session_id, "boundary": boundary}
        )
        child = result["sessionId"]
        count, _ = self.log_types(child)
        self.say(
            f"  new session {child}, forked from {result['parentSessionId']} at seq {boundary}"
        )
        self.disk(f"{self.rel(self.manager.log_path(child))}: {count} events copied")
        unchanged = self.manager.log_path(session_id).stat().st_size == parent_size
        self.disk(f"the parent's log is {'untouched' if unchanged else 'CHANGED'}")

    def store_tree(self) -> None:
        """List every file in the store."""
        self.heading("what the store holds now")
        for path in sorted(self.home.rglob("*")):
            if path.is_file():
                self.say(f"  {self.rel(path)} ({path.stat().st_size} bytes)")

    async def run(self) -> int:
        """Run every step; clean up unless --keep."""
        from .lsp_client import LspError, ServerExitedError

        self.say("agent-assist demo: the whole flow, through the real server", "bold")
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
            self.say("Demo complete.", "bold green")
        except (LspError, ServerExitedError, RuntimeError, OSError, TimeoutError) as exc:
            self.say(f"Demo failed: {exc}", "bold red")
            code = 1
        finally:
            if self.client is not None:
                await self.client.shutdown()
            if self.fake is not None:
                self.fake.stop()
            if self.keep:
                self.say(f"Kept the demo data in {self.tmp}", "bold")
                self.say(
                    f"  look around: AGENT_ASSIST_HOME={self.home} agent-assist sessions list "
                    f"--workspace {self.workspace}"
                )
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.say(f"Removed the temporary demo data ({self.tmp}); --keep keeps it.")
        return code


def run_demo(args: argparse.Namespace) -> int:
    """`agent-assist demo`."""
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    demo = Demo(console, keep=args.keep, verbose=bool(getattr(args, "verbose", False)))
    try:
        return asyncio.run(demo.run())
    except KeyboardInterrupt:
        if not args.keep:
            shutil.rmtree(demo.tmp, ignore_errors=True)
        return 130


def register(subparsers: Any) -> None:
    """Add `agent-assist demo`."""
    parser = subparsers.add_parser(
        "demo",
        help="run the whole flow in a temporary workspace (offline without a model)",
        description="Chat, exit, edit a tracked file, relaunch and resume with drift, search, "
        "restore a checkpoint and fork, in a temporary workspace and store. Without a "
        "configured model a scripted local demo model answers.",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary data")
    parser.set_defaults(func=run_demo)
