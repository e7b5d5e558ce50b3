"""`python -m lsp_server.fake_model --port 0 --script FILE [options]`: the fake model.

Options that make it behave like a given server: `--slots N` (one request at a time, as
llama.cpp's `--parallel 1`), `--context-window N --overflow STYLE` (how a prompt over the
window is answered: an error in OpenAI's, vLLM's, llama-server's or llama-cpp-python's
words, or Ollama's silent cut), `--no-tools STYLE` (tools refused, as Ollama, llama-server
or vLLM refuse them), `--null-content STYLE` (a tool call without text refused in history,
as llama-cpp-python and older llama-server builds refuse it), `--no-tool-streams` (a tool
call asked for in a stream gets an empty one, as llama-cpp-python's chatml-function-calling).

The first line on stdout is the base URL.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading

from .replies import load_script
from .script import NO_TOOLS_STYLES, NULL_CONTENT_STYLES, OVERFLOW_STYLES
from .server import FakeOpenAI


def main(argv: list[str] | None = None) -> int:
    """Serve a scripted fake OpenAI endpoint; print the base URL on the first stdout line."""
    parser = argparse.ArgumentParser(prog="python -m lsp_server.fake_model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file with a list of replies")
    parser.add_argument("--label", help="model id becomes agent-assist-LABEL")
    parser.add_argument(
        "--slots", type=int, help="answer at most N requests at once, as llama.cpp's --parallel N"
    )
    parser.add_argument("--context-window", type=int, help="prompt tokens (4 bytes each) it takes")
    parser.add_argument("--overflow", choices=OVERFLOW_STYLES, default="openai")
    parser.add_argument("--no-tools", choices=NO_TOOLS_STYLES, help="refuse requests with tools")
    parser.add_argument(
        "--null-content",
        choices=NULL_CONTENT_STYLES,
        help="refuse an assistant message whose content is null",
    )
    parser.add_argument(
        "--no-tool-streams",
        action="store_true",
        help="send an empty stream for a streamed tool call, fail tool_choice 'required' "
        "(llama-cpp-python's function calling)",
    )
    args = parser.parse_args(argv)
    replies, label = load_script(args.script) if args.script else ([], None)
    logging.basicConfig(level=logging.WARNING)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if args.slots is not None and args.slots < 1:
        parser.error("--slots must be 1 or more")
    fake_model = FakeOpenAI(
        replies,
        label=args.label or label,
        host=args.host,
        port=args.port,
        slots=args.slots,
        context_window=args.context_window,
        overflow=args.overflow,
        no_tools=args.no_tools,
        null_content=args.null_content,
        tool_streams=not args.no_tool_streams,
    )
    with fake_model as fake:
        print(fake.base_url, flush=True)  # noqa: T201
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
