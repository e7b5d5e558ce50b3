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

from session.store.backend import SessionStore
from session.store.choose import SCHEMA_ENV, open_store
from session.store.choose import STORE_ENV as STORE_ENV_NAME
from session.store.manager import SessionManager

REPO = Path(__file__).resolve().parents[2]
NOTIFICATIONS = (
    "agentAssist/turnStarted",
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
        answers: Callable[[types.ShowMessageRequestParams], str | None] | None = None,
        can_ask: bool = True,
        env: dict[str, str] | None = None,
    ) -> None:
        self.workspace = workspace
        self.home = home
        self.client_name = client
        self.options = options if options is not None else {"instanceId": "test-window"}
        self.resume_answer = resume_answer
        self.reset_answer = reset_answer
        self.apply_edits = apply_edits
        self.answers = answers  # answers the questions other than resume (else reset_answer)
        self.can_ask = can_ask  # False: no window.showMessage capability
        self.env = env or {}
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
            if not self.apply_edits:
                return types.ApplyWorkspaceEditResult(
                    applied=False, failure_reason="refused by test"
                )
            edit = params.edit
            for change in edit.document_changes or []:
                if isinstance(change, types.CreateFile):
                    path = Path(to_fs_path(change.uri) or "")
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                elif isinstance(change, types.TextDocumentEdit):
                    self._apply_full(change.text_document.uri, change.edits)
            for uri, edits in (edit.changes or {}).items():
                self._apply_full(uri, edits)
            return types.ApplyWorkspaceEditResult(applied=True)

    def _apply_full(self, uri: str, edits: Any) -> None:
        # The server only sends whole-file replacements; the "editor" saves at once.
        path = Path(to_fs_path(uri) or "")
        path.write_text(edits[-1].new_text, encoding="utf-8")

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
