"""Protected paths: files that make a tool run code, written by the model only with a yes.

`protection(relative, extra_globs)` says why a workspace path is protected (None if it is
not): the built-in globs below, matched at any depth, and the user's `tools.protectedPaths`
(anchored at the root). Both are matched case-insensitively after the names a case- or
normalisation-folding file system treats as the same (macOS, Windows) are folded, so
`.GIT/config`, `.git./config` and `GIT~1/config` are git's too.
"""

from __future__ import annotations

import functools
import re
import stat
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from .patterns import glob_to_regex

_GIT = "git runs commands named in its config and hooks (core.fsmonitor, core.pager, hooks/*)"
# (glob matched at any depth, why it is sensitive); folded to lower case.
BUILT_IN: tuple[tuple[str, str], ...] = (
    (".git", "a .git file tells git which directory holds the repository and its config"),
    (".git/**", _GIT),
    ("head", "a HEAD file beside objects/ and refs/ makes its directory a git repository"),
    (".gitmodules", "git fetches submodules from the URLs named here"),
    (".gitattributes", "git runs the filter and diff drivers named here"),
    (".hg/**", "Mercurial runs the hooks named in .hg/hgrc"),
    (".svn/**", "Subversion keeps the working copy's state and properties here"),
    (".bzr/**", "Bazaar keeps the branch's configuration and hooks here"),
    (".husky/**", "husky's scripts run as git hooks at each commit and push"),
    (".pre-commit-config.yaml", "pre-commit runs the hooks named here at each commit"),
    (".envrc", "direnv runs this file when a shell enters the directory"),
    (".vscode/tasks.json", "VS Code runs these tasks, some as soon as the folder opens"),
    (".vscode/settings.json", "VS Code settings name programs it runs (terminal, tools, git)"),
    (".vscode/launch.json", "VS Code starts the programs named here when debugging"),
    ("*.code-workspace", "a VS Code workspace file holds settings and tasks, as .vscode/ does"),
    (".idea/**", "JetBrains IDEs run the run configurations and tools defined here"),
    (".nvim.lua", "Neovim runs this file on start when 'exrc' is set"),
    (".nvimrc", "Neovim runs this file on start when 'exrc' is set"),
    (".exrc", "Vim and Neovim run this file on start when 'exrc' is set"),
    (".github/workflows/**", "GitHub Actions runs these workflows with the repository's secrets"),
    (".gitlab-ci.yml", "GitLab CI runs the jobs defined here with the project's secrets"),
)
# Characters a file system ignores or a terminal hides: HFS+ drops zero-width characters
# from names (git's own `is_hfs_dotgit` check), NTFS drops trailing dots and spaces.
_IGNORED = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u206a-\u206f\ufeff]")
_SHORT_GIT = re.compile(r"git~\d+")  # the 8.3 short name Windows gives `.git`


def fold(relative: str) -> str:
    """Return the name a case-insensitive, normalising file system gives `relative`."""
    parts = []
    for part in unicodedata.normalize("NFC", _IGNORED.sub("", relative)).casefold().split("/"):
        part = part.rstrip(". ") or part
        parts.append(".git" if _SHORT_GIT.fullmatch(part) else part)
    return "/".join(parts)


@functools.lru_cache(maxsize=16)
def _compiled(extra_globs: tuple[str, ...]) -> tuple[tuple[re.Pattern[str], str], ...]:
    rules = [(re.compile(f"(?:[^/]+/)*{glob_to_regex(g).pattern}"), why) for g, why in BUILT_IN]
    for glob in extra_globs:
        regex = re.compile(glob_to_regex(glob.strip()).pattern, re.IGNORECASE)
        rules.append((regex, f"it matches your protected path {glob.strip()!r}"))
    return tuple(rules)


def protection(relative: str, extra_globs: Sequence[str] = ()) -> str | None:
    """Return why the model may not write `relative` without asking, or None."""
    clean = "/".join(p for p in relative.strip().split("/") if p not in ("", "."))
    folded = fold(clean)
    for regex, why in _compiled(tuple(extra_globs)):
        if regex.fullmatch(folded) or regex.fullmatch(clean):
            return why
    return None


def in_git_directory(root: Path, relative: str) -> str | None:
    """Return why a path inside a bare git repository (HEAD, objects/, refs/) is git's."""
    parts = relative.split("/")[:-1]
    for depth in range(len(parts), -1, -1):  # the workspace root last
        directory = root.joinpath(*parts[:depth])
        try:
            head = (directory / "HEAD").lstat()
            objects, refs = (directory / "objects").lstat(), (directory / "refs").lstat()
        except OSError:
            continue
        if (
            stat.S_ISREG(head.st_mode)
            and stat.S_ISDIR(objects.st_mode)
            and stat.S_ISDIR(refs.st_mode)
        ):
            shown = shown_path("/".join(parts[:depth])) or "."
            return f"{shown}/ is a git repository (HEAD, objects/, refs/): {_GIT}"
    return None


def shown_path(relative: str, limit: int = 300) -> str:
    """Return a path to show the user: control and invisible characters escaped, cut at limit."""
    out = []
    for char in relative:
        if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cn"):
            code = ord(char)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(char)
    text = "".join(out)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"
