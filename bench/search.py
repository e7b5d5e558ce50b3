"""Full-text search: index build rate, query time vs `grep -F -r`, incremental sync per turn."""

from __future__ import annotations

import os
import random
import secrets
import shutil
import statistics
import subprocess
import time
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from session.events import EVENT_ADAPTER
from session.lifecycle import SessionLifecycle
from session.log.reader import scan_log
from session.search import SearchIndex
from session.store.manager import SessionManager

from .common import Mode, Plot, Result, Row, fmt_bytes, fmt_s, median, ratio_row, scratch_dir
from .resume import _ts, text_response, user_request

# Events in all logs per mode (each size is built, indexed and queried separately). The 1M
# size costs ~50 s of the default run (generating 260 MB of logs, indexing, grep over them).
SIZES: dict[Mode, list[int]] = {
    "smoke": [1_000, 3_000],
    "default": [10_000, 100_000, 1_000_000],
    "long": [10_000, 100_000, 1_000_000],
}
EVENTS_PER_SESSION = 2_500
QUERIES = 50
# Each query's time (ours and grep's) is its median over this many rounds; one round above
# 100k events except in long mode.
QUERY_ROUNDS = 3
INCREMENTAL_TURNS: dict[Mode, int] = {"smoke": 5, "default": 20, "long": 20}
GREP_SPEEDUP_TARGET = 50.0  # ours p50 ≤ grep p50 / 50
P50_TARGET_S = 0.020
SAMPLE = 2_000  # written texts kept to draw the queries from

# ~400 words: function words first (they get the highest Zipf weights), then the vocabulary
# of a coding assistant's conversations.
_FUNCTION = (
    "the of to and a in is it you that for on with as this be are was not or can by at from "
    "your have if but an will we so do all which one there when what more then should would "
    "each also only into than other how some just its any them these no about use new"
).split()
_CONTENT = (
    "template file session prompt model response request agent spec tool call result config "
    "parser token string value list map field schema version update change error warning test "
    "check build run server client editor window project workspace folder path name text line "
    "offset index search query match phrase word snippet rank score event log append write "
    "read open close lock save load snapshot resume history turn step chunk stream message "
    "summary decision phase checkpoint rewind compact drift manifest hash digest cache memory "
    "disk page block record entry table column row key default option setting flag argument "
    "parameter return function method class module package import export type interface "
    "protocol handler callback thread process queue timer signal socket buffer encoding format "
    "json yaml markdown html email greeting invoice customer order product price discount "
    "shipping address country language locale translation date time zone calendar reminder "
    "meeting report chart graph metric dashboard alert incident deploy release branch commit "
    "merge review comment issue ticket label milestone sprint backlog estimate priority owner "
    "user account profile password login logout permission role admin guest member team "
    "channel notification subscription payment refund balance transaction currency ledger "
    "audit policy rule filter sort group limit page cursor batch retry timeout backoff quota "
    "latency throughput benchmark profile trace span sample histogram percentile median "
    "pelican flamingo heron walrus otter badger kestrel osprey puffin gannet tern albatross "
    "petrel loon grebe cormorant raven falcon sparrow finch robin wren swallow swift lark "
    "variable constant literal expression statement loop branch condition exception assert "
    "fixture mock stub spy coverage lint format style naming convention refactor rename "
    "extract inline delete insert replace move copy paste undo redo select highlight cursor "
    "render layout widget button dialog panel sidebar toolbar menu shortcut command palette "
    "greeting welcome onboarding signup invitation newsletter digest weekly monthly quarterly "
    "annual summary overview detail appendix footnote heading paragraph sentence bullet "
    "number percent ratio average total count minimum maximum range threshold budget"
).split()
_STOP = set(_FUNCTION)


class Corpus:
    """Fresh Zipf-distributed text for every event; a sample of it to draw queries from."""

    def __init__(self, seed: int = 5) -> None:
        self.rng = random.Random(seed)
        words = _FUNCTION + _CONTENT
        self._words = words
        self._cum = list(accumulate(1.0 / (rank + 1) ** 0.9 for rank in range(len(words))))
        self.sample: list[str] = []  # reservoir of written texts (for picking queries)
        self._seen = 0

    def sentence(self) -> str:
        """Return one sentence of 6-18 words (an identifier or a path now and then)."""
        rng = self.rng
        picked = rng.choices(self._words, cum_weights=self._cum, k=rng.randint(6, 18))
        if rng.random() < 0.2:
            a, b = rng.choice(_CONTENT), rng.choice(_CONTENT)
            path = f"{a}_{b}" if rng.random() < 0.5 else f"templates/{a}/{b}.md"
            picked.insert(rng.randrange(len(picked)), path)
        return " ".join(picked).capitalize() + "."

    def text(self, lo: int, hi: int) -> str:
        """Return `lo`-`hi` sentences, remembered in the reservoir sample."""
        text = " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))
        self._seen += 1
        if len(self.sample) < SAMPLE:
            self.sample.append(text)
        else:
            slot = self.rng.randrange(self._seen)
            if slot < SAMPLE:
                self.sample[slot] = text
        return text

    def queries(self, count: int) -> list[str]:
        """Pick `count` words or 2-3 word phrases (within one sentence) from written texts."""
        rng = random.Random(17)
        out: list[str] = []
        while len(out) < count:
            sentence = rng.choice(rng.choice(self.sample).split(". ")).rstrip(".")
            words = sentence.split()
            length = rng.choice((1, 1, 2, 2, 3))
            if len(words) < length:
                continue
            start = rng.randrange(len(words) - length + 1)
            span = words[start : start + length]
            if all(word.lower() in _STOP for word in span):
                continue  # nobody searches for "the" or "of the"
            out.append(" ".join(span))
        return out


def _chunks(rng: random.Random, text: str) -> list[str]:
    out = []
    pos = 0
    while pos < len(text):
        step = rng.randint(60, 200)
        out.append(text[pos : pos + step])
        pos += step
    return out


class LogWriter:
    """Writes event lines exactly as EventLog does (spot-checked against the real model)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.rng = random.Random(23)
        self.start = datetime.now(UTC) - timedelta(days=30)
        self.checked = 0

    def _line(
        self, seq: int, type_: str, turn: int | None, step: int | None, data: dict[str, Any]
    ) -> bytes:
        stored = {
            "seq": seq,
            "ts": _ts(self.start + timedelta(milliseconds=seq * 250, microseconds=seq % 997 + 1)),
            "turn": turn,
            "step": step,
            "type": type_,
            "data": data,
        }
        out = orjson.dumps(stored) + b"\n"
        if seq % 1000 < 20:
            model = EVENT_ADAPTER.validate_python(orjson.loads(out)).model_dump(mode="json")
            assert orjson.dumps(model) + b"\n" == out, (out, model)
            self.checked += 1
        return out

    def turn(self, turn: int) -> list[tuple[str, int | None, dict[str, Any]]]:
        """Return (type, step, data) of one turn: 9 to ~25 events."""
        rng, corpus = self.rng, self.corpus
        prompt = corpus.text(1, 3)
        events: list[tuple[str, int | None, dict[str, Any]]] = [
            ("turn/start", None, {"input": prompt})
        ]
        steps = 2 if rng.random() < 0.5 else 1
        for step in range(1, steps + 1):
            messages = [user_request(prompt)] if step == 1 else []
            events.append(("step/start", step, {"messages": messages}))
            text = corpus.text(3, 9)
            for delta in _chunks(rng, text):
                events.append(("assistant/chunk", step, {"delta": delta}))
            events.append(("assistant/message", step, {"message": text_response(text)}))
            if step < steps:
                call_id = f"call_{turn}_{step}"
                path = f"templates/{rng.choice(_CONTENT)}/{rng.choice(_CONTENT)}.md"
                events.append(
                    (
                        "tool/call",
                        step,
                        {"tool_call_id": call_id, "name": "read_file", "args": {"path": path}},
                    )
                )
                result = corpus.text(2, 6)
                events.append(
                    (
                        "tool/result",
                        step,
                        {
                            "tool_call_id": call_id,
                            "name": "read_file",
                            "content": result,
                            "is_error": False,
                        },
                    )
                )
            events.append(("step/end", step, {"usage": {"input_tokens": 300, "output_tokens": 90}}))
        events.append(
            ("turn/end", None, {"reason": "completed", "error": None, "synthesized": False})
        )
        return events

    def write(self, path: Path, session_id: str, workspace: Path, events: int) -> tuple[int, int]:
        """Write a log of about `events` events; return (events, turns)."""
        seq = 0
        turn = 0
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb", buffering=1 << 20) as fh:
            start: dict[str, Any] = {
                "session_id": session_id,
                "parent_session_id": None,
                "fork_boundary": None,
                "instance_id": "bench",
                "workspace_root": str(workspace),
                "persistence": "full",
                "manifest": {},
            }
            fh.write(self._line(seq, "session/start", None, None, start))
            seq += 1
            while seq < events:
                turn += 1
                for type_, step, data in self.turn(turn):
                    fh.write(self._line(seq, type_, turn, step, data))
                    seq += 1
        return seq, turn


def percentile(values: list[float], q: float) -> float:
    """Return the q-th percentile (0-100) by linear interpolation."""
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def grep_time(query: str, root: Path, grep: str) -> tuple[float, int]:
    """Time `grep -F -r <query> <root>` (output read through a pipe); return (s, lines)."""
    start = time.perf_counter()
    done = subprocess.run(  # noqa: S603
        [grep, "-F", "-r", "--", query, str(root)], stdout=subprocess.PIPE, check=False
    )
    elapsed = time.perf_counter() - start
    assert done.returncode in (0, 1), done.returncode
    return elapsed, done.stdout.count(b"\n")


def measure_size(mode: Mode, total: int, tmp: Path, result: Result, plot: Plot) -> None:
    """Build logs of `total` events, index, query, and append turns; add rows and details."""
    label = f"{total:,} events"
    workspace = tmp / f"ws{total}"
    workspace.mkdir()
    (workspace / "agent_spec.md").write_text("# Agent spec\n")
    manager = SessionManager(workspace, home=tmp / f"home{total}")
    manager.ensure_dirs()
    corpus = Corpus()
    writer = LogWriter(corpus)
    sessions = max(2, total // EVENTS_PER_SESSION)
    start = time.perf_counter()
    written = 0
    ids: list[str] = []
    for _ in range(sessions):
        session_id = secrets.token_hex(6)
        ids.append(session_id)
        events, _turns = writer.write(
            manager.log_path(session_id), session_id, workspace, total // sessions
        )
        written += events
    generated = time.perf_counter() - start
    assert writer.checked > 0
    log_bytes = sum(manager.log_path(s).stat().st_size for s in ids)

    # -- build: index every log from nothing, vs only parsing them (scan_log) --------------
    index = SearchIndex.for_project(manager)
    start = time.perf_counter()
    stats = index.sync(manager)
    build = time.perf_counter() - start
    assert stats.events == written and not stats.problems, stats
    start = time.perf_counter()
    parsed = sum(len(scan_log(manager.log_path(s)).events) for s in ids)
    scan = time.perf_counter() - start
    assert parsed == written
    index.close()  # checkpoints the WAL into the file (the index reopens on the next call)
    index_bytes = sum(
        p.stat().st_size for p in manager.project_dir.iterdir() if p.name.startswith("index.sqlite")
    )
    result.rows.append(
        Row(
            f"{label}: index build rate vs scan_log rate (parse only)",
            f"{written / build:,.0f} ev/s",
            f"{written / scan:,.0f} ev/s",
            (written / build) / (written / scan),
        )
    )
    result.details.append(
        f"{label}: {sessions} sessions, {fmt_bytes(log_bytes)} of logs, generated in "
        f"{fmt_s(generated)}; sync() from empty {fmt_s(build)} ({stats.rows:,} text rows), "
        f"scan_log of all logs {fmt_s(scan)}; index {fmt_bytes(index_bytes)}"
    )

    # -- queries: ours vs grep -F -r over the same logs --------------------------------------
    grep = shutil.which("grep")
    queries = corpus.queries(QUERIES)
    rounds = QUERY_ROUNDS if total <= 100_000 or mode == "long" else 1
    ours: list[float] = []
    theirs: list[float] = []
    hits_total = 0
    grep_lines = 0
    for query in queries:
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            hits = index.search(query)
            times.append(time.perf_counter() - t0)
        assert hits, f"no hit for {query!r}"
        hits_total += len(hits)
        ours.append(median(times))
        if grep is not None:
            runs = [grep_time(query, manager.sessions_dir, grep) for _ in range(rounds)]
            assert runs[0][1] > 0, f"grep found no {query!r}"
            grep_lines += runs[0][1]
            theirs.append(median([t for t, _ in runs]))
    ours_p50, ours_p95 = median(ours), percentile(ours, 95)
    plot.add("ours (SearchIndex.search), p50", total, ours_p50)
    plot.add("ours, p95", total, ours_p95, linestyle=":")
    if theirs:
        grep_p50, grep_p95 = median(theirs), percentile(theirs, 95)
        plot.add("grep -F -r, p50", total, grep_p50, color="C1")
        plot.add("grep -F -r, p95", total, grep_p95, color="C1", linestyle=":")
        ratio = ours_p50 / grep_p50
        result.rows.append(
            Row(
                f"{label}: search p50 vs `grep -F -r` p50 ({len(queries)} queries)",
                fmt_s(ours_p50),
                fmt_s(grep_p50),
                ratio,
                f"≤ {1 / GREP_SPEEDUP_TARGET:g}× (≥ {GREP_SPEEDUP_TARGET:g}× faster) and p50 ≤ "
                f"{P50_TARGET_S * 1e3:g} ms",
                ratio <= 1 / GREP_SPEEDUP_TARGET and ours_p50 <= P50_TARGET_S,
            )
        )
        result.rows.append(
            ratio_row(f"{label}: search p95 vs `grep -F -r` p95", ours_p95, grep_p95, None)
        )
        result.details.append(
            f"{label}: grep p50 {fmt_s(grep_p50)}, p95 {fmt_s(grep_p95)}, {grep_lines:,} "
            f"matching lines in all"
        )
        kinds: dict[str, list[int]] = {}
        for i, query in enumerate(queries):
            words = query.lower().split()
            kind = (
                "one word"
                if len(words) == 1
                else "phrase with a function word"
                if any(w in _STOP for w in words)
                else "phrase of content words"
            )
            kinds.setdefault(kind, []).append(i)
        parts = []
        for kind, members in sorted(kinds.items()):
            mine = median([ours[i] for i in members])
            base = median([theirs[i] for i in members])
            parts.append(
                f"{kind} (n={len(members)}): p50 {fmt_s(mine)} vs grep {fmt_s(base)}, "
                f"{base / mine:.0f}× faster"
            )
        result.details.append(f"{label}: by query kind: " + "; ".join(parts))
    else:
        result.details.append(f"{label}: grep not found; query baseline skipped")
    result.details.append(
        f"{label}: search p50 {fmt_s(ours_p50)}, p95 {fmt_s(ours_p95)}, max {fmt_s(max(ours))} "
        f"(median of {rounds} round(s) per query; limit 50, {hits_total / len(queries):.1f} hits "
        f"per query); queries e.g. {', '.join(repr(q) for q in queries[:6])}"
    )

    # -- no-op sync: nothing appended anywhere -----------------------------------------------
    t0 = time.perf_counter()
    noop = index.sync(manager)
    noop_s = time.perf_counter() - t0
    assert noop.scanned == 0 and noop.events == 0, noop
    result.details.append(
        f"{label}: sync() with nothing new: {fmt_s(noop_s)} for {noop.sessions} sessions "
        "(size + last-line check, no log read)"
    )

    # -- incremental: one turn of 10 events appended, then sync_session -----------------------
    lifecycle = SessionLifecycle(manager, "bench")
    target = ids[-1]
    lifecycle.resume(target)
    index.sync_session(manager, target)  # resume may have appended a drift event
    appends: list[float] = []
    syncs: list[float] = []
    for number in range(INCREMENTAL_TURNS[mode]):
        prompt = corpus.text(1, 3) + f" unique{number}marker"
        text = corpus.text(3, 9)
        before = lifecycle.current.log.next_seq
        t0 = time.perf_counter()
        recorder = lifecycle.begin_turn(prompt)
        recorder.start_step([user_request(prompt)])
        third = len(text) // 3
        for delta in (text[:third], text[third : 2 * third], text[2 * third :]):
            recorder.chunk(delta)
        recorder.assistant_message(text_response(text))
        recorder.tool_call(f"c{number}", "read_file", {"path": "templates/a.md"})
        recorder.tool_result(f"c{number}", "read_file", corpus.text(2, 6))
        recorder.end_step({"input_tokens": 1, "output_tokens": 1})
        recorder.end("completed")
        appends.append(time.perf_counter() - t0)
        appended = lifecycle.current.log.next_seq - before
        t0 = time.perf_counter()
        stats = index.sync_session(manager, target)
        syncs.append(time.perf_counter() - t0)
        assert stats.events == appended == 10, (stats, appended)
        assert [h.turn for h in index.search(f"unique{number}marker")], number
    lifecycle.close()
    result.rows.append(
        ratio_row(
            f"{label}: sync_session after a 10-event turn vs appending that turn",
            median(syncs),
            median(appends),
            None,
        )
    )
    result.details.append(
        f"{label}: per turn ({len(syncs)} turns): sync_session median {fmt_s(median(syncs))} "
        f"(max {fmt_s(max(syncs))}); appending the turn through TurnRecorder (incl. its fsync) "
        f"median {fmt_s(median(appends))}; each sync read exactly the 10 new events"
    )
    index.close()
    shutil.rmtree(tmp / f"home{total}", ignore_errors=True)


def run(mode: Mode) -> Result:
    """Run the search benchmark and return its rows."""
    result = Result("search")
    plot = result.plot = Plot("search query time", "events in all logs")
    plot.targets.append((P50_TARGET_S, f"target p50 ≤ {P50_TARGET_S * 1e3:g} ms"))
    with scratch_dir("search") as tmp:
        for total in SIZES[mode]:
            measure_size(mode, total, tmp, result, plot)
    return result
