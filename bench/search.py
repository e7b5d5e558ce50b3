"""Literal search: index build rate and size, query time vs `grep -F -r` and `rg -F`, sync per turn.

Three kinds of query, drawn from the text written: words and phrases of 1-3 words,
substrings of 3-12 characters (inside words, across spaces and punctuation), and
substrings of 2-6 characters of Japanese and Chinese sentences. `rg` is ripgrep (the PyPI
wheel puts it beside the interpreter); without it the rg rows are skipped with a note.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson

from session.events import EVENT_ADAPTER
from session.lifecycle import SessionLifecycle
from session.local.manager import SessionManager
from session.log.reader import scan_log
from session.search import SearchIndex

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
QUERIES = 30  # per kind
# Each query's time (ours and grep's) is its median over this many rounds; one round above
# 100k events except in long mode.
QUERY_ROUNDS = 3
INCREMENTAL_TURNS: dict[Mode, int] = {"smoke": 5, "default": 20, "long": 20}
GREP_SPEEDUP_TARGET = 50.0  # ours p50 ≤ grep p50 / 50
RG_SPEEDUP_TARGET = 10.0  # ours p50 ≤ rg p50 / 10
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
# Japanese and Chinese sentences are made of these words (and particles), a tenth of all.
_JA = (
    "エージェント 設計 保存 セッション ログ 検索 インデックス ファイル 設定 変更 テスト 実行 "
    "結果 モデル 応答 要約 履歴 復元 チェックポイント 追記 イベント 記録 派生 射影 再構築 分岐 "
    "クラッシュ 続行 移行 リポジトリ ステップ 権威 真実 プロセス 再起動 進捗 構造 ターン 番号 "
    "境界 系譜 全文 語句 リテラル 構文 会議 請求書 顧客 注文 価格"
).split()
_JA_PARTICLES = "の を に は が で と も した する された します".split()
_ZH = (
    "会话 日志 搜索 索引 设计 保存 文件 配置 修改 测试 运行 结果 模型 响应 摘要 历史 恢复 "
    "检查点 用户 助手 工具 调用 工作区 漂移 追加 事件 记录 权威 派生 投影 重建 分支 崩溃 继续 "
    "迁移 仓库 步骤 进程 重启 进度 结构 轮次 编号 边界 会议 发票 客户 订单 价格"
).split()
_ZH_PARTICLES = "的 了 在 是 和 把 被 从 对".split()
_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{6,}")


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
        """Return one sentence: 6-18 words (an identifier, a path or code now and then), or
        a Japanese or Chinese one (a tenth of them)."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.1:
            words, particles = (_JA, _JA_PARTICLES) if kind < 0.05 else (_ZH, _ZH_PARTICLES)
            out = []
            for _ in range(rng.randint(4, 10)):
                out.append(rng.choice(words))
                if rng.random() < 0.6:
                    out.append(rng.choice(particles))
            return "".join(out) + "。"
        picked = rng.choices(self._words, cum_weights=self._cum, k=rng.randint(6, 18))
        if rng.random() < 0.2:
            a, b = rng.choice(_CONTENT), rng.choice(_CONTENT)
            path = f"{a}_{b}" if rng.random() < 0.5 else f"templates/{a}/{b}.md"
            picked.insert(rng.randrange(len(picked)), path)
        if rng.random() < 0.1:
            a, b = rng.choice(_CONTENT), rng.choice(_CONTENT)
            picked.append(f"in src/{a}/{b}.py: {a}_{b}({b}=None) == [{a}, 1]")
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

    def queries(self, count: int) -> dict[str, list[str]]:
        """Pick `count` queries of each kind from written texts (see the module docstring)."""
        rng = random.Random(17)
        words: list[str] = []
        while len(words) < count:
            sentence = rng.choice(rng.choice(self.sample).split(". ")).rstrip(".")
            if not sentence.isascii():
                continue
            picked = sentence.split()
            length = rng.choice((1, 1, 2, 2, 3))
            if len(picked) < length:
                continue
            start = rng.randrange(len(picked) - length + 1)
            span = picked[start : start + length]
            if all(word.lower() in _STOP for word in span):
                continue  # nobody searches for "the" or "of the"
            words.append(" ".join(span))
        substrings: list[str] = []
        while len(substrings) < count:
            text = rng.choice(self.sample)
            length = rng.randint(3, 12)
            start = rng.randrange(max(1, len(text) - length))
            piece = text[start : start + length]
            if piece.isascii() and piece.strip() == piece and len(piece) == length:
                substrings.append(piece)
        cjk: list[str] = []
        while len(cjk) < count:
            runs = _CJK.findall(rng.choice(self.sample))
            if runs:
                run = rng.choice(runs)
                length = rng.randint(2, 6)
                start = rng.randrange(len(run) - length + 1)
                cjk.append(run[start : start + length])
        return {"word": words, "substring": substrings, "CJK": cjk}


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
            event = EVENT_ADAPTER.validate_python(orjson.loads(out))
            model = event.model_dump(mode="json", exclude_unset=True)  # as written: no defaults
            assert orjson.dumps(model) + b"\n" == out, (out, model)
            self.checked += 1
        return out

    def turn(self, turn: int) -> list[tuple[str, int | None, dict[str, Any]]]:
        """Return (type, step, data) of one turn: 9 to ~25 events."""
        rng, corpus = self.rng, self.corpus
        prompt = corpus.text(1, 3)
        events: list[tuple[str, int | None, dict[str, Any]]] = [
            ("turn/start", None, {"input": prompt, "edge": None, "client": None})
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


KIND_STYLE = {"word": "-", "substring": "--", "CJK": "-."}
BASE_COLOR = {"grep": "C1", "rg": "C2"}


def ripgrep() -> str | None:
    """Return ripgrep's path: on PATH, or beside this interpreter (the PyPI wheel)."""
    beside = Path(sys.executable).with_name("rg")
    return shutil.which("rg") or (str(beside) if beside.exists() else None)


def baseline_time(exe: str, query: str, root: Path) -> tuple[float, int]:
    """Time `grep -F -r` or `rg -F` for `query` over `root` (output read through a pipe).

    Return (seconds, matching lines). Both are case-sensitive and know nothing of NFKC:
    they do less than the search they are compared with.
    """
    if Path(exe).name == "rg":
        argv = [exe, "-F", "--no-config", "-uu", "--", query, str(root)]
    else:
        argv = [exe, "-F", "-r", "--", query, str(root)]
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.PIPE, check=False)  # noqa: S603
    elapsed = time.perf_counter() - start
    assert done.returncode in (0, 1), (argv, done.returncode)
    return elapsed, done.stdout.count(b"\n")


def index_parts(path: Path) -> tuple[int, str]:
    """Return the bytes of text the index holds, and its size by table (if SQLite can tell)."""
    conn = sqlite3.connect(path)
    try:
        (text_bytes,) = conn.execute(
            "SELECT coalesce(sum(length(CAST(text AS BLOB))), 0) FROM event_rows"
        ).fetchone()
        try:
            sizes = conn.execute(
                "SELECT CASE WHEN name LIKE 'event_grams%' THEN 'trigrams' WHEN name LIKE"
                " 'event_rows%' OR name = 'sqlite_autoindex_event_rows_1' THEN 'texts'"
                " ELSE 'other' END AS part, sum(pgsize) FROM dbstat GROUP BY part ORDER BY part"
            ).fetchall()
        except sqlite3.Error:  # no dbstat in this SQLite
            sizes = []
    finally:
        conn.close()
    return int(text_bytes), ", ".join(f"{part} {fmt_bytes(size)}" for part, size in sizes)


def measure_size(mode: Mode, total: int, tmp: Path, result: Result, plot: Plot) -> None:
    """Build logs of `total` events, index, query, and append turns; add rows and details."""
    label = f"{total:,} events"
    workspace = tmp / f"ws{total}"
    workspace.mkdir()
    (workspace / "agent_spec.md").write_text("# Agent spec\n")
    manager = SessionManager(workspace, home=tmp / f"home{total}")
    manager.layout.ensure_dirs()
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
            manager.layout.log_path(session_id), session_id, workspace, total // sessions
        )
        written += events
    generated = time.perf_counter() - start
    assert writer.checked > 0
    log_bytes = sum(manager.layout.log_path(s).stat().st_size for s in ids)

    # -- build: index every log from nothing, vs only parsing them (scan_log) --------------
    index = SearchIndex.for_project(manager.layout)
    start = time.perf_counter()
    stats = index.sync(manager.layout)
    build = time.perf_counter() - start
    assert stats.events == written and not stats.problems, stats
    start = time.perf_counter()
    parsed = sum(len(scan_log(manager.layout.log_path(s)).events) for s in ids)
    scan = time.perf_counter() - start
    assert parsed == written
    index.close()  # checkpoints the WAL into the file (the index reopens on the next call)
    index_bytes = sum(
        p.stat().st_size
        for p in manager.layout.project_dir.iterdir()
        if p.name.startswith("index.sqlite")
    )
    result.rows.append(
        Row(
            f"{label}: index build rate vs scan_log rate (parse only)",
            f"{written / build:,.0f} ev/s",
            f"{written / scan:,.0f} ev/s",
            (written / build) / (written / scan),
        )
    )
    text_bytes, parts_of = index_parts(index.path)
    result.rows.append(
        Row(
            f"{label}: index size vs log size",
            fmt_bytes(index_bytes),
            fmt_bytes(log_bytes),
            index_bytes / log_bytes,
        )
    )
    result.rows.append(
        Row(
            f"{label}: index size vs the text it holds (UTF-8)",
            fmt_bytes(index_bytes),
            fmt_bytes(text_bytes),
            index_bytes / text_bytes,
        )
    )
    result.details.append(
        f"{label}: {sessions} sessions, {fmt_bytes(log_bytes)} of logs, generated in "
        f"{fmt_s(generated)}; sync() from empty {fmt_s(build)} ({stats.rows:,} text rows, "
        f"{fmt_bytes(text_bytes)} of text), scan_log of all logs {fmt_s(scan)}; index "
        f"{fmt_bytes(index_bytes)}" + (f" ({parts_of})" if parts_of else "")
    )

    # -- queries: ours vs grep -F -r and rg -F over the same logs ----------------------------
    baselines = {"grep": shutil.which("grep"), "rg": ripgrep()}
    rounds = QUERY_ROUNDS if total <= 100_000 or mode == "long" else 1
    parts = []
    for kind, queries in corpus.queries(QUERIES).items():
        ours: list[float] = []
        theirs: dict[str, list[float]] = {name: [] for name, exe in baselines.items() if exe}
        hits_total = 0
        for query in queries:
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                hits = index.search(query)
                times.append(time.perf_counter() - t0)
            assert hits, f"no hit for {query!r}"
            hits_total += len(hits)
            ours.append(median(times))
            for name, exe in baselines.items():
                if exe is not None:
                    runs = [
                        baseline_time(exe, query, manager.layout.sessions_dir)
                        for _ in range(rounds)
                    ]
                    assert runs[0][1] > 0, f"{name} found no {query!r}"
                    theirs[name].append(median([t for t, _ in runs]))
        ours_p50, ours_p95 = median(ours), percentile(ours, 95)
        plot.add(f"ours, {kind}, p50", total, ours_p50, linestyle=KIND_STYLE[kind])
        parts.append(
            f"{kind} (n={len(queries)}, {hits_total / len(queries):.1f} hits each, e.g. "
            f"{', '.join(repr(q) for q in queries[:4])}): p50 {fmt_s(ours_p50)}, p95 "
            f"{fmt_s(ours_p95)}, max {fmt_s(max(ours))}"
        )
        for name, times_of in theirs.items():
            base_p50, base_p95 = median(times_of), percentile(times_of, 95)
            goal = GREP_SPEEDUP_TARGET if name == "grep" else RG_SPEEDUP_TARGET
            ratio = ours_p50 / base_p50
            tool = "`grep -F -r`" if name == "grep" else "`rg -F`"
            result.rows.append(
                Row(
                    f"{label}: {kind} queries, p50 vs {tool} p50",
                    fmt_s(ours_p50),
                    fmt_s(base_p50),
                    ratio,
                    f"≤ {1 / goal:g}× (≥ {goal:g}× faster) and p50 ≤ {P50_TARGET_S * 1e3:g} ms",
                    ratio <= 1 / goal and ours_p50 <= P50_TARGET_S,
                )
            )
            result.rows.append(
                ratio_row(
                    f"{label}: {kind} queries, p95 vs {tool} p95",
                    ours_p95,
                    base_p95,
                    None,
                )
            )
            if kind == "word":
                plot.add(f"{tool.strip('`')}, word, p50", total, base_p50, color=BASE_COLOR[name])
            parts.append(f"{name} p50 {fmt_s(base_p50)}, p95 {fmt_s(base_p95)}")
    missing = [name for name, exe in baselines.items() if exe is None]
    result.details.append(
        f"{label}: queries (median of {rounds} round(s) each, limit 50): "
        + "; ".join(parts)
        + (f"; not found, rows skipped: {', '.join(missing)}" if missing else "")
    )

    # -- no-op sync: nothing appended anywhere -----------------------------------------------
    t0 = time.perf_counter()
    noop = index.sync(manager.layout)
    noop_s = time.perf_counter() - t0
    assert noop.scanned == 0 and noop.events == 0, noop
    result.details.append(
        f"{label}: sync() with nothing new: {fmt_s(noop_s)} for {noop.sessions} sessions "
        "(size + last-line check, no log read)"
    )

    # -- incremental: one turn of ~10 events appended, then sync_session ----------------------
    lifecycle = SessionLifecycle(manager, "bench")
    target = ids[-1]
    lifecycle.resume(target)
    index.sync_session(manager.layout, target)  # resume may have appended a drift event
    appends: list[float] = []
    syncs: list[float] = []
    counts: list[int] = []
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
        stats = index.sync_session(manager.layout, target)
        syncs.append(time.perf_counter() - t0)
        # 7 events, and the chunks: 1 to 4, by where the stream can be cut safely (redaction)
        assert stats.events == appended and 8 <= appended <= 11, (stats, appended)
        counts.append(appended)
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
        f"median {fmt_s(median(appends))}; each sync read exactly the turn's new events "
        f"({min(counts)}-{max(counts)})"
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
