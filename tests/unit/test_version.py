"""The version the server reports is the package's version."""

from __future__ import annotations

import tomllib
from pathlib import Path

import lsp_server


def test_version_matches_pyproject() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert lsp_server.__version__ == tomllib.loads(pyproject.read_text())["project"]["version"]
