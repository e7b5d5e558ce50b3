"""Fixtures for e2e tests: a workspace, a private store, the loopback model, editors."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Editor


@pytest.fixture(params=["vscode", "neovim"])
def client_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_editor(
    workspace: Path, home: Path, fake: FakeOpenAI, client_name: str
) -> AsyncIterator[Callable[..., Editor]]:
    editors: list[Editor] = []

    def make(**kwargs: Any) -> Editor:
        options = kwargs.pop("options", None)
        if options is None:
            options = {"instanceId": "test-window"}
        options.setdefault(
            "model",
            {
                "name": "test-model",
                "baseUrl": fake.base_url,
                "apiKey": "sk-test-KEY-0123456789abcdef",
            },
        )
        if options["model"] is None:
            del options["model"]
        kwargs.setdefault("client", client_name)
        editor = Editor(workspace, home, options=options, **kwargs)
        editors.append(editor)
        return editor

    yield make
    for editor in editors:
        if editor.client._server is not None and editor.client._server.returncode is None:
            try:
                await editor.stop()
            except Exception:
                editor.process.kill()
