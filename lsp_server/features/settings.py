"""Settings changed while the server runs: `workspace/didChangeConfiguration`."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from engine.config import (
    ServerConfig,
    overlay_options,
    parse_initialization_options,
    settings_section,
)
from engine.model.runner import ChatRunner
from engine.options import live_fields, restart_fields
from session.redaction import url_credential

from ..server import AgentAssistServer
from .base import Feature, lsp

logger = logging.getLogger(__name__)

SECTION = "agentAssist"
PULL_TIMEOUT = 10.0  # seconds a client has to answer workspace/configuration


LIVE = live_fields()  # applied from the next turn on
AT_RESTART = restart_fields()  # (the option's key, the field): fixed while the server runs


def changed_settings(before: ServerConfig, after: ServerConfig) -> tuple[dict[str, Any], list[str]]:
    """Return the fields that apply live, and the keys that changed but need a restart."""
    live = {f: getattr(after, f) for f in LIVE if getattr(before, f) != getattr(after, f)}
    fixed = [k for k, f in AT_RESTART if getattr(before, f) != getattr(after, f)]
    return live, fixed


class LiveSettings(Feature):
    """Applies changed settings (model, key, options) from the next turn on."""

    name = "settings"

    def __init__(self, server: AgentAssistServer) -> None:
        super().__init__(server)
        self.options: dict[str, Any] | None = None  # initializationOptions with changes laid over

    def _can_pull(self) -> bool:
        params = self.server.initialize_params
        workspace = params.capabilities.workspace if params is not None else None
        return bool(workspace is not None and workspace.configuration)

    async def session_started(self) -> None:
        """Ask a client that registers dynamically to send our settings' changes."""
        params = self.server.initialize_params
        workspace = params.capabilities.workspace if params is not None else None
        change = workspace.did_change_configuration if workspace is not None else None
        if change is None or not change.dynamic_registration:
            return
        registration = types.Registration(
            id="agent-assist-settings",
            method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
            register_options={"section": SECTION},
        )
        try:
            await self.server.client_register_capability_async(
                types.RegistrationParams(registrations=[registration])
            )
        except Exception as exc:  # the notification may still come unregistered
            logger.info("registering workspace/didChangeConfiguration failed: %s", exc)

    @lsp(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        """Read the settings (pulled where the client can answer) and apply what changed."""
        settings = await self._pull() if self._can_pull() else None
        if settings is None:
            sent = params.settings if not isinstance(params, Mapping) else params.get("settings")
            settings = settings_section(sent)
        if settings is None:
            return
        for warning in self.apply(settings):
            self.server.show(warning)

    async def _pull(self) -> Mapping[str, Any] | None:
        ls = self.server
        item = types.ConfigurationItem(section=SECTION, scope_uri=from_fs_path(str(ls.root)))
        try:
            answer = await asyncio.wait_for(
                ls.workspace_configuration_async(types.ConfigurationParams(items=[item])),
                PULL_TIMEOUT,
            )
        except Exception as exc:  # the settings sent with the notification are used instead
            logger.warning("workspace/configuration failed: %s", exc)
            return None
        first = answer[0] if isinstance(answer, list | tuple) and answer else None
        return first if isinstance(first, Mapping) else None

    def apply(self, settings: Mapping[str, Any]) -> list[str]:
        """Lay `settings` over `initializationOptions` and apply what changed; return warnings.

        The settings are the client's whole section as it is now (pulled or sent): one the
        user removed goes back to its `initializationOptions` value, or its default.
        """
        ls = self.server
        init = ls.initialize_params
        client = init.client_info.name if init is not None and init.client_info else None
        process_id = init.process_id if init is not None else None
        base = overlay_options(init.initialization_options if init else None, {})
        if self.options is None:
            self.options = base
        merged = overlay_options(base, settings)
        before, known = parse_initialization_options(self.options, client, os.environ, process_id)
        after, warnings = parse_initialization_options(merged, client, os.environ, process_id)
        self.options = merged
        warnings = [w for w in warnings if w not in known]
        live, refused = changed_settings(before, after)
        if refused:
            warnings.append(
                f"agent-assist: {', '.join(refused)} changed; that applies when the server "
                "is restarted"
            )
        if not live:
            return warnings
        ls.config = ls.config.model_copy(update=live)
        if "model" in live:
            model = ls.config.model
            for secret in (model.api_key, url_credential(model.base_url)):
                ls.log_redactor.add_secret(secret)
                if ls.engine.lifecycle_or_none is not None:
                    ls.lifecycle.redactor.add_secret(secret)
            ls.runner = ChatRunner(model)  # a turn in flight keeps the runner it started with
            if ls.config.window_source not in ("default", "setting"):  # the old server's window
                ls.config = ls.config.with_window(after.context_window, after.window_source)
                live["context_window"] = after.context_window
        if ls.engine.lifecycle_or_none is not None and "context_window" in live:
            ls.lifecycle.set_history_budget(ls.config.history_budget)
        logger.info("settings changed: %s", ", ".join(sorted(live)))
        return warnings
