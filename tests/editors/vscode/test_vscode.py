"""The VS Code extension (editors/vscode): its own scripts, run as subprocesses.

`scripts/test.sh`: npm ci, tsc --noEmit, eslint, unit tests, the integration test against this
repo's server and the loopback fake model, and `vsce package`. `scripts/e2e.sh`: the `.vsix`
installed into real VS Code (code-server from npm) driven through Debian's Chromium with
playwright-core; screenshots land in `editors/vscode/test-results/` and, when
`AGENT_ASSIST_ARTIFACTS` is set, are copied to `$AGENT_ASSIST_ARTIFACTS/vscode-e2e/`. Both install
what they need (Node 24, code-server and Chromium under folders git ignores), so only `npm` is
required.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.install.readme import (
    CODE_SERVER,
    NODE24_BIN,
    README,
    VSCODE,
    VSCODE_README,
    VSIX_STEPS,
    documented,
    home_env,
    sh,
)

REPO = Path(__file__).resolve().parents[3]
EXTENSION = REPO / "editors" / "vscode"
VENV_BIN = Path(sys.executable).parent

pytestmark = pytest.mark.skipif(
    shutil.which("npm") is None,
    reason="npm is not installed: the VS Code extension cannot be built",
)


def _run(script: str, timeout: int) -> None:
    env = dict(os.environ)
    env.setdefault("AGENT_ASSIST_SERVER", str(VENV_BIN / "agent-assist"))
    env.setdefault("AGENT_ASSIST_PYTHON", sys.executable)
    try:
        proc = subprocess.run(
            ["bash", str(EXTENSION / "scripts" / script)],
            cwd=EXTENSION,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{script} took more than {timeout} s:\n{exc.stdout or ''}\n{exc.stderr or ''}")
    # stage lines with their timings show up in pytest's report of this test
    sys.stdout.write(proc.stdout[-20_000:])
    if proc.returncode != 0:
        pytest.fail(
            f"{script} exited {proc.returncode}\n--- stdout\n{proc.stdout[-20_000:]}"
            f"\n--- stderr\n{proc.stderr[-20_000:]}"
        )


def test_typecheck_lint_unit_integration_package() -> None:
    """Tsc, eslint, unit and integration tests pass and `vsce package` makes the .vsix."""
    _run("test.sh", timeout=900)
    assert (EXTENSION / "agent-assist.vsix").stat().st_size > 10_000


def _keep_screenshots(results: Path, started: float) -> Path | None:
    """Copy this run's screenshots to `$AGENT_ASSIST_ARTIFACTS/vscode-e2e/` (an older copy goes)."""
    artifacts = os.environ.get("AGENT_ASSIST_ARTIFACTS")
    if not artifacts:
        return None
    kept = Path(artifacts).resolve() / "vscode-e2e"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    for shot in sorted(results.glob("*.png")):
        if shot.stat().st_mtime >= started:
            shutil.copy2(shot, kept / shot.name)
    return kept


def test_end_to_end_in_code_server(
    capsys: pytest.CaptureFixture[str], record_property: Callable[[str, object], None]
) -> None:
    """The sidebar in real VS Code: roles, resume banner, restore, Stop, retry, three themes,
    the model's edit saved in the editor (no drift) and a file changed outside (drift), a file's
    history with a change's diff and a restore of the version before it."""
    results = EXTENSION / "test-results"
    started = time.time()
    try:
        _run("e2e.sh", timeout=1200)
    finally:  # a failed run's screenshots (vscode-e2e-failure.png too) are kept as well
        kept = _keep_screenshots(results, started)
        where = kept or results
        count = len(list(where.glob("*.png"))) if kept else None
        record_property("screenshots", str(where))
        with capsys.disabled():  # one line in pytest's report, without -s
            print(f"\nvscode e2e screenshots: {where}" + (f" ({count} kept)" if kept else ""))  # noqa: T201
    shots = (
        "vscode-e2e",
        "theme-light",
        "theme-dark",
        "theme-high-contrast",
        "3-resume-banner",
        "12-assistant-edit-saved",
        "13-drift-outside",
        "14-file-history-diff",
    )
    for name in shots:
        shot = results / f"{name}.png"
        assert shot.is_file(), f"{shot} was not saved"
        assert shot.stat().st_mtime >= started, f"{shot} is from an earlier run"
        if kept:
            assert (kept / shot.name).read_bytes() == shot.read_bytes(), f"{shot.name} was not kept"


# -- the README's .vsix install (here: it shares this folder's build and tools) ----------------


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
