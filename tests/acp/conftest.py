"""Fixtures of the ACP suite: a workspace and a store of its own (tests/conftest.py), the agent."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from lsp_server.fake_model import FakeOpenAI

from .harness import Running, running_agent


@pytest.fixture
def model_args(fake: FakeOpenAI) -> tuple[str, ...]:
    return ("--model", "test-model", "--base-url", fake.base_url)


@pytest.fixture
def start(
    workspace: Path, home: Path, model_args: tuple[str, ...]
) -> Callable[..., AbstractAsyncContextManager[Running]]:
    """Return how to start an agent on this test's workspace and store."""

    def make(*args: str, **kwargs: Any) -> AbstractAsyncContextManager[Running]:
        kwargs.setdefault("env", {"AGENT_ASSIST_LLM_API_KEY": "sk-test-KEY-0123456789abcdef"})
        return running_agent(workspace, home, *(args or model_args), **kwargs)

    return make


@pytest.fixture
async def agent(
    start: Callable[..., AbstractAsyncContextManager[Running]],
) -> AsyncIterator[Running]:
    """An initialized agent."""
    async with start() as running:
        await running.initialize()
        yield running
