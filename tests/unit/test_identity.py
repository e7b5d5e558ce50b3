"""The portable project identity, over real git repositories made in temporary directories."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pty
import stat
import subprocess
import zlib
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from session.local.manager import SessionManager
from session.workspace.git_repository import GitConfigError, parse_git_config
from session.workspace.identity import (
    ProjectIdentity,
    claimed_remote,
    normalise_remote_url,
    project_identity,
)

EXAMPLE_KEY = "remote:git.example.com/org/repo"


@pytest.fixture(autouse=True)
def quiet_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own git calls see no user or system config and no inherited repository."""
    home = tmp_path / "git-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for name in list(os.environ):
        if name.startswith("GIT_") and name not in ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"):
            monkeypatch.delenv(name)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=check,
    )
    return done.stdout.strip()


def new_repo(path: Path, commits: int = 1) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for number in range(commits):
        git(path, "commit", "-q", "--allow-empty", "-m", f"{path.name}: commit {number}")
    return path


def root_of(repo: Path) -> str:
    return git(repo, "rev-list", "--max-parents=0", "HEAD")


def with_origin(path: Path, url: str, commits: int = 1) -> Path:
    repo = new_repo(path, commits)
    git(repo, "remote", "add", "origin", url)
    return repo


# --- remote URLs -------------------------------------------------------------------------------

ONE_REPOSITORY = [
    "git@git.example.com:org/repo.git",
    "git.example.com:org/repo",
    "https://git.example.com/org/repo",
    "https://user@git.example.com/org/repo.git",
    "https://x-access-token:SECRET@git.example.com/org/repo",
    "ssh://git@git.example.com/org/repo.git",
    "ssh://git@git.example.com:22/org/repo",
    "git+ssh://git@git.example.com/org/repo",
    "git://git.example.com/org/repo",
    "git://git.example.com:9418/org/repo/",
    "http://git.example.com:80/org/repo",
    "https://GIT.Example.COM./org/repo/",
    "https://git.example.com:443/org/repo.git/",
    "https://git.example.com//org//repo.git",
    "https://git.example.com/org/repo/.git",
    "https://git.example.com/org/repo?private_token=SECRET#SECRET",
    "https://git.example.com/org/%72epo",
    "  https://git.example.com/org/repo\t",
]


@pytest.mark.parametrize("url", ONE_REPOSITORY)
def test_every_form_of_one_remote_is_one_key(tmp_path: Path, url: str) -> None:
    repo = with_origin(tmp_path / "work", url)
    identity = project_identity(repo)
    assert identity.key == f"{EXAMPLE_KEY}+commit:{root_of(repo)}"
    assert identity.remote == EXAMPLE_KEY
    assert identity.kind == "remote"
    assert identity.name == "repo"
    assert identity.how.startswith("origin remote ")
    assert "SECRET" not in repr(identity)
    assert "user" not in identity.how and "x-access-token" not in identity.how


def test_the_how_names_the_remote_as_written_without_its_user(tmp_path: Path) -> None:
    ssh = project_identity(with_origin(tmp_path / "a", "git@github.com:org/repo.git"))
    https = project_identity(with_origin(tmp_path / "b", "https://bob@github.com/org/repo"))
    assert ssh.how.startswith("origin remote github.com:org/repo.git, root commit ")
    assert https.how.startswith("origin remote https://github.com/org/repo, root commit ")


def test_the_path_keeps_its_case_except_on_hosts_that_ignore_it(tmp_path: Path) -> None:
    upper = project_identity(with_origin(tmp_path / "a", "https://github.com/Org/Repo"))
    lower = project_identity(with_origin(tmp_path / "b", "git@github.com:org/repo.git"))
    assert upper.remote == lower.remote == "remote:github.com/org/repo"
    assert upper.name == "Repo"
    elsewhere = project_identity(with_origin(tmp_path / "c", "https://git.example.com/Org/Repo"))
    assert elsewhere.remote == "remote:git.example.com/Org/Repo"


def test_a_port_other_than_the_default_is_part_of_the_key(tmp_path: Path) -> None:
    identity = project_identity(
        with_origin(tmp_path / "a", "ssh://git@git.example.com:2222/org/repo")
    )
    assert identity.remote == "remote:git.example.com:2222/org/repo"


LEAKY = [
    "https://x-access-token:s3cr3t@github.com/org/repo",
    "https://s3cr3t@github.com/org/repo.git",
    "https://user:s3cr3t@github.com:8443/org/repo",
    "ssh://user:s3cr3t@github.com/org/repo",
    "https://user:s3cr3t/t0ken@github.com/org/repo",
    "https://user:1234/t0ken@github.com/org/repo",
    "https://user:s3cr3t:9/t0ken@github.com/org/repo",
    "user:s3cr3t@github.com:org/repo.git",
    "https://github.com/org/repo?access_token=s3cr3t",
    "https://github.com/org/repo#s3cr3t",
    "https://user:s3cr3t@/org/repo",
]


@pytest.mark.parametrize("url", LEAKY)
def test_credentials_never_reach_the_key_or_the_how(tmp_path: Path, url: str) -> None:
    repo = with_origin(tmp_path / "work", url, commits=1)
    identity = project_identity(repo)
    assert "s3cr3t" not in repr(identity) and "t0ken" not in repr(identity)
    assert identity.kind in ("remote", "root-commit")  # not understood: the next rule
    if identity.kind == "root-commit":
        assert "the origin remote URL is not understood" in identity.how


def test_the_first_origin_url_is_the_one_fetched(tmp_path: Path) -> None:
    repo = with_origin(tmp_path / "work", "https://git.example.com/org/repo")
    git(repo, "remote", "set-url", "--add", "origin", "https://mirror.example.com/org/repo")
    git(repo, "config", "--add", "remote.origin.url", "")
    assert git(repo, "remote", "get-url", "origin") == "https://git.example.com/org/repo"
    assert project_identity(repo).remote == EXAMPLE_KEY


def test_only_the_origin_remote_names_the_project(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "work")
    git(repo, "remote", "add", "upstream", "https://git.example.com/org/repo")
    git(repo, "config", "remote.Origin.url", "https://git.example.com/org/repo")
    assert project_identity(repo).kind == "root-commit"
    git(repo, "config", "remote.origin.url", "https://git.example.com/org/repo")
    assert project_identity(repo).key == f"{EXAMPLE_KEY}+commit:{root_of(repo)}"


def test_an_insteadof_rewrite_from_the_repository_config_applies(tmp_path: Path) -> None:
    repo = with_origin(tmp_path / "work", "ex:org/repo")
    git(repo, "config", "url.https://oauth2:s3cr3t@git.example.com/.insteadOf", "ex:")
    git(repo, "config", "url.https://wrong.example.com/.insteadOf", "e")
    identity = project_identity(repo)
    assert identity.remote == EXAMPLE_KEY
    assert "insteadOf" in identity.how and "s3cr3t" not in identity.how


def test_a_local_path_remote_is_its_absolute_real_path(tmp_path: Path) -> None:
    bare = tmp_path / "srv" / "origin.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare", "-b", "main")
    (tmp_path / "link").symlink_to(tmp_path / "srv")
    repo = with_origin(tmp_path / "work" / "repo", str(bare))
    forms = [
        str(bare),
        str(bare) + "/",
        f"file://{bare}",
        f"file://{quote(str(bare))}",
        "../../srv/origin.git",  # relative to the worktree top
        str(tmp_path / "srv" / "origin"),  # `git clone` reads it as origin.git
        str(tmp_path / "link" / "origin.git"),
    ]
    for url in forms:
        git(repo, "remote", "set-url", "origin", url)
        identity = project_identity(repo)
        assert identity.remote == f"remote:{bare.resolve().as_posix()}", url
        assert identity.name == "origin"
        assert "(a local path), root commit" in identity.how


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    org=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,15}", fullmatch=True),
    repo=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,15}", fullmatch=True),
    secret=st.from_regex(r"[A-Za-z0-9_~-]{12,30}", fullmatch=True),
)
def test_url_forms_agree_and_hide_secrets(tmp_path: Path, org: str, repo: str, secret: str) -> None:
    assume(secret not in f"{org}/{repo}")
    forms = [
        f"git@git.example.net:{org}/{repo}.git",
        f"https://{secret}@git.example.net/{org}/{repo}",
        f"https://x:{secret}@git.example.net:443/{org}/{repo}.git/",
        f"ssh://git@git.example.net:22/{org}/{repo}",
        f"git://git.example.net/{org}/{repo}?t={secret}",
    ]
    results = [normalise_remote_url(url, tmp_path) for url in forms]
    assert {r.location if r else None for r in results} == {f"git.example.net/{org}/{repo}"}
    assert all(r and secret not in r.display and r.name == repo for r in results)


# --- root commit and path --------------------------------------------------------------------


def test_two_clones_of_one_bare_origin_are_one_project(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "source", commits=2)
    bare = tmp_path / "hub" / "proj.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(bare))
    first, second = tmp_path / "machine-a" / "proj", tmp_path / "elsewhere" / "renamed"
    git(tmp_path, "clone", "-q", str(bare), str(first))
    git(tmp_path, "clone", "-q", str(bare), str(second))
    a, b = project_identity(first), project_identity(second)
    assert a.key == b.key == f"remote:{bare.resolve().as_posix()}+commit:{root_of(source)}"
    assert a.digest == b.digest and a.kind == "remote" and a.name == "proj"

    git(first, "remote", "remove", "origin")
    git(second, "remote", "remove", "origin")
    a, b, original = (project_identity(p) for p in (first, second, source))
    sha = root_of(source)
    assert a.key == b.key == original.key == f"commit:{sha}"
    assert a.kind == "root-commit"
    assert a.how == f"root commit {sha[:7]} (no origin remote)"
    assert a.name == "proj" and b.name == "renamed"


def test_several_roots_give_the_smallest(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    other = new_repo(tmp_path / "other")
    git(repo, "fetch", "-q", str(other), "main:other")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "-m", "join", "other")
    roots = sorted(root_of(repo).split())
    assert len(roots) == 2
    assert project_identity(repo).key == f"commit:{roots[0]}"


def test_a_detached_head_keeps_the_root_commit(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", commits=2)
    attached = project_identity(repo)
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert project_identity(repo) == attached
    assert attached.key == f"commit:{root_of(repo)}"


def test_no_commit_yet_is_the_path(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "fresh", commits=0)
    identity = project_identity(repo)
    assert identity.key == f"path:{repo.resolve()}"
    assert identity.kind == "path" and identity.name == "fresh"
    assert "no origin remote" in identity.how and "no commit yet" in identity.how
    git(repo, "remote", "add", "origin", "https://git.example.com/org/repo")
    claimed = project_identity(repo)  # nothing is cached; a remote alone proves nothing
    assert (claimed.key, claimed.kind, claimed.remote) == (identity.key, "path", EXAMPLE_KEY)
    assert "not proved by a root commit: HEAD names no commit yet" in claimed.how


def test_not_a_repository_is_the_path_as_today(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    identity = project_identity(folder)
    assert identity == ProjectIdentity(
        f"path:{folder.resolve()}", "path", "absolute path (not a git repository)", "plain"
    )
    assert identity.digest == hashlib.sha256(identity.key.encode()).hexdigest()[:8]
    with pytest.raises(dataclasses.FrozenInstanceError):
        identity.key = "other"  # type: ignore[misc]


def test_a_folder_inside_a_repository_is_named_by_its_place_in_it(tmp_path: Path) -> None:
    repo = with_origin(tmp_path / "mono", "https://git.example.com/org/repo", commits=1)
    (repo / "pkg" / "api").mkdir(parents=True)
    identity = project_identity(repo / "pkg" / "api")
    assert identity.key == f"{EXAMPLE_KEY}+commit:{root_of(repo)}::pkg/api"
    assert identity.remote == f"{EXAMPLE_KEY}::pkg/api"
    assert identity.name == "api" and "pkg/api" in identity.how
    git(repo, "remote", "remove", "origin")
    assert project_identity(repo / "pkg" / "api").key == f"commit:{root_of(repo)}::pkg/api"


def test_a_shallow_clone_without_origin_is_the_path(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "source", commits=3)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{source}", str(shallow))
    identity = project_identity(shallow)  # its root commit is not the repository's
    assert identity.kind == "path" and identity.remote == f"remote:{source.resolve().as_posix()}"
    git(shallow, "remote", "remove", "origin")
    identity = project_identity(shallow)
    assert identity.kind == "path" and "shallow" in identity.how


def test_without_git_neither_a_remote_nor_a_root_commit_names_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote = with_origin(tmp_path / "a", "https://git.example.com/org/repo", commits=1)
    local = new_repo(tmp_path / "b")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    claimed = project_identity(remote)  # nothing proves the remote: a claim only
    assert claimed.kind == "path" and claimed.remote == EXAMPLE_KEY
    assert "not proved by a root commit: git not found" in claimed.how
    identity = project_identity(local)
    assert identity.kind == "path" and "git not found" in identity.how


def test_a_slow_git_falls_back_to_the_path(tmp_path: Path) -> None:
    identity = project_identity(new_repo(tmp_path / "repo"), git_timeout=1e-6)
    assert identity.kind == "path" and "took over" in identity.how


def test_at_most_two_locked_down_git_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[list[str], dict[str, object]]] = []
    real_run = subprocess.run

    def recording_run(command: list[str], **kwargs: object) -> object:
        calls.append((command, kwargs))
        return real_run(command, **kwargs)  # type: ignore[call-overload]

    remote = with_origin(tmp_path / "a", "https://git.example.com/org/repo", commits=1)
    local = new_repo(tmp_path / "b")
    fresh = new_repo(tmp_path / "c", commits=0)
    expected, proved = f"commit:{root_of(local)}", f"{EXAMPLE_KEY}+commit:{root_of(remote)}"
    local_root = root_of(local)
    monkeypatch.setattr(subprocess, "run", recording_run)
    monkeypatch.setenv("GIT_DIR", str(remote / ".git"))  # inherited git settings never reach git
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='/tmp/evil'")
    assert project_identity(remote).key == proved
    assert len(calls) == 2  # the root commit found, then its object read to check its id
    assert project_identity(local).key == expected
    assert len(calls) == 4
    assert project_identity(fresh).kind == "path"
    assert len(calls) == 5
    (listing, options), (reading, _) = calls[2:4]
    for command in (listing, reading):
        assert command[1:3] == ["--no-pager", f"--git-dir={(local / '.git').resolve()}"]
        assert "core.fsmonitor=false" in command and f"core.hooksPath={os.devnull}" in command
    assert listing[-4:] == ["rev-list", "--max-parents=0", "HEAD", "--"]
    assert reading[-3:] == ["cat-file", "commit", local_root]
    env = options["env"]
    assert isinstance(env, dict) and not {"GIT_DIR", "GIT_CONFIG_PARAMETERS"} & set(env)
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["HOME"] == options["cwd"] and not options.get("shell")
    assert not Path(env["HOME"]).exists()  # an empty home of its own, removed afterwards


# --- worktrees, submodules, bare repositories --------------------------------------------------


def test_a_worktree_is_its_main_repository(tmp_path: Path) -> None:
    main = with_origin(tmp_path / "main", "https://git.example.com/org/repo.git", commits=1)
    worktree = tmp_path / "elsewhere" / "wt"
    git(main, "worktree", "add", "-q", "-b", "feature", str(worktree))
    assert (worktree / ".git").is_file()
    proved = f"{EXAMPLE_KEY}+commit:{root_of(main)}"
    assert project_identity(worktree).key == project_identity(main).key == proved
    git(main, "remote", "remove", "origin")
    assert project_identity(worktree).key == project_identity(main).key == f"commit:{root_of(main)}"


def test_a_worktree_config_is_read_when_enabled(tmp_path: Path) -> None:
    main = new_repo(tmp_path / "main")
    worktree = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "--detach", str(worktree))
    git(main, "config", "extensions.worktreeConfig", "true")
    git(worktree, "config", "--worktree", "remote.origin.url", "https://git.example.com/org/repo")
    assert project_identity(worktree).key == f"{EXAMPLE_KEY}+commit:{root_of(main)}"
    assert project_identity(main).kind == "root-commit"


def test_a_submodule_is_its_own_project(tmp_path: Path) -> None:
    library = tmp_path / "hub" / "lib.git"
    git(tmp_path, "clone", "-q", "--bare", str(new_repo(tmp_path / "lib-src")), str(library))
    app = with_origin(tmp_path / "app", "https://git.example.com/org/app", commits=1)
    git(
        app,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(library),
        "vendor/lib",
    )
    assert (app / "vendor" / "lib" / ".git").is_file()
    identity = project_identity(app / "vendor" / "lib")
    library_root = root_of(tmp_path / "lib-src")
    assert identity.key == f"remote:{library.resolve().as_posix()}+commit:{library_root}"
    assert identity.name == "lib"
    app_key = f"remote:git.example.com/org/app+commit:{root_of(app)}"
    assert project_identity(app).key == app_key
    assert project_identity(app / "vendor").key == f"{app_key}::vendor"


def test_a_bare_repository_is_its_own_identity(tmp_path: Path) -> None:
    source = new_repo(tmp_path / "source", commits=2)
    cloned = tmp_path / "cloned.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(cloned))
    proved = f"remote:{source.resolve().as_posix()}+commit:{root_of(source)}"
    assert project_identity(cloned).key == proved
    pushed = tmp_path / "pushed.git"
    pushed.mkdir()
    git(pushed, "init", "-q", "--bare", "-b", "main")
    git(source, "push", "-q", str(pushed), "main")
    identity = project_identity(pushed)
    assert identity.key == f"commit:{root_of(source)}"
    assert identity.name == "pushed"


# --- hostile and broken repositories -----------------------------------------------------------


def toucher(path: Path, marker: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch '{marker}'\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def hostile_repo(tmp_path: Path, own_origin: bool) -> tuple[Path, list[Path]]:
    """A repository whose config runs a script wherever git lets it, and includes outside files."""
    repo = new_repo(tmp_path / "repo")
    marks = tmp_path / "markers"
    marks.mkdir()
    markers = [marks / name for name in ("fsmonitor", "hook", "pager", "ssh")]
    bin_dir, hooks = tmp_path / "bin", tmp_path / "evil-hooks"
    for name in ("pre-commit", "post-commit", "reference-transaction", "post-checkout"):
        toucher(hooks / name, markers[1])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.inc").write_text('[remote "origin"]\n\turl = https://evil.example.com/inc\n')
    (outside / "evil-if.inc").write_text('[remote "origin"]\n\turl = https://evil.example.com/if\n')
    own = '[remote "origin"]\n\turl = https://git.example.com/own/repo\n' if own_origin else ""
    with (repo / ".git" / "config").open("a") as config:
        config.write(
            f"[include]\n\tpath = {outside / 'evil.inc'}\n"
            f'[includeIf "gitdir:{repo}/"]\n\tpath = {outside / "evil-if.inc"}\n'
            "[include]\n\tpath = /etc/agent-assist-nowhere\n"
            f"{own}[core]\n"
            f"\tfsmonitor = {toucher(bin_dir / 'fsmonitor', markers[0])}\n"
            f"\thooksPath = {hooks}\n"
            f"\tpager = {toucher(bin_dir / 'pager', markers[2])}\n"
            f"\tsshCommand = {toucher(bin_dir / 'ssh', markers[3])}\n"
        )
    return repo, markers


def prove_git_obeys(repo: Path, markers: list[Path]) -> None:
    """The hostile config is live: ordinary git commands run every script and follow includes."""
    urls = git(repo, "config", "--get-all", "remote.origin.url").split()
    assert urls[:2] == ["https://evil.example.com/inc", "https://evil.example.com/if"]
    git(repo, "status", check=False)
    git(repo, "commit", "-q", "--allow-empty", "-m", "hooked", check=False)
    git(repo, "ls-remote", "ssh://example.invalid/x", check=False)
    main_fd, tty_fd = pty.openpty()
    try:
        subprocess.run(["git", "log"], cwd=repo, stdout=tty_fd, stderr=tty_fd, timeout=30)
    finally:
        os.close(main_fd)
        os.close(tty_fd)
    assert [marker for marker in markers if not marker.exists()] == []
    for marker in markers:
        marker.unlink(missing_ok=True)


@pytest.mark.parametrize("own_origin", [True, False])
def test_a_hostile_config_runs_nothing_and_includes_nothing(
    tmp_path: Path, own_origin: bool
) -> None:
    repo, markers = hostile_repo(tmp_path, own_origin)
    prove_git_obeys(repo, markers)
    identity = project_identity(repo)
    assert [marker for marker in markers if marker.exists()] == []
    assert "evil" not in repr(identity)
    if own_origin:
        assert identity.key == f"remote:git.example.com/own/repo+commit:{root_of(repo)}"
    else:
        assert identity.key == f"commit:{root_of(repo)}"  # git ran, locked down


GARBAGE = [
    b"\x00\xff\xfe garbage \x01",
    b'[remote "origin"\n\turl = https://git.example.com/org/repo\n',
    b'[remote "origin"]\n\turl = "https://git.example.com/org/repo\n',
    b'[remote "origin"]\n\turl = https://git.example.com/org/repo\\q\n',
    b'[remote "origin"]\n\t= https://git.example.com/org/repo\n',
    b'[remote "origin"]\n\turl = https://git.example.com/org/repo\n[core\n',
    b'[remote "origin]\n\turl = https://git.example.com/org/repo\n',
]


@pytest.mark.parametrize("content", GARBAGE)
def test_a_garbage_config_falls_back_without_raising(tmp_path: Path, content: bytes) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "config").write_bytes(content)
    assert subprocess.run(["git", "config", "--list"], cwd=repo, capture_output=True).returncode
    identity = project_identity(repo)
    assert identity.key == f"path:{repo.resolve()}"
    assert "bad config line" in identity.how


def test_a_config_that_is_not_a_file_neither_hangs_nor_raises(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "config").unlink()
    os.mkfifo(repo / ".git" / "config")
    identity = project_identity(repo)
    assert identity.kind == "path" and "not a readable file" in identity.how


@pytest.mark.parametrize(
    "content",
    ["gitdir: /nowhere/at/all", "gitdir: ../missing", "hello", "", "gitdir:", "gitdir: a\x00b"],
)
def test_a_dot_git_file_pointing_nowhere_is_the_path(tmp_path: Path, content: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").write_text(content)
    identity = project_identity(project)
    assert identity.key == f"path:{project.resolve()}"
    assert ".git" in identity.how


@pytest.mark.parametrize("layout", ["empty", "head-only", "broken-symlink"])
def test_an_incomplete_dot_git_is_the_path(tmp_path: Path, layout: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    if layout == "broken-symlink":
        (project / ".git").symlink_to(tmp_path / "gone")
    else:
        (project / ".git").mkdir()
    if layout == "head-only":
        (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    identity = project_identity(project)
    assert identity.key == f"path:{project.resolve()}"
    assert "not a git repository" not in identity.how  # says what is wrong with this one


@pytest.mark.parametrize("head", ["ref: nonsense\n", "0" * 40 + "\n", "\x00garbage"])
def test_a_broken_head_is_the_path(tmp_path: Path, head: str) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / ".git" / "HEAD").write_text(head)
    identity = project_identity(repo)
    assert identity.kind == "path" and "no origin remote" in identity.how


# --- the config parser against git's own reading ---------------------------------------------


def git_config_list(path: Path) -> list[tuple[str, str | None]]:
    out = subprocess.run(
        ["git", "config", "--file", str(path), "--null", "--list"], capture_output=True, check=True
    ).stdout
    items: list[tuple[str, str | None]] = []
    for record in out.split(b"\0")[:-1]:
        key, newline, value = record.partition(b"\n")
        text = value.decode("utf-8", "surrogateescape") if newline else None
        items.append((key.decode("utf-8", "surrogateescape"), text))
    return items


def our_list(text: str) -> list[tuple[str, str | None]]:
    return [
        (".".join(part for part in (s, sub, k) if part is not None).lstrip("."), v)
        for s, sub, k, v in parse_git_config(text)
    ]


CONFIGS = [
    '[remote "origin"]\n\turl = https://a/b\n',
    '[Remote "origin"]\n\tURL = https://a/b\n',
    "[remote.origin]\nurl=https://a/b\n",
    "[REMOTE.ORIGIN]\nurl=https://a/b\n",
    '[remote "Origin"]\nurl=x\n',
    '[remote "origin"] url = same-line\n',
    '[remote "ori\\"gin\\\\x\\y"]\nurl = x\n',
    '[remote  "with space"]\nurl = x\n',
    '[remote "origin"]\n  url = https://a/b # comment\n  url = c ; comment\n',
    '[remote "origin"]\n  url = "https://a/b # not a comment" tail\n',
    '[remote "origin"]\n  url = https://a/\\\n  b.git\n',
    '[remote "origin"]\n  url = first\n  url = second\n',
    '[remote "origin"]\n  url = first\n  url =\n  url = third\n',
    '# top comment\n; another\n[remote "origin"]\n\turl = a  b\t c  \n',
    '\ufeff[remote "origin"]\nurl = bom\n',
    '[remote "origin"]\r\n\turl = crlf\r\n',
    '[remote "origin"]\n\turl = tab\\tand\\\\back\\"quote\\n\\b\n',
    '[remote "origin"]\n\turl\n\tfetch = "" x\n',
    '[include]\n\tpath = /etc/elsewhere\n[includeIf "gitdir:/x/"]\n\tpath = y\n',
    '[url "https://h/"]\n\tinsteadOf = h:\n[core]\n\tbare = false\n\tx-y = 1\n',
    '[remote "origin"]\nurl = "unterminated at the end',
    "[a]\nb = \\",
    "[section]",
    'key-before-any-section = x\n[remote "origin"]\nurl = y\n',
    "",
]


@pytest.mark.parametrize("text", CONFIGS)
def test_the_parser_reads_what_git_reads(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config"
    path.write_text(text, newline="")
    try:
        ours: list[tuple[str, str | None]] | None = our_list(text)
    except GitConfigError:
        ours = None
    done = subprocess.run(["git", "config", "--file", str(path), "--list"], capture_output=True)
    assert ours == (git_config_list(path) if done.returncode == 0 else None)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(st.characters(blacklist_characters="\x00\r", codec="utf-8"), max_size=40))
def test_the_parser_reads_any_value_git_writes(tmp_path: Path, value: str) -> None:
    path = tmp_path / "written"
    path.unlink(missing_ok=True)
    git(tmp_path, "config", "--file", str(path), "remote.origin.url", value)
    assert our_list(path.read_text()) == [("remote.origin.url", value)]


# --- what proves a remote ----------------------------------------------------------------------


def plant(repo: Path, sha: str) -> None:
    """File a made-up commit under `sha` and point HEAD at it: git trusts the file name."""
    body = b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor x <x> 0 +0000\n"
    body += b"committer x <x> 0 +0000\n\nplanted\n"
    objects = repo / ".git" / "objects" / sha[:2]
    objects.mkdir(parents=True, exist_ok=True)
    (objects / sha[2:]).write_bytes(zlib.compress(b"commit %d\0" % len(body) + body))
    (repo / ".git" / "refs" / "heads" / "main").write_text(sha + "\n")


def test_a_root_commit_planted_under_a_known_id_proves_nothing(tmp_path: Path) -> None:
    victim = with_origin(tmp_path / "victim", "https://git.example.com/org/repo")
    hostile = with_origin(tmp_path / "hostile", "https://git.example.com/org/repo", commits=0)
    plant(hostile, root_of(victim))
    assert root_of(hostile) == root_of(victim)  # git itself is fooled
    identity = project_identity(hostile)
    assert identity.kind == "path" and identity.key == f"path:{hostile.resolve()}"
    assert identity.remote == EXAMPLE_KEY and "does not hash to its id" in identity.how
    git(hostile, "remote", "remove", "origin")
    assert project_identity(hostile).kind == "path"  # nor without a remote


def test_a_remote_with_another_history_is_another_project(tmp_path: Path) -> None:
    a = with_origin(tmp_path / "a", "https://git.example.com/org/repo")
    b = with_origin(tmp_path / "b", "https://git.example.com/org/repo")
    assert project_identity(a).remote == project_identity(b).remote == EXAMPLE_KEY
    assert project_identity(a).key != project_identity(b).key


@pytest.mark.parametrize(
    ("key", "claim"),
    [
        (f"remote:h/o/r+commit:{'a' * 40}", "remote:h/o/r"),
        (f"remote:h/o/r+commit:{'b' * 64}::pkg/api", "remote:h/o/r::pkg/api"),
        ("remote:h/o/r", "remote:h/o/r"),  # recorded before the proof: a claim only
        ("remote:h/o/r::pkg", "remote:h/o/r::pkg"),
        (f"remote:/srv/x+commit:{'a' * 39}", f"remote:/srv/x+commit:{'a' * 39}"),
        (f"commit:{'a' * 40}", None),
        ("path:/home/me/x", None),
    ],
)
def test_the_remote_a_stored_key_claims(key: str, claim: str | None) -> None:
    assert claimed_remote(key) == claim


# --- which project directory a folder gets (the local store) -----------------------------------


def one_session(root: Path, home: Path) -> SessionManager:
    manager = SessionManager(root, home=home)
    manager.create_session(instance_id="w").close()
    return manager


def test_a_directory_recorded_under_the_remote_alone_is_kept_only_by_its_folders(
    tmp_path: Path,
) -> None:
    home = tmp_path / "store"
    own = with_origin(tmp_path / "own", "https://git.example.com/org/repo")
    first = one_session(own, home)
    marker = first.layout.project_dir / "project.json"
    record = orjson.loads(marker.read_bytes())
    assert record["key"] == project_identity(own).key and record["folders"] == [str(own)]
    marker.write_bytes(orjson.dumps({"key": EXAMPLE_KEY, "kind": "remote", "how": "", "name": ""}))
    hostile = with_origin(tmp_path / "hostile", "https://git.example.com/org/repo", commits=0)
    assert SessionManager(hostile, home=home).layout.project_dir != first.layout.project_dir
    other = with_origin(tmp_path / "other", "https://git.example.com/org/repo")
    assert SessionManager(other, home=home).layout.project_dir != first.layout.project_dir
    again = one_session(own, home)  # its sessions' `session/start` name this folder
    assert again.layout.project_dir == first.layout.project_dir
    record = orjson.loads(marker.read_bytes())
    assert record["key"] == project_identity(own).key and record["folders"] == [str(own)]


def test_a_folder_that_cannot_prove_its_remote_keeps_the_project_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "store"
    own = with_origin(tmp_path / "own", "https://git.example.com/org/repo")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(own), str(clone))
    git(clone, "remote", "set-url", "origin", "https://git.example.com/org/repo")
    used = one_session(own, home).layout.project_dir
    assert SessionManager(clone, home=home).layout.project_dir == used  # proved by the root commit
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no git: no proof
    assert (
        SessionManager(own, home=home).layout.project_dir == used
    )  # a folder the project recorded
    assert SessionManager(clone, home=home).layout.project_dir != used  # never recorded there
