"""The MCP fixture server (`tests/unit/mcp_fixture_server.py`) plus `garbage`.

`garbage` writes a line that is no JSON-RPC to stdout mid-call, then answers.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))

import mcp_fixture_server as fixture  # noqa: E402


@fixture.server.tool()
def garbage() -> str:
    """Write garbage where the protocol goes, then answer."""
    os.write(1, b"}{ this is no JSON-RPC\n")
    return "answered after the garbage"


if __name__ == "__main__":
    fixture.server.run("stdio")
