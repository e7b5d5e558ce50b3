"""The small LSP client's pure parts: text edits, workspace edits, URIs, instance ids."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.client import WorkspaceEditor, apply_text_edits, path_to_uri, uri_to_path
from lsp_server.terminal.command import INSTANCE_RE, default_instance_id


def edit(sl: int, sc: int, el: int, ec: int, text: str) -> dict:
    rng = {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}
    return {"range": rng, "newText": text}


def test_text_edits_count_utf16_units_and_apply_from_the_end() -> None:
    text = "a😀b\nsecond line\n"
    # 😀 is two UTF-16 units: character 3 is just before "b".
    assert apply_text_edits(text, [edit(0, 3, 0, 4, "B")]) == "a😀B\nsecond line\n"
    both = [edit(0, 0, 0, 1, "A"), edit(1, 0, 1, 6, "2nd")]
    assert apply_text_edits(text, both) == "A😀b\n2nd line\n"
    assert apply_text_edits(text, [edit(0, 0, 2, 0, "all new")]) == "all new"


def test_workspace_editor_writes_inside_and_refuses_outside(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    editor = WorkspaceEditor(root)
    target = root / "templates" / "new.txt"
    ok, reason = editor.apply(
        {
            "documentChanges": [
                {"kind": "create", "uri": path_to_uri(target)},
                {"textDocument": {"uri": path_to_uri(target)}, "edits": [edit(0, 0, 0, 0, "hi\n")]},
            ]
        }
    )
    assert (ok, reason) == (True, None)
    assert target.read_text() == "hi\n" and editor.applied[-1] == "templates/new.txt"

    outside = tmp_path / "outside.txt"
    ok, reason = editor.apply({"changes": {path_to_uri(outside): [edit(0, 0, 0, 0, "x")]}})
    assert not ok and "outside the workspace" in (reason or "")
    assert not outside.exists()

    os.symlink(outside, root / "link.txt")
    ok, reason = editor.apply(
        {"changes": {path_to_uri(root / "link.txt"): [edit(0, 0, 0, 0, "x")]}}
    )
    assert not ok and "symlink" in (reason or "")
    assert not outside.exists()


def test_uris_round_trip_with_spaces(tmp_path: Path) -> None:
    path = tmp_path / "a dir" / "ü.md"
    assert uri_to_path(path_to_uri(path)) == path
    assert uri_to_path("untitled:Untitled-1") is None


@pytest.mark.parametrize("name", ["project", "weird name!", "x" * 200])
def test_default_instance_id_is_stable_and_valid(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name[:100]
    directory.mkdir()
    first = default_instance_id(directory)
    assert first == default_instance_id(directory / ".")
    assert INSTANCE_RE.fullmatch(first)
    assert first != default_instance_id(tmp_path)
