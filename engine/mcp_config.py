"""The LSP edge's MCP servers: the editor's `mcpServers` map, the project's file, its trust.

Both say `{name: {command, args?, env?, cwd?} | {url, headers?, type?: "http"|"sse"}}` (the
`mcpServers` map of Claude Code and Cursor; VS Code's `.vscode/mcp.json` calls it `servers`),
each server optionally with `confirm` (true, or a list of its tools: asked before each call)
and `timeout`/`startTimeout` seconds. The project's `.agent-assist/mcp.json` lies under the
editor's settings: a server the settings name too is the settings' one, whole.

The editor's settings are the user's own; the project file comes with a repository and may
name any command, so none of its servers starts before the user said yes to it (`McpTrust`:
the answer is kept per project and server, outside the repository, on this machine), or
`AGENT_ASSIST_TRUST_PROJECT_MCP=1` trusts them all (headless use).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .mcp_shape import read_server, server_entries
from .model.mcp import McpServerSpec
from .options import McpServerOptions

logger = logging.getLogger(__name__)

PROJECT_FILE = Path(".agent-assist") / "mcp.json"
TRUST_ENV = "AGENT_ASSIST_TRUST_PROJECT_MCP"
TRUST_FILE = "mcp-trust.json"
MAX_PROJECT_FILE = 1 << 20  # bytes of the project file read


@dataclass(frozen=True)
class McpConfigured:
    """Servers as configured: the settings' (trusted) and the project file's (to be asked)."""

    settings: tuple[McpServerSpec, ...] = ()
    project: tuple[McpServerSpec, ...] = ()
    warnings: tuple[str, ...] = ()


def _substituted(value: Any, root: Path) -> Any:
    """Replace VS Code's `${workspaceFolder}` in the strings of `value`."""
    if isinstance(value, str):
        return value.replace("${workspaceFolder}", str(root))
    if isinstance(value, list):
        return [_substituted(v, root) for v in value]
    if isinstance(value, Mapping):
        return {k: _substituted(v, root) for k, v in value.items()}
    return value


def specs_from_map(
    raw: object, where: str, root: Path, shape: bool = True
) -> tuple[list[McpServerSpec], list[str]]:
    """Read a `{name: server}` map; a bad server is left out with a warning naming it.

    `shape=False`: no warnings about the map's shape (`mcp_shape`), only about its servers.
    """
    entries, warnings = server_entries(raw, where)
    warnings = warnings if shape else []
    specs: list[McpServerSpec] = []
    for name, entry in entries.items():
        if entry.get("disabled") is True:  # Cursor's and Cline's switch
            continue
        try:
            specs.append(server_spec(name, read_server(name, _substituted(entry, root)), root))
        except ValueError as exc:
            warnings.append(f"{where}: {exc}; that server is left out")
    return specs, warnings


def server_spec(name: str, server: McpServerOptions, root: Path) -> McpServerSpec:
    """Return the spec of a server as declared; `ValueError` if it cannot run (no command...)."""
    kind = server.type or ("stdio" if "command" in server.model_fields_set else "http")
    cwd = server.cwd
    if cwd and not Path(cwd).is_absolute():
        cwd = str(root / cwd)
    confirm = server.confirm
    return McpServerSpec(
        name=name,
        transport=kind,
        command=server.command or "",
        args=tuple(server.args or ()),
        env=dict(server.env or {}),
        cwd=cwd,
        url=server.url or "",
        headers=dict(server.headers or {}),
        timeout=server.timeout or McpServerSpec.timeout,  # the spec's default
        start_timeout=server.start_timeout or McpServerSpec.start_timeout,
        confirm=confirm is True,
        confirm_tools=frozenset(confirm) if isinstance(confirm, list) else frozenset(),
    )


def read_project_file(root: Path) -> tuple[object, str | None]:
    """Return the project file's server map (None if there is none) and what is wrong with it."""
    path = root / PROJECT_FILE
    if not path.is_file():
        return None, None
    try:
        with path.open("rb") as fh:
            data = json.loads(fh.read(MAX_PROJECT_FILE + 1)[:MAX_PROJECT_FILE])
    except (OSError, ValueError) as exc:
        return None, f"{PROJECT_FILE} cannot be read ({exc}); its MCP servers are left out"
    if not isinstance(data, Mapping):
        return None, f"{PROJECT_FILE} must be an object {{mcpServers: {{...}}}}; ignored"
    return data.get("mcpServers", data.get("servers")), None


def configured_servers(options: object, root: Path) -> McpConfigured:
    """Return the settings' `mcpServers` and the project file's servers the settings do not name.

    The settings' shape is warned about by `parse_initialization_options`.
    """
    given = options.get("mcpServers") if isinstance(options, Mapping) else None
    settings, warnings = specs_from_map(given, "mcpServers", root, shape=False)
    raw, problem = read_project_file(root)
    project, more = specs_from_map(raw, str(PROJECT_FILE), root)
    named = {s.name for s in settings}
    return McpConfigured(
        tuple(settings),
        tuple(s for s in project if s.name not in named),
        tuple(warnings + ([problem] if problem else []) + more),
    )


def command_line(spec: McpServerSpec) -> str:
    """Return what starting the server runs (or where it connects), for a question."""
    if spec.transport != "stdio":
        return spec.url
    env = [f"{name}={value}" for name, value in spec.env.items()]  # may change what runs
    parts = (*env, spec.command, *spec.args)
    shown = " ".join(json.dumps(part) if " " in part else part for part in parts)
    return shown + (f" (in {spec.cwd})" if spec.cwd else "")


def trust_key(root: Path, spec: McpServerSpec) -> str:
    """Return the key an answer is kept under: the project and everything the server runs."""
    what = [
        str(root),
        spec.transport,
        spec.command,
        list(spec.args),
        sorted(spec.env.items()),
        spec.cwd,
        spec.url,
        sorted(spec.headers.items()),
    ]
    return hashlib.sha256(json.dumps(what).encode("utf-8", "surrogateescape")).hexdigest()


class McpTrust:
    """The user's answers about project MCP servers, kept in `<home>/mcp-trust.json`.

    Only keys (`trust_key`: hashes) and the server's name are written, never its command line
    (it may carry a secret). A file that cannot be read trusts nothing.
    """

    def __init__(self, home: Path, env: Mapping[str, str] | None = None) -> None:
        self.path = home / TRUST_FILE
        self.all = (env if env is not None else os.environ).get(TRUST_ENV, "").strip() in (
            "1",
            "true",
            "yes",
        )

    def _answers(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        answers = data.get("answers") if isinstance(data, Mapping) else None
        return dict(answers) if isinstance(answers, Mapping) else {}

    def answer(self, root: Path, spec: McpServerSpec) -> bool | None:
        """Return the kept answer (True with the opt-in), None if the user was never asked."""
        if self.all:
            return True
        kept = self._answers().get(trust_key(root, spec))
        allowed = kept.get("allowed") if isinstance(kept, Mapping) else None
        return allowed if isinstance(allowed, bool) else None

    def remember(self, root: Path, spec: McpServerSpec, allowed: bool) -> None:
        """Keep the user's answer (written whole, private to the user); logged if it fails."""
        answers = self._answers()
        answers[trust_key(root, spec)] = {"allowed": allowed, "server": spec.name}
        text = json.dumps({"version": 1, "answers": answers}, indent=1)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".mcp-trust-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:  # mkstemp's mode: 0600
                fh.write(text)
            os.replace(temp, self.path)
        except OSError as exc:
            logger.warning("the answer about MCP server %r was not kept: %s", spec.name, exc)
