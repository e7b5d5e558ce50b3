"""The model's read_file: whole files when they fit, else a part at a time, in whole lines."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from engine.model import tools
from engine.model.tools import EditOutcome, ToolDeps, ToolError, read_file, read_limit
from session.local.manager import SessionManager
from session.workspace.protected import in_git_directory, protection, shown_path

from .conftest import make_lifecycle


class NoEditor:
    async def apply_file_edit(
        self, relative: str, content: str, call_id: str | None = None
    ) -> EditOutcome:
        return EditOutcome(applied=False)

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        return False

    def protected_globs(self) -> tuple[str, ...]:
        return ()

    async def read_document(self, relative: str) -> str | None:
        return None


def deps_for(manager: SessionManager, limit: int) -> ToolDeps:
    lifecycle = make_lifecycle(manager)
    lifecycle.resume_or_start(None, True)
    return ToolDeps(lifecycle, NoEditor(), limit)


def test_the_limit_is_a_quarter_of_the_window_within_bounds() -> None:
    assert read_limit(8_192) == 8_192  # bytes: 2,048 tokens of 4 bytes
    assert read_limit(128_000) == 128_000
    assert read_limit(1_000_000) == tools.MAX_READ_BYTES
    assert read_limit(512) == tools.MIN_READ_BYTES


async def test_a_file_that_fits_is_read_whole(manager: SessionManager, workspace: Path) -> None:
    (workspace / "small.md").write_text("one\ntwo\n")
    assert await read_file(deps_for(manager, 100), "small.md") == "one\ntwo\n"


async def test_a_long_file_is_read_a_part_at_a_time(
    manager: SessionManager, workspace: Path
) -> None:
    lines = [f"line {n:03d} of the long notes\n" for n in range(1, 201)]  # 27 bytes each
    (workspace / "long.md").write_text("".join(lines))
    deps = deps_for(manager, 100 * 27 + 5)
    first = await read_file(deps, "long.md")
    assert first.startswith("line 001") and "line 100" in first and "line 101" not in first
    assert first.endswith("[lines 1-100 of 200: call read_file with start_line=101 to read on]")
    rest = await read_file(deps, "long.md", start_line=101)
    assert rest == "".join(lines[100:])  # the rest fits: no note
    assert (await read_file(deps, "long.md", start_line=150)).startswith("line 150")
    assert await read_file(deps, "long.md", start_line=201) == (
        "[the file has 200 lines: nothing from line 201]"
    )
    with pytest.raises(ToolError, match="start_line must be 1 or more"):
        await read_file(deps, "long.md", start_line=0)


async def test_a_line_longer_than_a_read_is_cut_and_said(
    manager: SessionManager, workspace: Path
) -> None:
    (workspace / "min.js").write_text("x" * 5_000 + "\nnext line\n")
    part = await read_file(deps_for(manager, 2_048), "min.js")
    assert part.startswith("x" * 2_048 + "\n[line 1 is cut at 2048 bytes")
    assert part.endswith("call read_file with start_line=2 to read on]")


async def test_japanese_text_is_cut_between_lines_not_inside_a_character(
    manager: SessionManager, workspace: Path
) -> None:
    text = "".join(f"エージェントの設計 {n}\n" for n in range(100))  # 30 bytes a line
    (workspace / "ja.md").write_text(text)
    part = await read_file(deps_for(manager, 300), "ja.md")
    assert "\ufffd" not in part and part.startswith("エージェントの設計 0\n")
    assert "start_line=11 to read on" in part


async def test_a_read_asked_for_again_and_again_says_so(
    manager: SessionManager, workspace: Path
) -> None:
    """Small models list the same directory until the request limit: the third says so."""
    (workspace / "notes.md").write_text("buy milk\n")
    deps = deps_for(manager, 4096)
    listed = tools.list_files(deps, ".")
    assert "notes.md" in listed and tools.list_files(deps, ".") == listed
    third = tools.list_files(deps, ".")
    assert third[:-1] == listed and "call 3 of list_files" in third[-1]
    assert tools.list_files(deps, "./") == listed  # other arguments: another call
    assert [await read_file(deps, "notes.md") for _ in range(2)] == ["buy milk\n"] * 2
    assert "call 3 of read_file" in await read_file(deps, "notes.md")
    assert "call" not in await read_file(deps, "notes.md", 2)  # another part
    await tools.write_file(deps, "todo.md", "call the bank\n")
    assert tools.list_files(deps, ".") == sorted([*listed, "todo.md"])  # counted anew


async def test_a_path_the_file_system_refuses_is_a_tool_error(
    manager: SessionManager, workspace: Path
) -> None:
    """A small model once wrote a whole paragraph as the path: ENAMETOOLONG failed the turn."""
    deps = deps_for(manager, 4096)
    (workspace / "notes.md").write_text("buy milk\n")
    long_name = "data.json&#34;, " + "x" * 300
    with pytest.raises(ToolError, match="cannot be used: File name too long"):
        await read_file(deps, long_name)
    with pytest.raises(ToolError, match="cannot be used: File name too long"):
        await tools.write_file(deps, long_name, "{}")
    with pytest.raises(ToolError, match="cannot be used: File name too long"):
        tools.list_files(deps, long_name)
    with pytest.raises(ToolError, match="cannot write templates: Is a directory"):
        (workspace / "templates").mkdir(exist_ok=True)
        await tools.write_file(deps, "templates", "{}")
    with pytest.raises(ToolError, match="notes.md/inside.md.* Not a directory"):
        await tools.write_file(deps, "notes.md/inside.md", "{}")
    assert (workspace / "notes.md").read_text() == "buy milk\n"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git",  # a worktree's .git file
        ".GIT/config",
        ".Git/hooks/x",
        "sub/.git/config",
        ".git./config",  # NTFS drops trailing dots
        "GIT~1/config",  # the 8.3 short name
        ".g\u200cit/config",  # HFS+ drops zero-width characters
        "vendor/lib/HEAD",
        ".hg/hgrc",
        ".svn/entries",
        ".vscode/tasks.json",
        ".vscode/settings.json",
        "project.code-workspace",
        ".husky/pre-push",
        ".envrc",
        "sub/.envrc",
        ".github/workflows/ci.yml",
        ".pre-commit-config.yaml",
        ".gitmodules",
        ".nvim.lua",
    ],
)
def test_built_in_protected_paths(path: str) -> None:
    assert protection(path) is not None


@pytest.mark.parametrize(
    "path", ["src/main.py", ".gitignore", "githooks/x", "docs/git/config.md", ".vscode/x.md"]
)
def test_ordinary_paths_are_not_protected(path: str) -> None:
    assert protection(path) is None


def test_the_users_globs_are_added_and_matched_in_any_case() -> None:
    assert protection("Deploy/Prod.env", ["deploy/**"]) == (
        "it matches your protected path 'deploy/**'"
    )
    assert protection("src/deploy/x", ["deploy/**"]) is None  # anchored at the root
    assert protection(".git/config", ["deploy/**"]) is not None  # never replacing the built-in


def test_a_bare_repository_inside_the_workspace_is_gits(workspace: Path) -> None:
    bare = workspace / "vendor" / "lib"
    (bare / "objects").mkdir(parents=True)
    (bare / "refs").mkdir()
    assert in_git_directory(workspace, "vendor/lib/config") is None  # no HEAD yet
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    assert "vendor/lib/ is a git repository" in (
        in_git_directory(workspace, "vendor/lib/config") or ""
    )
    assert in_git_directory(workspace, "vendor/lib/hooks/post-checkout") is not None
    assert in_git_directory(workspace, "vendor/other.txt") is None
    for name in ("objects", "refs"):
        (workspace / name).mkdir()
    (workspace / "HEAD").write_text("ref: refs/heads/main\n")
    assert "./ is a git repository" in (in_git_directory(workspace, "config") or "")


def test_a_shown_path_has_no_control_characters() -> None:
    assert shown_path("a\x1b]52;c;Y3VybA==\x07\u2028b\u202e") == (
        "a\\x1b]52;c;Y3VybA==\\x07\\u2028b\\u202e"
    )


class AskingEditor(NoEditor):
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[tuple[str, str]] = []

    async def confirm(self, relative: str, reason: str, call_id: str | None = None) -> bool:
        self.asked.append((relative, reason))
        return self.answer


async def test_write_file_asks_for_a_protected_path(
    manager: SessionManager, workspace: Path
) -> None:
    deps = deps_for(manager, 4096)
    editor = deps.host = AskingEditor(False)
    with pytest.raises(ToolError, match="protected path .*core.fsmonitor"):
        await tools.write_file(deps, "./.git/config", "[core]\n")
    assert not (workspace / ".git").exists()
    editor.answer = True
    assert "written" in await tools.write_file(deps, "./.git/config", "[core]\n")
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert [r for r, _ in editor.asked] == [".git/config", ".git/config"]


async def test_an_executable_keeps_its_bits_only_with_a_yes(
    manager: SessionManager, workspace: Path
) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o6755)
    deps = deps_for(manager, 4096)
    result = await tools.write_file(deps, "run.sh", "#!/bin/sh\necho\n")
    assert "no longer executable" in result and stat.S_IMODE(script.stat().st_mode) == 0o644
    script.chmod(0o755)
    deps.host = AskingEditor(True)
    assert "executable" not in await tools.write_file(deps, "run.sh", "#!/bin/sh\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
