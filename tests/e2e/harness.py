"""A scriptable test editor: pytest-lsp's client driving the real server subprocess."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, default_converter
from pygls.uris import from_fs_path, to_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features

from session.local.manager import SessionManager
from session.store.backend import SessionStore
from session.store.choose import SCHEMA_ENV, open_store
from session.store.choose import STORE_ENV as STORE_ENV_NAME

REPO = Path(__file__).resolve().parents[2]
NOTIFICATIONS = (
    "agentAssist/turnStarted",
    "agentAssist/turnEnded",
    "agentAssist/chatDelta",
    "agentAssist/chatRetry",
    "agentAssist/toolCall",
    "agentAssist/drift",
    "agentAssist/sessionChanged",
)
CLIENTS = {"vscode": "visual-studio-code", "neovim": "neovim@v0.11.0"}


def _plain_json_converter() -> Any:
    """Keep custom params and results as plain dicts on the client side too."""
    converter = default_converter()
    converter.register_structure_hook(
        JsonRPCResponseMessage,
        lambda obj, cls: cls(
            id=obj.get("id"), jsonrpc=obj.get("jsonrpc"), result=obj.get("result")
        ),
    )
    converter.register_structure_hook(
        JsonRPCNotification,
        lambda obj, cls: cls(
            method=obj.get("method"), jsonrpc=obj.get("jsonrpc"), params=obj.get("params")
        ),
    )
    return converter


# The store the e2e test running now uses (`tests/e2e/conftest.py` sets it): empty for the
# local files, else AGENT_ASSIST_STORE and AGENT_ASSIST_STORE_SCHEMA of a PostgreSQL store.
STORE_ENV: dict[str, str] = {}
_OPENED: dict[tuple[str, str, str], SessionStore] = {}


def server_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for the server: our store, no real model credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_ASSIST_"))}
    env.update(
        {"AGENT_ASSIST_HOME": str(home), "PYDANTIC_AI_NO_BANNER": "1", "PYTHONUNBUFFERED": "1"}
    )
    # Never this machine's own seed store (a test that wants one names it in `extra`).
    env["AGENT_ASSIST_SEED_HOME"] = str(home.parent / "no-seed-store")
    env.update(STORE_ENV)
    env.update(extra or {})
    return env


def stored(workspace: Path, home: Path) -> SessionStore:
    """The store the server of this test writes to, opened to read what it holds."""
    spec = STORE_ENV.get(STORE_ENV_NAME, "local")
    schema = STORE_ENV.get(SCHEMA_ENV)
    if spec == "local":
        return SessionManager(workspace, home=home)
    key = (str(workspace), spec, schema or "")
    if key not in _OPENED:
        _OPENED[key] = open_store(spec, workspace, home=home, schema=schema)
    return _OPENED[key]


def close_stored() -> None:
    """Close the stores `stored` opened."""
    for store in _OPENED.values():
        store.close()
    _OPENED.clear()


class Editor:
    """One editor instance: starts the server, answers its questions, records what it sends."""

    def __init__(
        self,
        workspace: Path,
        home: Path,
        *,
        client: str = "vscode",
        options: dict[str, Any] | None = None,
        resume_answer: str | None = "Resume",
        reset_answer: str | None = "Keep files",
        apply_edits: bool = True,
        refuse_edits: bool = False,
        answers: Callable[[types.ShowMessageRequestParams], str | None] | None = None,
        can_ask: bool = True,
        env: dict[str, str] | None = None,
        buffered: bool = False,
        watch_creates: bool = False,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.client_name = client
        self.options = options if options is not None else {"instanceId": "test-window"}
        self.resume_answer = resume_answer
        self.reset_answer = reset_answer
        self.apply_edits = apply_edits  # False: a client without `workspace.applyEdit`
        self.refuse_edits = refuse_edits  # True: it has it, and answers `applied: false`
        self.answers = answers  # answers the questions other than resume (else reset_answer)
        self.can_ask = can_ask  # False: no window.showMessage capability
        self.env = env or {}
        # True: applied edits stay unsaved in `buffers` (didOpen/didChange) until `save`.
        self.buffered = buffered
        # True: the `didChange` of an applied edit is held back until `send_held_changes`
        # (eglot sends it from an idle timer, after it answered the edit).
        self.hold_changes = False
        self.held: list[types.DidChangeTextDocumentParams] = []
        # True: a file an applied edit creates is reported `Created` by the watcher at once,
        # before the edit is answered (as VS Code's watcher may).
        self.watch_creates = watch_creates
        # Set: applied edits stay in these buffers, never synced to the server (VS Code syncs
        # no document), their ranges applied as VS Code does (clamped to the document).
        self.unsynced: dict[str, str] | None = None
        self.buffers: dict[str, str] = {}  # open documents by URI
        self.versions: dict[str, int] = {}
        self.notifications: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.questions: list[types.ShowMessageRequestParams] = []
        self.registrations: list[types.RegistrationParams] = []
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.client = LanguageClient(converter_factory=_plain_json_converter)
        register_lsp_features(self.client)
        self._register_handlers()
        self.result: types.InitializeResult | None = None

    # -- handlers for what the server sends --------------------------------------------

    def _register_handlers(self) -> None:
        client = self.client
        for method in NOTIFICATIONS:

            def record(ls: Any, params: Any, method: str = method) -> None:
                self.notifications[method].append(params)

            client.feature(method)(record)

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def ask(ls: Any, params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            self.questions.append(params)
            if "Resume previous session?" in params.message:
                answer = self.resume_answer
            elif self.answers is not None:
                answer = self.answers(params)
            else:
                answer = self.reset_answer
            return None if answer is None else types.MessageActionItem(title=answer)

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def register(ls: Any, params: types.RegistrationParams) -> None:
            self.registrations.append(params)

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply(
            ls: Any, params: types.ApplyWorkspaceEditParams
        ) -> types.ApplyWorkspaceEditResult:
            self.edits.append(params)
            if self.refuse_edits or not self.apply_edits:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason="refused by test"
                )
            edit = params.edit
            for change in edit.document_changes or []:
                if isinstance(change, types.CreateFile):
                    path = Path(to_fs_path(change.uri) or "")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                    if self.watch_creates:
                        self.watched(change.uri, types.FileChangeType.Created)
                elif isinstance(change, types.TextDocumentEdit):
                    self._apply_full(change.text_document.uri, change.edits)
            for uri, edits in (edit.changes or {}).items():
                self._apply_full(uri, edits)
            return types.ApplyWorkspaceEditResult(applied=True)

    def _apply_full(self, uri: str, edits: Any) -> None:
        # The server only sends whole-file replacements; the "editor" saves at once
        # unless it keeps them in a buffer, as editors do.
        path = Path(to_fs_path(uri) or "")
        if self.unsynced is not None:
            text = self.unsynced.get(uri)
            if text is None:
                text = path.read_text(encoding="utf-8") if path.exists() else ""
            for edit in edits:
                text = clamped_replace(text, edit.range, edit.new_text)
            self.unsynced[uri] = text
            return
        if not self.buffered:
            path.write_text(edits[-1].new_text, encoding="utf-8")
            return
        text = self.buffers.get(uri)
        if text is None:
            text = self.open(path.relative_to(self.workspace).as_posix())
        lines = text.split("\n")
        end = types.Position(line=len(lines) - 1, character=len(lines[-1]))
        self._change(uri, types.Range(types.Position(0, 0), end), edits[-1].new_text)

    # -- open documents (with `buffered`) ------------------------------------------------------

    def open(self, relative: str, text: str | None = None) -> str:
        """Open a workspace file as a document (`didOpen`, its disk text unless `text`)."""
        path = self.workspace / relative
        uri = from_fs_path(str(path)) or ""
        text = path.read_text(encoding="utf-8") if text is None else text
        self.buffers[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="plaintext", version=1, text=text)
            )
        )
        return text

    def _change(self, uri: str, where: types.Range, text: str) -> None:
        """Apply an incremental change to an open document and send `didChange`."""
        lines = self.buffers[uri].split("\n")
        head = "\n".join(
            lines[: where.start.line] + [lines[where.start.line][: where.start.character]]
        )
        tail = "\n".join(
            [lines[where.end.line][where.end.character :]] + lines[where.end.line + 1 :]
        )
        self.buffers[uri] = head + text + tail
        self.versions[uri] += 1
        params = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=self.versions[uri]
            ),
            content_changes=[types.TextDocumentContentChangePartial(range=where, text=text)],
        )
        if self.hold_changes:
            self.held.append(params)
        else:
            self.client.text_document_did_change(params)

    def send_held_changes(self) -> None:
        """Send the `didChange`s held back (`hold_changes`)."""
        self.hold_changes = False
        for params in self.held:
            self.client.text_document_did_change(params)
        self.held.clear()

    def type_line(self, relative: str, line: int, text: str) -> None:
        """Replace line `line` (0-based) of an open document, as the user typing."""
        uri = from_fs_path(str(self.workspace / relative)) or ""
        old = self.buffers[uri].split("\n")[line]
        self._change(
            uri, types.Range(types.Position(line, 0), types.Position(line, len(old))), text
        )

    def save(self, relative: str) -> None:
        """Save an open document: write it, send `didSave` and the watcher's `Changed`."""
        path = self.workspace / relative
        uri = from_fs_path(str(path)) or ""
        path.write_text(self.buffers[uri], encoding="utf-8")
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri))
        )
        self.watched(uri, types.FileChangeType.Changed)

    def watched(self, uri: str, change: types.FileChangeType) -> None:
        """Send the watcher's `workspace/didChangeWatchedFiles` for one file."""
        self.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams([types.FileEvent(uri=uri, type=change)])
        )

    # -- driving ---------------------------------------------------------------------------

    async def start(self) -> types.InitializeResult:
        """Spawn the server and initialize it like an editor would."""
        await self.client.start_io(
            sys.executable,
            "-m",
            "lsp_server.cli",
            "serve",
            env=server_env(self.home, self.env),
            cwd=str(REPO),
        )
        capabilities = client_capabilities(CLIENTS[self.client_name])
        if not self.can_ask and capabilities.window is not None:
            capabilities.window.show_message = None
        if not self.apply_edits and capabilities.workspace is not None:
            capabilities.workspace.apply_edit = False
        uri = from_fs_path(str(self.workspace))
        self.result = await self.client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=uri,
                workspace_folders=[types.WorkspaceFolder(uri=uri or "", name=self.workspace.name)],
                initialization_options=self.options,
                client_info=types.ClientInfo(name="Test Editor"),
            )
        )
        return self.result

    async def ready(self) -> dict[str, Any]:
        """Wait until the server has resumed or started its session."""
        return await self.wait_for("agentAssist/sessionChanged")

    async def wait_for(self, method: str, count: int = 1, timeout: float = 20) -> dict[str, Any]:
        """Wait until `count` notifications of `method` have arrived; return the last."""

        async def poll() -> dict[str, Any]:
            while len(self.notifications[method]) < count:
                await asyncio.sleep(0.02)
            return self.notifications[method][count - 1]

        return await asyncio.wait_for(poll(), timeout)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a custom request and return its (plain JSON) result."""
        return await self.client.protocol.send_request_async(method, params or {})

    def start_request(self, method: str, params: dict[str, Any]) -> tuple[str, asyncio.Future[Any]]:
        """Send a request without waiting; return its id (for `cancel`) and its future."""
        msg_id = str(uuid.uuid4())
        future = asyncio.ensure_future(
            self.client.protocol.send_request_async(method, params, msg_id)
        )
        return msg_id, future

    def cancel(self, msg_id: str) -> None:
        """Send `$/cancelRequest`, as an editor's Stop button does."""
        self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))

    async def command(self, name: str, *arguments: Any) -> Any:
        """Send `workspace/executeCommand`."""
        return await self.client.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=list(arguments))
        )

    def deltas(self) -> str:
        """Return all streamed text so far."""
        return "".join(n["delta"] for n in self.notifications["agentAssist/chatDelta"])

    @property
    def process(self) -> asyncio.subprocess.Process:
        """Return the server process."""
        server = self.client._server
        assert server is not None
        return server

    async def stop(self) -> None:
        """Shut down and exit like an editor closing."""
        await self.client.shutdown_session()
        await self.client.stop()

    async def kill(self) -> None:
        """`kill -9` the server."""
        self.process.kill()
        await self.process.wait()
        await self.client.stop()


def shown(editor: Editor) -> list[str]:
    """The texts of the window/showMessage notifications the editor received."""
    out = []
    for m in editor.client.messages:
        out.append(m.message if isinstance(m, types.ShowMessageParams) else m["message"])
    return out


def clamped_replace(text: str, where: types.Range, new_text: str) -> str:
    """Replace `where` in `text`, positions past a line's or the text's end clamped (VS Code)."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        line = lines[position.line].encode("utf-16-le")[: 2 * position.character]
        return sum(len(x) + 1 for x in lines[: position.line]) + len(line.decode("utf-16-le"))

    return text[: offset(where.start)] + new_text + text[offset(where.end) :]
