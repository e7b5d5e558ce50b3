"""The agent process: stdio, the first `initialize` answered at once, the ways out.

The first `initialize` is answered from `hello` while a thread imports the SDK and the rest
of the edge (`connection`); then the SDK's connection serves everything after it. Stdin
closed, SIGTERM or SIGHUP: every open session is saved and the process ends.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

from . import hello
from .transport import LineTransport

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
LINE_LIMIT = 50 * 1024 * 1024  # one message (an embedded file) may be large


async def stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Return asyncio streams over this process's stdin and stdout."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin,
        sys.stdout,
    )
    return reader, asyncio.StreamWriter(out, protocol, reader, loop)


async def run(options: Mapping[str, Any], env: Mapping[str, str]) -> None:
    """Serve ACP on stdio until the client goes (or a signal)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in ENDING_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    loading = asyncio.ensure_future(
        asyncio.to_thread(importlib.import_module, "acp_edge.connection")
    )
    reader, writer = await stdio()
    transport = LineTransport(reader, writer)
    receiving = asyncio.ensure_future(transport.receive())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({receiving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    first = receiving.result() if receiving.done() else None
    if not receiving.done():
        receiving.cancel()
    if first is None:  # the client went (or a signal came) before saying anything
        await loading  # a thread importing cannot be stopped: the process waits for it
        return
    introduced = None
    if hello.is_initialize(first):
        introduced = first["params"]
        await transport.send(
            {"jsonrpc": "2.0", "id": first["id"], "result": hello.initialize_result(options, env)}
        )
    else:
        transport.push_back(first)
    connection = await loading
    await connection.serve_connection(transport, options, env, introduced, stop)


def serve(options: Mapping[str, Any]) -> int:
    """Run the agent; return the exit code."""
    asyncio.run(run(options, os.environ))
    return 0
