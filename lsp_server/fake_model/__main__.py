"""`python -m lsp_server.fake_model --port 0 --script FILE [--slots N]`: the fake model.

The first line on stdout is the base URL.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading

from .replies import load_script
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
    args = parser.parse_args(argv)
    replies, label = load_script(args.script) if args.script else ([], None)
    logging.basicConfig(level=logging.WARNING)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    if args.slots is not None and args.slots < 1:
        parser.error("--slots must be 1 or more")
    fake_model = FakeOpenAI(
        replies, label=args.label or label, host=args.host, port=args.port, slots=args.slots
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
