"""`agent-assist demo` runs the whole flow to completion, offline."""

from __future__ import annotations

from pathlib import Path

from lsp_server.demo.script import demo_script
from lsp_server.fake_model import FakeOpenAI

from .conftest import clean_env, model_env, run_cli

KEY_LINES = [
    "Previous session found (last active: ",
    "Resume previous session? [Y/n] Y",
    "drift (resume): agent_spec.md (modified)",
    "session/summary #",
    "by the model), covering 2 turns:",
    "| decision: Keep replies polite and brief",
    "# Resumed Session Context",
    "## Previous Session Summary",
    "The user is designing a billing support agent",
    "## Key Decisions Made",
    "- Greet customers from templates/greeting.txt",
    "- agent_spec.md: modified",
    "tool call: write_file templates/greeting.txt",
    "restored files: agent_spec.md, templates/greeting.txt",
    "the conversation rewound: the transcript now has turns [1, 2]",
    "the parent's log is untouched",
    "Demo complete.",
]


def test_demo_runs_offline_with_the_labelled_demo_model(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    real_store = tmp_path / "real-store"
    result = run_cli("demo", env=clean_env(real_store, {"TMPDIR": str(scratch)}))
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "DEMO MODEL" in out and "agent-assist-demo" in out
    for line in KEY_LINES:
        assert line in out, line
    assert "query 'greeting'" in out
    assert "Removed the temporary demo data" in out
    assert list(scratch.iterdir()) == []  # cleaned up
    assert not real_store.exists()  # the user's store is never touched


def test_demo_uses_a_configured_model_and_keeps_its_data(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with FakeOpenAI(demo_script(), label="configured") as model:
        env = clean_env(tmp_path / "real-store", {"TMPDIR": str(scratch), **model_env(model)})
        result = run_cli("demo", "--keep", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert len(model.requests) >= 6
    out = result.stdout
    assert "Model: agent-assist-configured (configured in your environment)" in out
    assert "DEMO MODEL" not in out
    assert "Demo complete." in out
    (kept,) = scratch.iterdir()
    assert f"Kept the demo data in {kept}" in out
    listing = run_cli(
        "sessions", "list", "--json", "--workspace", str(kept / "workspace"),
        env=clean_env(kept / "store"),
    )  # fmt: skip
    assert listing.returncode == 0 and listing.stdout.count('"sessionId"') == 2  # parent + fork
