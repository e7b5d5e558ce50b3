"""`agent-assist`: the command line (serve; more subcommands join as they are built)."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import signal
import sys
from types import FrameType

from . import __version__

# Subcommands beyond `serve`, each a module with `register(subparsers)` that adds its
# parsers and sets `func` (imports inside `func` stay lazy: start-up must stay fast).
EXTRA_COMMANDS = (
    "lsp_server.terminal.command",
    "lsp_server.admin.command",
    "lsp_server.demo.command",
    "acp_edge.command",
    "mcp_edge.command",
)


class ClientLogHandler(logging.Handler):
    """Forwards warnings and errors to the editor's log (`window/logMessage`)."""

    def __init__(self, server: object) -> None:
        super().__init__(level=logging.WARNING)
        self.server = server
        self._busy = False

    def emit(self, record: logging.LogRecord) -> None:
        """Send one record, never recursively."""
        from lsprotocol import types

        server = self.server
        if (
            self._busy
            or getattr(server, "output_closed", False)
            or getattr(server.protocol, "writer", None) is None  # type: ignore[attr-defined]
        ):
            return
        self._busy = True
        try:
            kind = (
                types.MessageType.Error
                if record.levelno >= logging.ERROR
                else types.MessageType.Warning
            )
            server.window_log_message(  # type: ignore[attr-defined]
                types.LogMessageParams(type=kind, message=self.format(record))
            )
        except Exception:  # noqa: S110 - the client is gone; stderr still has the record
            pass
        finally:
            self._busy = False


def serve(args: argparse.Namespace) -> int:
    """Run the language server on stdio (default) or TCP."""
    from session.redaction import RedactingLogFilter

    from .features import setup_features
    from .lifetime import ENDING_SIGNALS
    from .server import AgentAssistServer
    from .stderr_log import AnsweredErrorFilter

    server = AgentAssistServer()
    setup_features(server)
    logging.getLogger("pygls.protocol.json_rpc").addFilter(AnsweredErrorFilter())
    client_log = ClientLogHandler(server)
    client_log.addFilter(RedactingLogFilter(server.log_redactor))
    logging.getLogger().addHandler(client_log)
    for handler in logging.getLogger().handlers:  # stderr's: the configured key too
        for found in handler.filters:
            if isinstance(found, RedactingLogFilter):
                found.redactor = server.log_redactor
    # What is loaded by now lives as long as the process: out of the collector's sight, a
    # resume's burst of new objects (a 20,000-entry manifest) does not make it walk the
    # whole import graph again (~35 ms of the first resume of such a project).
    gc.freeze()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        server.finish_soon(signal.Signals(signum).name, 0)

    for signum in ENDING_SIGNALS:
        signal.signal(signum, on_signal)
    try:
        if args.tcp:
            host, _, port = args.tcp.rpartition(":")
            server.start_tcp(host or "127.0.0.1", int(port))
        else:
            server.start_io()
    finally:
        server.autosave("end of input" if not args.tcp else "server stop")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser."""
    parser = argparse.ArgumentParser(
        prog="agent-assist", description="An AI assistant whose conversations cannot be lost."
    )
    parser.add_argument("--version", action="version", version=f"agent-assist {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="run the language server")
    serve_parser.add_argument("--stdio", action="store_true", help="use stdio (the default)")
    serve_parser.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP for debugging")
    serve_parser.set_defaults(func=serve)
    for module in EXTRA_COMMANDS:
        try:
            imported = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        imported.register(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the agent-assist command line."""
    parser = build_parser()
    args = parser.parse_args(argv)
    from session.redaction import RedactingLogFilter

    from .stderr_log import BoundedStderrHandler

    stderr = BoundedStderrHandler()
    stderr.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    stderr.addFilter(RedactingLogFilter())  # a URL's password, a token: never in a log
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, handlers=[stderr])
    if not args.verbose:  # pygls logs every message at INFO
        for noisy in ("pygls", "httpx", "httpx2", "openai"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
