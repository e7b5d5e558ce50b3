"""The READMEs' install steps, run as written.

Each command is checked to appear verbatim in its README, then runs in a temporary HOME whose
`~/src/agent-assist` is this checkout, so the READMEs' `~/...` paths are used as they are: the
server in a venv, with uv and with pipx (itself from PyPI when not installed), then
`agent-assist --version`; the Neovim plugin from
the lazy.nvim spec and from a `pack/` directory, in a headless Neovim that starts the
installed server. lazy.nvim itself is not fetched: what it does with the spec is done by a
few lines of Lua. The registries are used as the READMEs' users use them (pip, npm). The
`.vsix` built and installed as its README says is tested beside the extension's own tests
(`tests/editors/vscode`): they share its build folder and tools, so they run one at a time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .readme import (
    LAZY_SPEC,
    NVIM_README,
    PACK_STEPS,
    README,
    REPO,
    VENV_BIN,
    VENV_STEPS,
    VERSION,
    VSCODE_README,
    documented,
    home_env,
    make_home,
    sh,
)

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
