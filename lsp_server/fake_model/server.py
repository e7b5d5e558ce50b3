"""`FakeOpenAI`: the scripted model served on 127.0.0.1 from a daemon thread.

``FakeOpenAI(context_window=N, overflow="openai"|"llama-cpp"|"vllm"|"llama-server")``
answers every request whose prompt is over N tokens (4 bytes each) the way that server
does, before any scripted reply is used: ``llama-cpp`` (llama-cpp-python) sends HTTP 200
with an empty body when streamed, HTTP 400 ``context_length_exceeded`` when not.
``overflow="ollama"`` answers it with the scripted reply, as if it fitted, and reports a
prompt of N/2 + 2 tokens (Ollama keeps half its window of a prompt over it);
``"ollama-legacy"`` reports N (older Ollama cut every prompt to the window). The usage of
any other request counts its prompt as the window does.

``FakeOpenAI(no_tools="ollama"|"llama-server"|"vllm")`` refuses every request that carries
tools, as that server does for a model it takes no tools for (Ollama), or when started
without tool calling (llama-server without ``--jinja``, vLLM without
``--enable-auto-tool-choice``). A summary request without tools is answered with the
summary as JSON text (what pydantic-ai's prompted output asks for).

``FakeOpenAI(null_content="llama-cpp"|"llama-server")`` refuses every request holding an
assistant message whose `content` is null or missing (a tool call without text, as the
OpenAI API allows and pydantic-ai sends it), with HTTP 500 in that server's words:
llama-cpp-python's request validation, or llama.cpp's llama-server before it took null.

``FakeOpenAI(tool_streams=False)`` cannot stream a tool call, as llama-cpp-python's
`chatml-function-calling` format ("Automatic streaming tool choice is not supported"):
a streamed request whose reply is a tool call gets what that server sends for it, an empty
stream (the reply stays next); text streams, and tool calls come in one piece. A forced
tool choice (`tool_choice: "required"`, as structured output sends) fails its handler's
`assert tool_choice == "auto"`: an empty stream, or HTTP 500 with no message.

``FakeOpenAI(template_tools=False|True)`` is llama.cpp's llama-server: it says `llama.cpp`
in its `Server` header, and its `GET /props` says whether the model's chat template takes
tools (`chat_template_caps.supports_tools`), and its `context_window` as a slot's
`n_ctx`. With False it answers as that server does, as if no tools had been sent (the
scripted replies should then hold no tool calls).

``fake.models_entry`` adds fields to the `/v1/models` entry: a window (vLLM's
``max_model_len``, ``context_length``, llama-server's ``meta.n_ctx_train``), or
llama-cpp-python's ``LLAMA_CPP_PYTHON_ENTRY``. A one-token request forcing a tool call
(``max_tokens: 1``, ``tool_choice: "required"``: the server's tools probed) is recorded in
``probes``, not ``requests``, and answered as llama-cpp-python does: HTTP 500 with
``tool_streams=False`` (function calling), else one token of plain chat (the model's template).

``FakeOpenAI(slots=1)`` answers one request at a time, as a local server with one slot
does (llama.cpp's ``--parallel 1``, llama-cpp-python): the others wait for it.

When the queue is empty the reply is ``Echo: <last user message>``.

The server's background session-summary requests (their instructions start with
``SUMMARY_MARKER``) are answered from a queue of their own, ``add_summary()``, and recorded
in ``summary_requests``, not ``requests``: scripted chat replies are never taken by them.
By default the answer is a structured summary listing the user's requests.
"""

from __future__ import annotations

import logging
import threading
from http.server import ThreadingHTTPServer
from typing import Any

from .handler import ChatCompletionsHandler
from .script import ModelScript

log = logging.getLogger(__name__)


class FakeOpenAI(ModelScript):
    """A scripted OpenAI-compatible chat completions server running in a background thread."""

    def __init__(
        self,
        replies: list[Any] | None = None,
        *,
        label: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        context_window: int | None = None,
        overflow: str = "openai",
        slots: int | None = None,
        no_tools: str | None = None,
        null_content: str | None = None,
        tool_streams: bool = True,
        template_tools: bool | None = None,
    ) -> None:
        super().__init__(
            replies,
            label=label,
            context_window=context_window,
            overflow=overflow,
            slots=slots,
            no_tools=no_tools,
            null_content=null_content,
            tool_streams=tool_streams,
            template_tools=template_tools,
        )
        self._address = (host, port)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """Base URL for an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running")
        return f"http://{self._address[0]}:{self._server.server_port}/v1"

    def start(self) -> FakeOpenAI:
        """Bind the port and serve in a daemon thread."""
        handler = type("Handler", (ChatCompletionsHandler,), {"fake": self})
        self._server = ThreadingHTTPServer(self._address, handler)
        self._server.daemon_threads = True
        self._server.handle_error = self._handle_error  # type: ignore[method-assign]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, releasing hanging and delayed replies."""
        self._stopping.set()
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handle_error(self, request: Any, client_address: Any) -> None:
        log.exception("fake model: error while handling %s", client_address)
