"""The portable project identity: the origin remote with the root commit, else the path.

Nothing the repository configures runs: its own `.git/config` alone is read and its root
commit proved by `git_repository` (`url.<base>.insteadOf` from that config applies). A remote
URL is only text anyone can write into `.git/config`, so it never names a project alone: the
root commit proves it. Keys, with `::<posix path>` appended for a workspace below its
repository's top:
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
  only for a folder that project recorded (`local/projects.py`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import unquote

from .git_repository import (
    GIT_TIMEOUT,
    ConfigEntry,
    GitConfigError,
    GitRepository,
    UnusableRepositoryError,
    find_repository,
    proved_root_commit,
    read_own_config,
    shown_line,
)

IdentityKind = Literal["remote", "root-commit", "path"]

CASELESS_HOSTS = frozenset({"github.com", "gitlab.com", "bitbucket.org", "codeberg.org"})
_DEFAULT_PORTS = {"ssh": 22, "git+ssh": 22, "ssh+git": 22, "git": 9418, "http": 80, "https": 443}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_HOSTPORT = re.compile(r"(\[[^\]]*\]|[^:]*)(?::([0-9]{0,5}))?")
_PROOF = re.compile(r"\+commit:(?:[0-9a-f]{64}|[0-9a-f]{40})(?=::|$)")


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


def project_identity(root: Path, *, git_timeout: float = GIT_TIMEOUT) -> ProjectIdentity:
    """Return the project's identity: its origin remote, else its root commit, else its path."""
    try:
        root = root.resolve()
    except (OSError, RuntimeError):
        root = Path(os.path.abspath(root))
    try:
        return _repository_identity(root, git_timeout)
    except UnusableRepositoryError as exc:
        return _path_identity(root, [str(exc)], exc.remote)
    except (OSError, ValueError) as exc:  # too broken to read (permissions, NUL bytes): no raise
        return _path_identity(root, [f"the repository is unreadable: {shown_line(str(exc))}"])


def _repository_identity(root: Path, git_timeout: float) -> ProjectIdentity:
    repo = find_repository(root)
    inside = "" if repo.top in (None, root) else root.relative_to(repo.top).as_posix()
    suffix = f"::{inside}" if inside else ""
    where = f"; the workspace is {shown_line(inside)} inside it" if inside else ""
    reasons: list[str] = []
    try:
        entries = read_own_config(repo)
    except GitConfigError as exc:
        entries, reasons = [], [f"{shown_line(str(repo.common_dir / 'config'))}: {exc}"]
    remote = _origin(entries, repo, reasons)
    claim = f"remote:{remote.location}{suffix}" if remote is not None else None
    try:
        sha = proved_root_commit(repo, git_timeout)
    except UnusableRepositoryError as exc:
        if remote is not None:  # the URL alone proves nothing: anyone can write it
            why = f"origin remote {shown_line(remote.display)} not proved by a root commit: {exc}"
            raise UnusableRepositoryError("; ".join([*reasons, why]), claim) from None
        raise UnusableRepositoryError("; ".join([*reasons, str(exc)])) from None
    if remote is not None:
        name = root.name if inside else remote.name
        how = f"origin remote {shown_line(remote.display)}, root commit {sha[:7]}{where}"
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


def _origin(
    entries: list[ConfigEntry], repo: GitRepository, reasons: list[str]
) -> NormalisedRemote | None:
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
