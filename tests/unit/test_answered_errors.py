"""A refusal the server meant is logged as one line; an internal error keeps its stack."""

from __future__ import annotations

import logging

import pytest
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from lsp_server.server import RequestFailedError
from lsp_server.stderr_log import AnsweredErrorFilter


def logged(caplog: pytest.LogCaptureFixture, error: Exception) -> logging.LogRecord:
    log = logging.getLogger("pygls.protocol.json_rpc.test")
    log.addFilter(AnsweredErrorFilter())
    try:
        raise error
    except Exception:
        log.exception("Failed to handle request %s %s %s", 7, "agentAssist/open", {"text": "x"})
    return caplog.records[-1]


@pytest.mark.parametrize(
    "error",
    [RequestFailedError("session abc is in use"), JsonRpcInvalidParams("invalid field 'path'")],
)
def test_a_meant_refusal_is_one_line_without_params(
    caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    record = logged(caplog, error)
    assert record.exc_info is None and record.levelno == logging.INFO
    text = record.getMessage()
    assert "request answered with error" in text and str(getattr(error, "message", "")) in text
    assert "text" not in text  # the params (a user's words) are not logged


def test_an_internal_error_keeps_its_stack(caplog: pytest.LogCaptureFixture) -> None:
    record = logged(caplog, JsonRpcInternalError("boom"))
    assert record.exc_info is not None and record.levelno == logging.ERROR
