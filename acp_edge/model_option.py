"""The model as a session config option: offered with each session, set by the client.

Its values are the configured model, then those the model server lists at `/v1/models`
(`engine.model_server.ModelServer.listed`, learned in the background as the session starts:
a `config_option_update` says them once known). Setting one gives the session's engine a
new `ChatRunner` from its next turn on (a turn in flight keeps its own), as the LSP edge does
when the model setting changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp.schema import ConfigOptionUpdate, SessionConfigOptionSelect, SessionConfigSelectOption

from .checks import invalid
from .client import ClientLink
from .sessions import Held, Sessions

if TYPE_CHECKING:
    from engine.config import ServerConfig

logger = logging.getLogger(__name__)

MODEL = "model"  # the option's id
DESCRIPTION = "The model this session's turns ask: the configured one, or one the server lists"


def model_values(configured: str | None, current: str, listed: Sequence[str]) -> list[str]:
    """Return the models to choose from: the configured, the current, the listed (once each)."""
    return list(dict.fromkeys(v for v in (configured, current, *listed) if v))


def model_option(current: str, values: Sequence[str]) -> SessionConfigOptionSelect:
    """Return ACP's select option of the model."""
    return SessionConfigOptionSelect(
        id=MODEL,
        name="Model",
        description=DESCRIPTION,
        category="model",
        type="select",
        current_value=current,
        options=[SessionConfigSelectOption(value=v, name=v) for v in values],
    )


class ModelOptions:
    """The model option of the process's sessions (see the module doc)."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions
        self._configured: ServerConfig | None = None

    @property
    def configured(self) -> ServerConfig:
        """Return the options as configured (the same for every session of the process)."""
        if self._configured is None:
            self._configured = self.sessions.config()
        return self._configured

    def values(self, held: Held) -> list[str]:
        """Return the models the session may ask (none without a model name)."""
        engine = held.engine
        current = engine.config.model.name
        if not current:
            return []
        return model_values(self.configured.model.name, current, engine.model_server.listed)

    def of(self, held: Held) -> list[SessionConfigOptionSelect]:
        """Return the session's config options (none without a model name to show)."""
        current = held.engine.config.model.name
        return [model_option(current, self.values(held))] if current else []

    def announce(
        self, link: ClientLink, held: Held, offered: list[SessionConfigOptionSelect]
    ) -> None:
        """Once the server has said which models it has, send the options if they grew."""
        learning = held.engine.model_server.learn()
        if learning is None or learning.done():
            return

        async def tell() -> None:
            await asyncio.wait({learning})
            options = self.of(held)
            if options != offered and held.session_id in self.sessions.held:
                update = ConfigOptionUpdate(
                    session_update="config_option_update", config_options=list(options)
                )
                await link.update(held.session_id, update)

        self.sessions.tasks.spawn(tell(), "the model option to the client")

    def set(self, held: Held, config_id: str, value: object) -> list[SessionConfigOptionSelect]:
        """Set an option (the model): a new runner from the next turn on; the options now."""
        from engine.model.runner import ChatRunner

        if config_id != MODEL:
            raise invalid(f"unknown config option {config_id!r} (there is {MODEL!r})")
        values = self.values(held)
        if not isinstance(value, str) or value not in values:
            raise invalid(f"model {value!r} is not offered (offered: {', '.join(values)})")
        engine = held.engine
        if value != engine.config.model.name:
            model = engine.config.model.model_copy(update={"name": value})
            config = engine.config.model_copy(update={"model": model})
            if config.window_source not in ("default", "setting"):  # the other model's window
                base = self.configured
                config = config.with_window(base.context_window, base.window_source)
            engine.config = config
            engine.lifecycle.set_history_budget(config.history_budget)
            engine.runner = ChatRunner(config.model)  # a turn in flight keeps the one it has
            engine.model_server.learn()  # the new model's window and tools, in the background
            logger.info("session %s: the model is now %s", held.session_id, value)
        return self.of(held)
