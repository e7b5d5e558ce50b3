"""The plugin's Lua is stylua-formatted and luacheck-clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "editors" / "nvim"
LUA_DIRS = [str(PLUGIN), str(Path(__file__).resolve().parent)]
# stylua is not on PyPI; the npm registry has it (a prebuilt binary inside the package).
STYLUA_PACKAGE = "@johnnymorganz/stylua-bin@2.5.2"
TOOLS = Path(sys.executable).parent.parent / "tools"


def find_or_install_stylua() -> str:
    """Return a stylua; install the npm package into the venv's tools/ if there is none."""
    local = TOOLS / "node_modules" / ".bin" / "stylua"
    found = shutil.which("stylua") or (str(local) if local.exists() else None)
    if found:
        return found
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("stylua is not installed and npm is not available to install it")
    TOOLS.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [npm, "install", "--no-save", "--no-audit", "--no-fund", "--prefix", str(TOOLS)]
        + [STYLUA_PACKAGE],
        capture_output=True,
        text=True,
        check=False,
    )
    assert local.exists(), f"npm install {STYLUA_PACKAGE} failed:\n{result.stderr}"
    return str(local)


def test_stylua_check() -> None:
    stylua = find_or_install_stylua()
    result = subprocess.run(
        [stylua, "--config-path", str(PLUGIN / "stylua.toml"), "--check", *LUA_DIRS],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_luacheck() -> None:
    luacheck = shutil.which("luacheck")
    if luacheck is None:
        pytest.skip("luacheck is not installed (Debian: apt-get install lua-check)")
    result = subprocess.run(
        [luacheck, "--no-color", "--config", str(PLUGIN / ".luacheckrc"), *LUA_DIRS],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
