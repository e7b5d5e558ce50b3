"""The terminal's pure pieces, in-process: where Markdown is cut, the reply printed once,
the edits the client refuses, the recap's wording."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from lsp_server.client import PlannedWrite, WorkspaceEditor, path_to_uri
from lsp_server.client.editor import EditorSide
from lsp_server.terminal.blocks import complete_blocks
from lsp_server.terminal.edit_review import unified_diff
from lsp_server.terminal.render import ReplyView, plural
from lsp_server.terminal.start import describe, ending


def test_blocks_are_complete_once_the_next_one_begins() -> None:
    text = "one\ntwo\n\n```py\na\n\nb\n```\n\n- x\n\n  more of x\n- y\n\nlast"
    blocks, rest = complete_blocks(text)
    assert blocks == ["one\ntwo", "```py\na\n\nb\n```"]
    assert text[rest:] == "- x\n\n  more of x\n- y\n\nlast"
    assert complete_blocks("a\n\n") == ([], 0)  # what follows may still be indented
    assert complete_blocks("```\nopen fence\n\nstill code\n") == ([], 0)


def test_a_reply_streamed_in_pieces_is_printed_whole_and_once() -> None:
    out = io.StringIO()
    console = Console(file=out, width=40, color_system=None, highlight=False)
    reply = "alpha " * 30 + "\n\n```\ncode line\n```\n\n" + "omega " * 20
    view = ReplyView(console)
    for start in range(0, len(reply), 7):
        view.delta(reply[start : start + 7])
    assert "omega" not in out.getvalue()  # the last block is live, not printed yet
    assert "omega" in view.live_lines(40, 10)
    view.stop()
    view.stop()
    printed = out.getvalue()
    assert printed.count("alpha") == 30 and printed.count("omega") == 20
    assert printed.count("code line") == 1
    assert max(len(row.rstrip()) for row in printed.split("\n")) <= 40


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("{root}/.git/config", "inside .git"),
        ("{root}/sub/.git/hooks/pre-commit", "inside .git"),
        ("{root}/../outside.txt", "outside the workspace"),
        ("https://example.com/x", "not a file URI"),
    ],
)
def test_the_client_refuses_edits_outside_the_workspace_or_in_git(
    tmp_path: Path, uri: str, why: str
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = uri.format(root=path_to_uri(root))
    edit = {"changes": {target: [{"range": _whole(), "newText": "x"}]}}
    applied, reason = WorkspaceEditor(root).apply(edit)
    assert not applied and reason is not None and why in reason
    assert not (tmp_path / "outside.txt").exists() and not (root / ".git").exists()


def _whole() -> dict[str, object]:
    return {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}


async def test_a_reviewer_sees_the_diff_and_its_refusal_is_the_answer(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    seen: list[list[str]] = []

    async def review(writes: list[PlannedWrite], label: str) -> str | None:
        seen.append(unified_diff(writes[0]))
        return "no thanks"

    side = EditorSide(tmp_path, review=review)
    whole_line = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}
    document = {"uri": path_to_uri(tmp_path / "a.txt"), "version": None}
    change = {"textDocument": document, "edits": [{"range": whole_line, "newText": "new\n"}]}
    edit = {"documentChanges": [change]}
    result = await side.answer("workspace/applyEdit", {"edit": edit, "label": "write a.txt"})
    assert result == {"applied": False, "failureReason": "no thanks"}
    assert (tmp_path / "a.txt").read_text() == "old\n"
    assert seen == [["--- a/a.txt", "+++ b/a.txt", "@@ -1 +1 @@", "-old", "+new"]]


def test_the_recap_words() -> None:
    row = {"title": None, "turns": 1, "updatedAt": "2026-12-05T17:35:10Z"}
    assert describe(row) == "(untitled) · 1 turn · last active 2026-12-05 17:35 UTC"
    assert "no turns yet" in describe({**row, "turns": 0, "title": "Plan"})
    assert plural(2, "turn") == "2 turns"
    user = {"role": "user", "turn": 2, "text": "q"}
    assert ending([user]) == "interrupted (no answer was recorded)"
    cut = {"role": "assistant", "turn": 2, "text": "a", "partial": True, "endReason": "aborted"}
    assert ending([user, cut]) == "aborted before its end"
    done = {"role": "assistant", "turn": 2, "text": "a", "endReason": "completed"}
    assert ending([user, done]) is None
