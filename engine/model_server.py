"""The model server's window and tools, learned once per model and base URL.

Asked in the background once the session is settled (`model/server_facts.py`); a turn
waits for the answer a few seconds at most. The window the server states becomes the
working window unless the user set `contextWindow` (theirs wins; a refused prompt still
lowers it). A server that takes no tools is said once, and chatted with without them.
The models it lists are kept (`listed`), for an edge that offers a choice.
llama-server is also asked after its first answer if it could not be asked before.
"""

from __future__ import annotations

import asyncio
import logging

from .messages import TEMPLATE_WARNING, WITHOUT_TOOLS
from .model.runner import ChatRunner
from .model.server_facts import LLAMA_CPP_PYTHON, ServerFacts
from .view import EngineView

logger = logging.getLogger(__name__)

WAIT_AT_TURN = 5.0  # seconds a turn waits for what the server says of itself
LLAMA_CPP_PYTHON_WARNING = (
    "llama-cpp-python gives this model no tools: it runs the model's own chat template, "
    "which drops them without an error (a request that forced a tool call was answered as "
    f"plain chat). {WITHOUT_TOOLS} For tools, start it with a function-calling chat format "
    "(--chat_format chatml-function-calling, or functionary-v2 with its tokenizer), or use "
    "llama.cpp's llama-server with --jinja."
)
WARNINGS = {"llama-server": TEMPLATE_WARNING, LLAMA_CPP_PYTHON: LLAMA_CPP_PYTHON_WARNING}


class ModelServer:
    """Learns the model server's window and tools (see the module doc)."""

    def __init__(self, engine: EngineView) -> None:
        self.engine = engine
        self._learning: tuple[ChatRunner, asyncio.Task[None]] | None = None
        self.listed: tuple[str, ...] = ()  # the models the server listed when last asked

    def learn(self) -> asyncio.Task[None] | None:
        """Start asking the current runner's server (once per runner); return the task."""
        ls = self.engine
        runner = ls.runner
        if runner is None or not ls.config.model.configured:
            return None
        if self._learning is not None and self._learning[0] is runner:
            return self._learning[1]
        task = ls.host.spawn(self._learn(runner), "the model server's window and tools")
        self._learning = (runner, task)
        return task

    async def before_turn(self) -> None:
        """Wait (a few seconds at most) for what the server says, so a turn is sent right."""
        task = self.learn()
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=WAIT_AT_TURN)

    async def _learn(self, runner: ChatRunner) -> None:
        facts = await runner.learn_server()
        logger.info("the model server: %s", facts)
        if facts.models:
            self.listed = facts.models
        if runner is self.engine.runner:
            self.adopt(runner, facts)

    async def after_first_answer(self, runner: ChatRunner) -> None:
        """After llama-server's first answer: its /props, if they were not read before."""
        props = await runner.read_server_props()
        if props is not None and runner is self.engine.runner:
            window_source = "/props" if props.window is not None else None
            self.adopt(
                runner, ServerFacts("llama-server", props.window, window_source, props.takes_tools)
            )

    def adopt(self, runner: ChatRunner, facts: ServerFacts) -> None:
        """Work within the window the server states, and without tools it does not take."""
        ls = self.engine
        config = ls.config
        window, source = facts.window, facts.window_source or "the server"
        may_take = config.window_source != "overflow" or (window or 0) < config.context_window
        if window is not None and config.window_source == "setting":
            if window != config.context_window:  # the user's wins; a refused prompt may lower it
                logger.info(
                    "the model server states a window of %d tokens (%s); contextWindow %d wins",
                    window,
                    source,
                    config.context_window,
                )
        elif window is not None and may_take:  # after an overflow, only a smaller one
            logger.info("the model server's window: %d tokens (%s)", window, source)
            ls.config = config.with_window(window, source)
            ls.lifecycle.set_history_budget(ls.config.history_budget)
        if facts.takes_tools is False and runner.tools:
            runner.without_tools()
            logger.warning("%s takes no tools for this model; chatting without them", facts.kind)
            ls.host.show(WARNINGS.get(facts.kind, TEMPLATE_WARNING))
