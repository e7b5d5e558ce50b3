"""A feature: an object owning its state and its handlers, installed from one ordered list.

A handler is a method marked with `@request(method)`, for a request of the contract, or
`@lsp(method)`, for a method of LSP itself (`initialize`, `shutdown`, and the notifications
the client sends: `initialized`, `exit`, `didOpen`, `didChangeConfiguration`,
`didChangeWatchedFiles`; the contract's own notifications are all the server's). The
installer registers it with pygls (a request also as the `agentAssist.<verb>` command) and
wraps each call of a request in one place:

- params are validated against the contract's model (`-32602` naming the field);
- the call waits until this instance's session is settled (`ready=False` opts out);
- a failure is isolated to its call: a user-fixable one is answered `RequestFailed`, any
  other is logged, the session autosaved and `-32603` answered; the feature keeps serving;
- the result model is put on the wire (`Wire.wire()`), checked against the contract.

An `@lsp` handler's params are lsprotocol's; it waits for the session only if marked
`ready=True`, and a failure is logged, the call returning nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import typing
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams

from engine.errors import UserError
from session.errors import SessionError
from session.storage import StorageError, explain_write_error

from .. import protocol as proto
from ..server import AgentAssistServer, RequestFailedError

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
FeatureT = TypeVar("FeatureT", bound="Feature")

_MARK = "_agent_assist_handler"

# True while a request runs as `workspace/executeCommand` (its own task, so its own value).
THROUGH_COMMAND: ContextVar[bool] = ContextVar("through_command", default=False)


class Feature:
    """One capability of the server; subclasses mark their handlers and set `name`."""

    name: ClassVar[str]
    needs: ClassVar[tuple[type[Feature], ...]] = ()  # features installed before this one

    def __init__(self, server: AgentAssistServer) -> None:
        self.server = server

    def need(self, kind: type[FeatureT]) -> FeatureT:
        """Return an installed feature this one declared in `needs`."""
        if kind not in self.needs:
            raise TypeError(f"{self.name} uses {kind.name} without declaring it in `needs`")
        return self.server.get_feature(kind)

    async def session_started(self) -> None:
        """Run once this instance's session is settled (after the resume question)."""


def request(method: str, *, ready: bool = True) -> Callable[[F], F]:
    """Mark a feature method as the handler of a request of the contract."""
    if method not in proto.BY_METHOD:
        raise ValueError(f"{method} is not a request of the contract")
    return _mark(("request", method, ready))


def lsp(method: str, *, ready: bool = False) -> Callable[[F], F]:
    """Mark a feature method as the handler of an LSP method (params typed by lsprotocol).

    `ready=True` makes the call wait for the session (sensible for notifications only).
    """
    return _mark(("lsp", method, ready))


def _mark(spec: tuple[str, str, bool]) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        setattr(fn, _MARK, spec)
        return fn

    return decorate


def check_signature(method: str, fn: Callable[..., Any]) -> None:
    """Fail at start-up if a handler's params or result type is not the contract's."""
    spec = proto.BY_METHOD[method]
    hints = typing.get_type_hints(fn)
    hints.pop("self", None)
    result = hints.pop("return", None)
    params = list(hints.values())
    if params != [spec.params] or result != spec.result:
        raise TypeError(
            f"{fn.__qualname__} handles {method} as ({params}) -> {result}; "
            f"the contract says ({spec.params.__name__}) -> {spec.result}"
        )


def install(server: AgentAssistServer, kinds: list[type[Feature]]) -> None:
    """Create each feature in order and register its handlers; a failing one is skipped."""
    for kind in kinds:
        try:
            missing = [n.name for n in kind.needs if n not in server.features]
            if missing:
                raise RuntimeError(f"needs {', '.join(missing)}, not installed before it")
            feature = kind(server)
            for attr in dir(type(feature)):
                spec = getattr(getattr(type(feature), attr), _MARK, None)
                if spec is not None:
                    _register(server, spec, getattr(feature, attr))
            server.features[kind] = feature
        except Exception:
            logger.exception("feature %r failed to set up; continuing without it", kind.name)


def _register(server: AgentAssistServer, spec: tuple[str, str, bool], bound: Any) -> None:
    kind, method, ready = spec
    if kind == "lsp":
        server.feature(method)(_lsp_handler(method, bound, ready))
        return
    check_signature(method, bound)
    handle = _request_handler(method, bound, ready)
    server.feature(method)(handle)

    async def command(ls: AgentAssistServer, *args: Any) -> Any:
        THROUGH_COMMAND.set(True)
        return await handle(ls, list(args))

    server.command(proto.command_name(method))(command)


def _request_handler(
    method: str, bound: Callable[[Any], Awaitable[proto.Wire]], ready: bool
) -> Callable[[AgentAssistServer, Any], Awaitable[Any]]:
    model = proto.BY_METHOD[method].params

    async def handle(ls: AgentAssistServer, raw: Any) -> Any:
        try:
            params = proto.parse_params(model, method, raw)
        except proto.ParamsError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        task = asyncio.current_task()
        if task is not None:
            ls.requests.add(task)
            task.add_done_callback(ls.requests.discard)
        try:
            if ready:
                await ls.ready.wait()
            return (await bound(params)).wire()
        except asyncio.CancelledError:
            raise
        except proto.ParamsError as exc:  # a field the handler itself could not understand
            raise JsonRpcInvalidParams(str(exc)) from None
        except JsonRpcException as exc:  # its message may quote a server's error: scrubbed
            exc.message = ls.log_redactor.scrub_text(exc.message)
            exc.args = (exc.message,)
            raise
        except UserError as exc:  # the engine's words for the user
            raise RequestFailedError(ls.log_redactor.scrub_text(exc.message)) from None
        except (SessionError, StorageError) as exc:
            message = explain_write_error(str(exc), exc.errno)
            raise RequestFailedError(ls.log_redactor.scrub_text(message)) from None
        except Exception as exc:
            logger.exception("%s failed", method)
            ls.save_after_error()
            message = ls.log_redactor.scrub_text(f"{method}: internal error: {exc}")
            raise JsonRpcInternalError(message) from None

    return handle


def _lsp_handler(method: str, bound: Callable[[Any], Any], ready: bool) -> Any:
    """Wrap an LSP handler, keeping it synchronous if it is (pygls runs those inline).

    (No `functools.wraps`: pygls reads the wrapper's signature to pass the server.)
    """
    if not inspect.iscoroutinefunction(bound):
        if ready:
            raise TypeError(f"{method}: only an async handler can wait for the session")

        def handle_now(ls: AgentAssistServer, params: Any) -> Any:
            try:
                return bound(params)
            except JsonRpcException:
                raise
            except Exception:
                logger.exception("%s failed", method)
                return None

        return handle_now

    async def handle(ls: AgentAssistServer, params: Any) -> Any:
        try:
            if ready:
                await ls.ready.wait()
            return await bound(params)
        except (asyncio.CancelledError, JsonRpcException):
            raise
        except Exception:  # the log says what happened; the next call is served
            logger.exception("%s failed", method)
            return None

    return handle
