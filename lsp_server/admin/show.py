"""`sessions show ID` and `sessions export ID`: one session's transcript, read whole."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from session.terminal_text import counted, inert, inert_json

from .dump import load_session, session_meta
from .output import plain_console, write_json
from .running import OK, UsageError
from .targets import project_store, resolve_session
from .transcript import print_item, print_steps, transcript_markdown


def cmd_show(args: argparse.Namespace) -> int:
    """`sessions show ID [--steps [--fold N]]`: metadata and transcript (or steps)."""
    steps = getattr(args, "steps", False)
    fold = getattr(args, "fold", None)
    if steps and fold is not None and fold < 0:
        raise UsageError(f"--fold must be 0 (never cut) or more bytes, not {fold}")
    with project_store(args) as manager:
        session_id = resolve_session(manager, args.id)
        dump = load_session(manager, session_id)
        meta = session_meta(dump, manager)
    turns = None
    if steps:
        from session.derive.steps import turn_steps

        turns = turn_steps(dump.events, fold=fold or None)
    if args.json:
        shown: dict[str, Any] = {**meta, "items": dump.items}
        if turns is not None:
            from ..protocol.lookback import TurnView

            shown["turns"] = [TurnView.model_validate(t).wire() for t in turns]
        write_json(shown)
        return OK
    console = plain_console()
    title = inert(meta["title"] or "(untitled)")
    console.print(f"Session {session_id}: {title}", markup=False)
    console.print(
        f"created {meta['createdAt']} · updated {meta['updatedAt']} · "
        f"{counted(meta['turns'], 'turn')} · {meta['events']} events",
        markup=False,
        style="dim",
    )
    if meta["parentSessionId"]:
        console.print(f"fork of {meta['parentSessionId']}", markup=False, style="dim")
    console.print(f"log: {inert(str(meta['log']))}", markup=False, style="dim")
    for problem in dump.problems:
        console.print(f"⚠ {inert(problem)}", markup=False, style="yellow")
    if dump.read_only:
        console.print(f"⚠ read-only: {inert(dump.read_only)}", markup=False, style="yellow")
    console.print()
    if turns is not None:  # every turn as the log has it, a rewound one too
        for turn in turns:
            print_steps(console, turn)
        if not turns:
            console.print("No turns yet.", markup=False)
        return OK
    for item in dump.items:
        print_item(console, item)
    return OK


def cmd_export(args: argparse.Namespace) -> int:
    """`sessions export ID --format md|json [-o FILE]`."""
    with project_store(args) as manager:
        session_id = resolve_session(manager, args.id)
        dump = load_session(manager, session_id)
        if args.format == "md":
            text = transcript_markdown(dump, manager)
        else:
            payload = {
                "session": session_meta(dump, manager),
                "transcript": dump.items,
                "events": [event.model_dump(mode="json") for event in dump.events],
            }
            text = json.dumps(payload, indent=2, ensure_ascii=False, default=str)
            text = inert_json(text.encode()).decode() + "\n"
    if args.output and args.output != "-":
        out = Path(args.output).expanduser()
        out.write_text(text, encoding="utf-8")
        sys.stderr.write(f"Exported session {session_id} to {out} ({len(text)} characters)\n")
    else:
        sys.stdout.write(text)
    return OK
