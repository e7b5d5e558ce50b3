"""psycopg is loaded only when a PostgreSQL store is used: not by the server or the domain."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_server_and_the_file_store_do_not_import_psycopg() -> None:
    probe = (
        "import sys, lsp_server.server, lsp_server.cli, session.lifecycle, session.checkpoints;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('psycopg', 'psycopg_pool')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
