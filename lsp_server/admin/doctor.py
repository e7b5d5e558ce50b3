"""`agent-assist doctor`: the store, every project's logs, pointers and index, the model.

With a PostgreSQL store (`--store DSN`, else `AGENT_ASSIST_STORE`) the database is checked
instead of the local files, only read: reachable, version, schema, row-level security,
latency, this project's sessions. The model is asked a tiny question unless `--offline`;
the project's MCP servers are listed (`doctor_mcp`); exit 1 if a problem is found. The
findings are collected in a `DoctorReport` (`doctor_report`); the local files check
themselves into it (`session/local/diagnosis.py`).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from session.redaction import url_without_userinfo
from session.terminal_text import counted, inert

from .doctor_database import check_database
from .doctor_mcp import check_mcp
from .doctor_report import DoctorReport
from .output import plain_console, write_json
from .running import OK, PROBLEM
from .search import search_index


def check_model(report: DoctorReport, round_trip: bool, timeout: float) -> None:
    """Model configuration (the key only as set/unset) and a tiny round trip."""
    from engine.config import parse_initialization_options

    config, _ = parse_initialization_options(None, None, os.environ)
    model = config.model
    report.model = {
        "name": model.name,
        "baseUrl": model.base_url and url_without_userinfo(model.base_url),
        "apiKey": "set" if model.api_key else "unset",
        "configured": model.configured,
    }
    if not model.configured:
        report.add(
            "info",
            "model",
            "no model configured (AGENT_ASSIST_LLM_MODEL_NAME, …); chat needs one, "
            "`agent-assist demo` runs without",
        )
        return
    key = "set" if model.api_key else "unset"
    where = url_without_userinfo(model.base_url or "the default endpoint")
    report.add("ok", "model", f"{model.name} at {where} (key {key})")
    if not round_trip:
        return
    import openai

    started = time.monotonic()
    try:
        client = openai.OpenAI(
            base_url=model.base_url,
            api_key=model.api_key or "not-set",
            timeout=timeout,
            max_retries=0,
        )
        client.chat.completions.create(
            model=model.name or "",
            messages=[{"role": "user", "content": "Reply with the word: ok"}],
            max_tokens=5,
        )
    except Exception as exc:
        message = str(exc).replace(model.api_key or "\0", "[REDACTED]")
        report.model["roundTrip"] = {"ok": False, "error": message}
        report.add("problem", "model", f"round trip failed: {type(exc).__name__}: {message}")
        return
    elapsed = time.monotonic() - started
    report.model["roundTrip"] = {"ok": True, "seconds": round(elapsed, 3)}
    report.add("ok", "model", f"round trip answered in {elapsed:.1f} s")


def run_doctor(args: argparse.Namespace) -> DoctorReport:
    """Run every check."""
    from session.paths import storage_root
    from session.store.choose import SCHEMA_ENV, STORE_ENV, store_kind
    from session.workspace.identity import project_identity

    report = DoctorReport()
    home = storage_root()
    here = Path(getattr(args, "workspace", None) or ".").resolve()
    identity = project_identity(here)
    report.add("info", "project", f"{here} is project {identity.key} ({identity.how})")
    spec = getattr(args, "store", None) or os.environ.get(STORE_ENV)
    if store_kind(spec) == "postgresql":
        assert spec is not None
        schema = getattr(args, "schema", None) or os.environ.get(SCHEMA_ENV, "").strip()
        workspace = Path(getattr(args, "workspace", None) or ".").resolve()
        check_database(report, spec.strip(), schema or "agent_assist", workspace)
        report.add("info", "storage", f"local files ({home}) not checked: the store is PostgreSQL")
    else:
        from session.local.diagnosis import diagnose  # the local store checks its own files

        diagnose(report, home, here, identity, searchable=search_index() is not None)
    check_model(report, round_trip=not args.offline, timeout=args.timeout)
    check_mcp(report, here, online=not args.offline, timeout=args.timeout)
    return report


_MARKS = {"ok": "✓", "info": "·", "warning": "⚠", "problem": "✗"}
_STYLES = {"ok": "green", "info": "dim", "warning": "yellow", "problem": "bold red"}


def cmd_doctor(args: argparse.Namespace) -> int:
    """`agent-assist doctor`."""
    report = run_doctor(args)
    if args.json:
        write_json(report.as_json())
    else:
        console = plain_console()
        for finding in report.findings:
            console.print(
                inert(f"{_MARKS[finding.level]} {finding.area}: {finding.message}"),
                markup=False,
                style=_STYLES[finding.level],
            )
        count = len(report.problems)
        summary = "No problems found." if not count else f"{counted(count, 'problem')} found."
        console.print(summary, markup=False, style="bold")
    return PROBLEM if report.problems else OK
