"""Secrets: after the rest of the suite, no store it used holds the API key or a planted secret.

Runs last (file order). The crash-torture chats carry planted credentials in the user's text
and every server is configured with `API_KEY`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import API_KEY, FIGURES, PLANTED_SECRETS, STORES


def test_no_secret_reaches_any_store() -> None:
    if not STORES:
        pytest.skip("no store was used in this run (run the whole directory)")
    needles = [s.encode() for s in (API_KEY, *PLANTED_SECRETS)]
    hits: list[str] = []
    files = 0
    for store in STORES:
        for dirpath, _, names in os.walk(store):
            for name in names:
                path = Path(dirpath) / name
                if path.is_symlink() or not path.is_file():
                    continue
                files += 1
                data = path.read_bytes()
                hits += [f"{path}: {n[:8]!r}..." for n in needles if n in data]
    FIGURES["secrets.files_scanned"] += files
    FIGURES["secrets.hits"] += len(hits)
    assert not hits, hits
