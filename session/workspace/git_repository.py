"""A git repository read with nothing it configures run: found, its own config, its root commit.

Its own `.git/config` alone is parsed here (never an `[include]`/`[includeIf]`, global or
system file), and the root commit comes from locked-down `git rev-list` and `git cat-file`
runs with a timeout. git trusts an object's file name, so that commit's object is hashed
here: a loose object planted under a known id proves nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ConfigEntry = tuple[str, str | None, str, str | None]  # section, subsection, key, value

GIT_TIMEOUT = 5.0
_MAX_FILE = 1 << 20
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KEYCHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
_GIT_OVERRIDES = (
    *("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}"),
    *("-c", "safe.directory=*", "-c", "core.pager=cat", "-c", "protocol.allow=never"),
)


class GitConfigError(ValueError):
    """A config file git itself would refuse; the message names the line."""


class UnusableRepositoryError(Exception):
    """Why a rule cannot name the project: the text goes into `how`; `remote`, an unproved claim."""

    def __init__(self, why: str, remote: str | None = None) -> None:
        super().__init__(why)
        self.remote = remote


@dataclass(frozen=True)
class GitRepository:
    """Where a repository's parts are, its symlinks resolved."""

    top: Path | None  # the worktree top; None for a bare repository
    git_dir: Path  # holds HEAD
    common_dir: Path  # holds config, objects and refs (differs from git_dir in a worktree)


def shown_line(text: str, limit: int = 200) -> str:
    """Return text safe to show on one line: control characters replaced, length capped."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_small(path: Path, limit: int = _MAX_FILE) -> str | None:
    """Return a regular file's text; None if it is missing, not a regular file or too large."""
    try:  # non-blocking: a FIFO planted as `.git/config` must not hang the server
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        data = handle.read(limit + 1)
    return None if len(data) > limit else data.decode("utf-8", "surrogateescape")


def find_repository(root: Path) -> GitRepository:
    """Return the repository `root` is in (its own, a bare one, or a parent's), or why none."""
    for top in (root, *root.parents):
        dot_git = top / ".git"
        if os.path.lexists(dot_git):
            return _open_dot_git(top, dot_git)
        if top == root and _git_dir_problem(root, root) is None:
            return GitRepository(None, root, root)
    raise UnusableRepositoryError("not a git repository")


def _open_dot_git(top: Path, dot_git: Path) -> GitRepository:
    """Open `.git`: a directory, or a `gitdir: <path>` file (worktrees and submodules)."""
    git_dir = dot_git
    if not dot_git.is_dir():
        text = _read_small(dot_git)
        if text is None or not text.rstrip().startswith("gitdir: "):
            raise UnusableRepositoryError(
                f"{shown_line(str(dot_git))} is neither a directory nor a gitdir file"
            )
        git_dir = top / text.rstrip()[len("gitdir: ") :]
    common = git_dir
    text = _read_small(git_dir / "commondir")
    if text is not None and text.strip():
        common = git_dir / text.strip()
    problem = _git_dir_problem(git_dir, common)
    if problem is not None:
        raise UnusableRepositoryError(
            f"{shown_line(str(dot_git))} leads to {shown_line(str(git_dir))}, {problem}"
        )
    return GitRepository(top, Path(os.path.realpath(git_dir)), Path(os.path.realpath(common)))


def _git_dir_problem(git_dir: Path, common: Path) -> str | None:
    """Return why this is not a git directory (HEAD, objects/ and refs/ as git checks)."""
    if not (git_dir / "HEAD").is_file():
        return "which has no HEAD"
    complete = (common / "objects").is_dir() and (common / "refs").is_dir()
    return None if complete else "which has no objects or refs directory"


def read_own_config(repo: GitRepository) -> list[ConfigEntry]:
    """Parse the repository's own config (and `config.worktree` when enabled), nothing else."""
    path = repo.common_dir / "config"
    if not os.path.lexists(path):
        return []
    text = _read_small(path)
    if text is None:
        raise UnusableRepositoryError(f"{shown_line(str(path))} is not a readable file")
    entries = parse_git_config(text)
    enabled = [v for s, _, k, v in entries if s == "extensions" and k == "worktreeconfig"]
    if enabled and (enabled[-1] is None or enabled[-1].lower() in ("true", "yes", "on", "1")):
        extra = _read_small(repo.git_dir / "config.worktree")
        entries += parse_git_config(extra) if extra else []
    return entries


def proved_root_commit(repo: GitRepository, timeout: float) -> str:
    """Return the smallest root commit reachable from HEAD whose object hashes to its id."""
    if (repo.common_dir / "shallow").exists():
        raise UnusableRepositoryError("a shallow clone, whose first commit is not the repository's")
    git = shutil.which("git")
    if git is None:
        raise UnusableRepositoryError("git not found")
    with tempfile.TemporaryDirectory(prefix="agent-assist-git-") as home:
        listed = _run_git(git, repo, home, timeout, "rev-list", "--max-parents=0", "HEAD", "--")
        roots = sorted(s for s in listed.decode("ascii", "replace").split() if _SHA.fullmatch(s))
        if not roots:
            raise UnusableRepositoryError("git rev-list found no root commit")
        # git trusts an object's file name: the bytes must hash to the id, or it is planted
        body = _run_git(git, repo, home, timeout, "cat-file", "commit", roots[0])
    algorithm = hashlib.sha1 if len(roots[0]) == 40 else hashlib.sha256
    if algorithm(b"commit %d\0" % len(body) + body).hexdigest() != roots[0]:
        raise UnusableRepositoryError(
            f"the object of root commit {roots[0][:7]} does not hash to its id"
        )
    return roots[0]


def _run_git(git: str, repo: GitRepository, home: str, timeout: float, *args: str) -> bytes:
    """Run one git command on the repository, locked down; return its output or raise why not."""
    command = [git, "--no-pager", f"--git-dir={repo.git_dir}", *_GIT_OVERRIDES, *args]
    env = {k: os.environ[k] for k in ("PATH", "SYSTEMROOT") if k in os.environ}
    env.update(HOME=home, XDG_CONFIG_HOME=home, LC_ALL="C", PAGER="cat", GIT_PAGER="cat")
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0")
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_NO_LAZY_FETCH="1", GIT_NO_REPLACE_OBJECTS="1")
    try:  # a fixed argv, no shell, a scrubbed env; stdin is never the server's
        done = subprocess.run(  # noqa: S603
            command, env=env, cwd=home, input=b"", capture_output=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        raise UnusableRepositoryError(f"git {args[0]} took over {timeout:g}s") from exc
    except OSError as exc:
        raise UnusableRepositoryError(f"git could not start: {exc.strerror}") from exc
    error = done.stderr.decode("utf-8", "replace").strip().partition("\n")[0]
    if done.returncode != 0 and "bad revision 'HEAD'" in error:
        raise UnusableRepositoryError("HEAD names no commit yet")
    if done.returncode != 0:
        raise UnusableRepositoryError(f"git {args[0]} failed: {shown_line(error)}")
    return done.stdout


def parse_git_config(text: str) -> list[ConfigEntry]:
    """Parse git's config format into entries in file order; includes are never followed.

    Names are lowercased, as is a legacy `[section.sub]` subsection (`[section "Sub"]` keeps
    its case); a valueless key has value None; `GitConfigError` where git would refuse the file.
    """
    return _ConfigParser(text).parse()


class _ConfigParser:
    """git's `config.c` parser, a character at a time; the end of the text reads as a newline."""

    def __init__(self, text: str) -> None:
        self.text = text.replace("\r\n", "\n")
        self.pos = 1 if self.text.startswith("\ufeff") else 0

    def _next(self) -> str:
        self.pos += 1
        return self.text[self.pos - 1] if self.pos <= len(self.text) else "\n"

    def _fail(self, why: str) -> GitConfigError:
        line = self.text.count("\n", 0, max(0, min(self.pos, len(self.text)) - 1)) + 1
        return GitConfigError(f"bad config line {line}: {why}")

    def parse(self) -> list[ConfigEntry]:
        entries: list[ConfigEntry] = []
        section: tuple[str, str | None] = ("", None)  # git takes keys before any section
        while self.pos < len(self.text):
            ch = self._next()
            if ch in "#;":
                while self._next() != "\n":
                    pass
            elif ch == "[":
                section = self._header()
            elif ch not in " \t\r\n":
                if not (ch.isascii() and ch.isalpha()):
                    raise self._fail("expected a section header or a key")
                name, ch = ch, self._next()
                while ch in _KEYCHARS:
                    name, ch = name + ch, self._next()
                while ch in " \t":
                    ch = self._next()
                if ch not in "=\n":
                    raise self._fail("expected `=` after the key")
                value = self._value() if ch == "=" else None
                entries.append((section[0], section[1], name.lower(), value))
        return entries

    def _header(self) -> tuple[str, str | None]:
        name, ch = "", self._next()
        while ch in _KEYCHARS or ch == ".":
            name, ch = name + ch.lower(), self._next()
        if ch == "]":
            section, dot, subsection = name.partition(".")  # legacy `[section.sub]`
            return section, subsection if dot else None
        while ch in " \t":
            ch = self._next()
        if ch != '"':
            raise self._fail("bad section header")
        chars: list[str] = []
        while (ch := self._next()) != '"':
            ch = self._next() if ch == "\\" else ch
            if ch == "\n":
                raise self._fail("unterminated subsection")
            chars.append(ch)
        if self._next() != "]":
            raise self._fail("expected `]` after the subsection")
        return name, "".join(chars)

    def _value(self) -> str:
        out: list[str] = []
        quoted = comment = False
        spaces = 0
        while (ch := self._next()) != "\n":
            if comment:
                continue
            if ch in " \t\r" and not quoted:
                spaces += 1 if out else 0  # inner whitespace is kept, trailing is dropped
                continue
            if ch in "#;" and not quoted:
                comment = True
                continue
            if spaces:
                out.append(" " * spaces)
                spaces = 0
            if ch == "\\":
                ch = self._next()
                if ch != "\n" and ch not in _ESCAPES:
                    raise self._fail(f"bad escape \\{shown_line(ch)}")
                if ch != "\n":  # else a continuation line
                    out.append(_ESCAPES[ch])
            elif ch == '"':
                quoted = not quoted
            else:
                out.append(ch)
        if quoted:
            raise self._fail("unterminated quote")
        return "".join(out)
