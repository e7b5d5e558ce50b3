"""The portable project identity: the origin remote with the root commit, else the path.

Nothing the repository configures runs: its own `.git/config` alone is parsed here (never an
`[include]`/`[includeIf]`, global or system file; `url.<base>.insteadOf` from it applies), and
the root commit comes from locked-down `git rev-list` and `git cat-file` runs with a timeout.
A remote URL is only text anyone can write into `.git/config`, so it never names a project
alone: the root commit proves it, and that commit's object is hashed here, so a loose object
planted under a known id proves nothing. Keys, with `::<posix path>` appended for a workspace
below its repository's top:
- `remote:<host>[:<port>]/<path>+commit:<sha>`: origin's first `url` (what `git fetch` uses)
  less scheme, user, password, query and default port; host lowercased, `%xx` decoded, empty
  segments and one `.git` dropped; the path's case kept but on hosts known to ignore it
  (`CASELESS_HOSTS`); then the root commit;
- `remote:<absolute real path>+commit:<sha>`: a local-path origin, relative to the worktree top
  (the git dir when bare); `repo` reads as `repo.git` when only that exists, as in `git clone`;
- `commit:<sha>`: no origin; the parentless commit reachable from HEAD, the smallest if
  several (never for a shallow clone);
- `path:<absolute resolved path>`: no repository, no commit or no git; with an origin remote
  but no root commit to prove it, `remote` holds `remote:<location>`, which the stores accept
  only for a folder that project recorded (`store/projects.py`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

IdentityKind = Literal["remote", "root-commit", "path"]
ConfigEntry = tuple[str, str | None, str, str | None]  # section, subsection, key, value

CASELESS_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org", "codeberg.org"})
GIT_TIMEOUT = 5.0
_MAX_FILE = 1 << 20
_DEFAULT_PORTS = {"ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418, "http": 80, "https": 443}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_HOSTPORT = re.compile(r"(\[[^\]]*\]|[^:]*)(?::([0-9]{0,5}))?")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_PROOF = re.compile(r"\+commit:(?:[0-9a-f]{64}|[0-9a-f]{40})(?=::|$)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KEYCHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}
_GIT_OVERRIDES = (
    *("-c", "core.fsmonitor=false", "-c", f"core.hooksPath={os.devnull}"),
    *("-c", "safe.directory=*", "-c", "core.pager=cat", "-c", "protocol.allow=never"),
)


@dataclass(frozen=True)
class ProjectIdentity:
    """What names a project: a stable key, how it was derived, a display name and a digest."""

    key: str
    kind: IdentityKind
    how: str
    name: str
    # `remote:<location>[::<inside>]`, the origin remote's part of the key (how projects were
    # named before the root commit was required): a claim, never a proof
    remote: str | None = None
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        digest = hashlib.sha256(self.key.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        object.__setattr__(self, "digest", digest)


@dataclass(frozen=True)
class NormalisedRemote:
    """A remote URL reduced to its location, with a credential-free text to show."""

    location: str
    display: str
    name: str


class GitConfigError(ValueError):
    """A config file git itself would refuse; the message names the line."""


class _UnusableError(Exception):
    """Why one rule cannot be used: its text goes into `how`; `remote`, an unproved claim."""

    def __init__(self, why: str, remote: str | None = None) -> None:
        super().__init__(why)
        self.remote = remote


@dataclass(frozen=True)
class _Repo:
    top: Path | None  # the worktree top; None for a bare repository
    git_dir: Path  # holds HEAD
    common_dir: Path  # holds config, objects and refs (differs from git_dir in a worktree)


def project_identity(root: Path, *, git_timeout: float = GIT_TIMEOUT) -> ProjectIdentity:
    """Return the project's identity: its origin remote, else its root commit, else its path."""
    try:
        root = root.resolve()
    except (OSError, RuntimeError):
        root = Path(os.path.abspath(root))
    try:
        return _repository_identity(root, git_timeout)
    except _UnusableError as exc:
        return _path_identity(root, [str(exc)], exc.remote)
    except (OSError, ValueError) as exc:  # too broken to read (permissions, NUL bytes): no raise
        return _path_identity(root, [f"the repository is unreadable: {_shown(str(exc))}"])


def _repository_identity(root: Path, git_timeout: float) -> ProjectIdentity:
    repo = _find_repo(root)
    inside = "" if repo.top in (None, root) else root.relative_to(repo.top).as_posix()
    suffix = f"::{inside}" if inside else ""
    where = f"; the workspace is {_shown(inside)} inside it" if inside else ""
    reasons: list[str] = []
    try:
        entries = _read_config(repo)
    except GitConfigError as exc:
        entries, reasons = [], [f"{_shown(str(repo.common_dir / 'config'))}: {exc}"]
    remote = _origin(entries, repo, reasons)
    claim = f"remote:{remote.location}{suffix}" if remote is not None else None
    try:
        sha = _root_commit(repo, git_timeout)
    except _UnusableError as exc:
        if remote is not None:  # the URL alone proves nothing: anyone can write it
            why = f"origin remote {_shown(remote.display)} not proved by a root commit: {exc}"
            raise _UnusableError("; ".join([*reasons, why]), claim) from None
        raise _UnusableError("; ".join([*reasons, str(exc)])) from None
    if remote is not None:
        name = root.name if inside else remote.name
        how = f"origin remote {_shown(remote.display)}, root commit {sha[:7]}{where}"
        key = f"remote:{remote.location}+commit:{sha}{suffix}"
        return ProjectIdentity(key, "remote", how, name, claim)
    name = root.name if inside else (repo.top or repo.git_dir).name.removesuffix(".git")
    how = f"root commit {sha[:7]} ({'; '.join(reasons)}){where}"
    return ProjectIdentity(f"commit:{sha}{suffix}", "root-commit", how, name or "project")


def claimed_remote(key: str) -> str | None:
    """Return the `remote:` claim of a stored key, less its root commit; None for another kind.

    `remote:<loc>+commit:<sha>[::<in>]` claims `remote:<loc>[::<in>]`; a key recorded before the
    root commit was required, `remote:<loc>[::<in>]`, is its own claim (and proves nothing).
    """
    if not key.startswith("remote:"):
        return None
    found = list(_PROOF.finditer(key))
    if not found:
        return key
    last = found[-1]  # a local path may hold the text too; the proof is the last one
    return key[: last.start()] + key[last.end() :]


def _path_identity(root: Path, reasons: list[str], remote: str | None = None) -> ProjectIdentity:
    how, name = f"absolute path ({'; '.join(reasons)})", root.name or str(root)
    return ProjectIdentity(f"path:{root}", "path", how, name, remote)


def _shown(text: str, limit: int = 200) -> str:
    """Return text safe to show on one line: control characters replaced, length capped."""
    text = _CONTROL.sub("?", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _origin(entries: list[ConfigEntry], repo: _Repo, reasons: list[str]) -> NormalisedRemote | None:
    """Return the normalised origin remote, or None with the reason appended to `reasons`."""
    # the first url is the one `git fetch` uses; later ones are extra push targets
    urls = [v for s, sub, k, v in entries if (s, sub, k) == ("remote", "origin", "url") and v]
    if not urls:
        reasons.append("no origin remote")
        return None
    url = _rewrite(urls[0], entries)
    remote = normalise_remote_url(url, repo.top or repo.git_dir)
    if remote is None:
        reasons.append("the origin remote URL is not understood")
    elif url != urls[0]:
        display = f"{remote.display} (by url.insteadOf)"
        remote = NormalisedRemote(remote.location, display, remote.name)
    return remote


def _rewrite(url: str, entries: list[ConfigEntry]) -> str:
    """Apply the longest matching `url.<base>.insteadOf` prefix, as git does."""
    rules = [(v, sub) for s, sub, k, v in entries if (s, k) == ("url", "insteadof") and sub and v]
    matches = [(prefix, base) for prefix, base in rules if url.startswith(prefix)]
    prefix, base = max(matches, key=lambda rule: len(rule[0]), default=("", ""))
    return base + url[len(prefix) :]


def normalise_remote_url(url: str, base: Path) -> NormalisedRemote | None:
    """Reduce a remote URL to the location naming its repository (None if it is not one)."""
    url = url.strip()
    transport, sep, address = url.partition("::")
    if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", transport):
        url = address
    scheme = _SCHEME.match(url)
    if scheme is not None:
        name, rest = scheme.group(1).lower(), url[scheme.end() :]
        if name == "file":
            return _local_remote(unquote(rest[rest.find("/") :]) if "/" in rest else "", base)
        authority, _, path = rest.partition("/")
        path = re.split(r"[?#]", path, maxsplit=1)[0]
        hostport = authority.rpartition("@")[2]  # user and password never go further
        split = _split_port(hostport, _DEFAULT_PORTS.get(name))
        if split is None or ("@" in path and "@" not in authority):
            return None  # a password holding `/` would otherwise reach the path
        return _network_remote(*split, unquote(path), f"{name}://{hostport}/{path}")
    colon, slash = url.find(":"), url.find("/")
    if colon > 0 and (slash < 0 or colon < slash) and not (os.name == "nt" and colon == 1):
        user, _, host = url[:colon].rpartition("@")
        host, path = host.lower().rstrip("."), url[colon + 1 :]
        understood = host and ("@" not in path or user)  # `user:password@host:path` is not
        return _network_remote(host, "", path, f"{host}:{path}") if understood else None
    return _local_remote(url, base)


def _split_port(hostport: str, default: int | None) -> tuple[str, str] | None:
    """Split `host[:port]` (or `[v6][:port]`); the port is "" when absent or the default."""
    match = _HOSTPORT.fullmatch(hostport)
    host = match.group(1).lower().rstrip(".") if match else ""
    if match is None or host in ("", "[]"):
        return None
    port = int(match.group(2)) if match.group(2) else default
    return host, "" if port == default else str(port)


def _network_remote(host: str, port: str, path: str, display: str) -> NormalisedRemote | None:
    path = "/".join(part for part in path.split("/") if part)
    path = path.removesuffix(".git").rstrip("/")
    if not path:
        return None
    name = path.rpartition("/")[2]
    if host in CASELESS_HOSTS:
        path = path.lower()
    location = f"{host}:{port}/{path}" if port else f"{host}/{path}"
    return NormalisedRemote(location, display, name)


def _local_remote(text: str, base: Path) -> NormalisedRemote | None:
    if not text or "\x00" in text:
        return None
    path = Path(os.path.realpath(base / text))  # `base / text` is `text` when it is absolute
    with_suffix = path.with_name(path.name + ".git")
    if not path.exists() and with_suffix.exists():
        path = with_suffix
    name = path.name.removesuffix(".git") or path.name
    return NormalisedRemote(path.as_posix(), f"{text} (a local path)", name)


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


def _find_repo(root: Path) -> _Repo:
    """Return the repository `root` is in (its own, a bare one, or a parent's), or why none."""
    for top in (root, *root.parents):
        dot_git = top / ".git"
        if os.path.lexists(dot_git):
            return _open_dot_git(top, dot_git)
        if top == root and _git_dir_problem(root, root) is None:
            return _Repo(None, root, root)
    raise _UnusableError("not a git repository")


def _open_dot_git(top: Path, dot_git: Path) -> _Repo:
    """Open `.git`: a directory, or a `gitdir: <path>` file (worktrees and submodules)."""
    git_dir = dot_git
    if not dot_git.is_dir():
        text = _read_small(dot_git)
        if text is None or not text.rstrip().startswith("gitdir: "):
            raise _UnusableError(f"{_shown(str(dot_git))} is neither a directory nor a gitdir file")
        git_dir = top / text.rstrip()[len("gitdir: ") :]
    common = git_dir
    text = _read_small(git_dir / "commondir")
    if text is not None and text.strip():
        common = git_dir / text.strip()
    problem = _git_dir_problem(git_dir, common)
    if problem is not None:
        raise _UnusableError(f"{_shown(str(dot_git))} leads to {_shown(str(git_dir))}, {problem}")
    return _Repo(top, Path(os.path.realpath(git_dir)), Path(os.path.realpath(common)))


def _git_dir_problem(git_dir: Path, common: Path) -> str | None:
    """Return why this is not a git directory (HEAD, objects/ and refs/ as git checks)."""
    if not (git_dir / "HEAD").is_file():
        return "which has no HEAD"
    complete = (common / "objects").is_dir() and (common / "refs").is_dir()
    return None if complete else "which has no objects or refs directory"


def _read_config(repo: _Repo) -> list[ConfigEntry]:
    """Parse the repository's own config (and `config.worktree` when enabled), nothing else."""
    path = repo.common_dir / "config"
    if not os.path.lexists(path):
        return []
    text = _read_small(path)
    if text is None:
        raise _UnusableError(f"{_shown(str(path))} is not a readable file")
    entries = parse_git_config(text)
    enabled = [v for s, _, k, v in entries if s == "extensions" and k == "worktreeconfig"]
    if enabled and (enabled[-1] is None or enabled[-1].lower() in ("true", "yes", "on", "1")):
        extra = _read_small(repo.git_dir / "config.worktree")
        entries += parse_git_config(extra) if extra else []
    return entries


def _root_commit(repo: _Repo, timeout: float) -> str:
    """Return the smallest root commit reachable from HEAD whose object hashes to its id."""
    if (repo.common_dir / "shallow").exists():
        raise _UnusableError("a shallow clone, whose first commit is not the repository's")
    git = shutil.which("git")
    if git is None:
        raise _UnusableError("git not found")
    with tempfile.TemporaryDirectory(prefix="agent-assist-git-") as home:
        listed = _run_git(git, repo, home, timeout, "rev-list", "--max-parents=0", "HEAD", "--")
        roots = sorted(s for s in listed.decode("ascii", "replace").split() if _SHA.fullmatch(s))
        if not roots:
            raise _UnusableError("git rev-list found no root commit")
        # git trusts an object's file name: the bytes must hash to the id, or it is planted
        body = _run_git(git, repo, home, timeout, "cat-file", "commit", roots[0])
    algorithm = hashlib.sha1 if len(roots[0]) == 40 else hashlib.sha256
    if algorithm(b"commit %d\0" % len(body) + body).hexdigest() != roots[0]:
        raise _UnusableError(f"the object of root commit {roots[0][:7]} does not hash to its id")
    return roots[0]


def _run_git(git: str, repo: _Repo, home: str, timeout: float, *args: str) -> bytes:
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
        raise _UnusableError(f"git {args[0]} took over {timeout:g}s") from exc
    except OSError as exc:
        raise _UnusableError(f"git could not start: {exc.strerror}") from exc
    error = done.stderr.decode("utf-8", "replace").strip().partition("\n")[0]
    if done.returncode != 0 and "bad revision 'HEAD'" in error:
        raise _UnusableError("HEAD names no commit yet")
    if done.returncode != 0:
        raise _UnusableError(f"git {args[0]} failed: {_shown(error)}")
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
                    raise self._fail(f"bad escape \\{_shown(ch)}")
                if ch != "\n":  # else a continuation line
                    out.append(_ESCAPES[ch])
            elif ch == '"':
                quoted = not quoted
            else:
                out.append(ch)
        if quoted:
            raise self._fail("unterminated quote")
        return "".join(out)
