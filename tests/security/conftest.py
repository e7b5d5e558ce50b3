"""Fixtures for the security tests: the e2e harness (the real server over stdio, the loopback
model), with VS Code's client capabilities and the local store unless a test asks otherwise.

Each test here plays an attacker: a model that follows instructions planted in what it read,
a hostile clone, a misbehaving model server, another local account.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import make_editor

__all__ = ["make_editor"]


@pytest.fixture
def client_name() -> str:
    """The client whose capabilities the server sees (VS Code's; a test may override it)."""
    return "vscode"
