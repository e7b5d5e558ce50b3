"""What the server bench measured, and the rows and details made of it, with their targets."""

from __future__ import annotations

from dataclasses import dataclass

from .common import Result, Row, fmt_bytes, fmt_s, median, spread
from .server_process import PYCACHE, venv_has_bytecode

REPLY_CHARS, REPLY_CHUNKS = 400, 40
INIT_TARGET = 0.600  # s
OVERHEAD_TARGET_S, OVERHEAD_TARGET_RATIO = 0.005, 1.10
RSS_IDLE_TARGET, RSS_FIRST_CHAT_TARGET = 60e6, 150e6  # bytes (MB = 10^6 B, like fmt_bytes)
GROWTH_MIN_TURNS = 40  # filler turns needed for the "round trip, end vs start" row
VS_LOOP = "server over LSP vs in-process product loop"


@dataclass
class Measured:
    """Everything the async part measured (`loop_*`: the in-process product loop)."""

    phases: list[tuple[str, float]]
    imported: bool
    init: list[float]
    ready: list[float]
    init_nocache: list[float]
    bare_start: list[float]
    bare_rss: int
    rss_idle: int
    rss_first_chat: int
    rss_after: int
    total_turns: int
    first_chat: float
    loop_first: float
    server_turns: list[float]
    loop_turns: list[float]
    server_first: list[float]
    loop_first_deltas: list[float]
    server_rates: list[float]
    loop_rates: list[float]
    long_deltas: int
    fill_seconds: float
    fill_turns: list[float]
    extra_requests: int
    messages_last: tuple[int, int]


def _rate_spread(values: list[float]) -> str:
    def rate(value: float) -> str:
        return f"{value:,.0f}/s"

    return (
        f"median {rate(median(values))}, min {rate(min(values))}, max {rate(max(values))}, "
        f"n={len(values)}"
    )


def add_rows(result: Result, m: Measured) -> None:
    """Append the server bench's rows and details to `result`."""
    _start_rows(result.rows, m)
    _turn_rows(result.rows, m)
    _memory_rows(result.rows, m)
    _details(result.details, m)


def _start_rows(rows: list[Row], m: Measured) -> None:
    init, bare = median(m.init), median(m.bare_start)
    rows.append(
        Row(
            f"cold `initialize` round trip vs `python -c pass` (n={len(m.init)})",
            fmt_s(init),
            fmt_s(bare),
            init / bare,
        )
    )
    rows.append(
        Row(
            "cold `initialize` round trip, absolute",
            fmt_s(init),
            target=f"≤ {fmt_s(INIT_TARGET)}",
            ok=init <= INIT_TARGET,
        )
    )
    nocache = median(m.init_nocache)
    rows.append(
        Row(
            f"cold `initialize`, no .pyc for site-packages (n={len(m.init_nocache)})",
            fmt_s(nocache),
            fmt_s(init),
            nocache / init,
        )
    )
    rows.append(
        Row(
            "pydantic_ai imported by the start-up modules",
            str(m.imported),
            target="= False",
            ok=not m.imported,
        )
    )


def _turn_rows(rows: list[Row], m: Measured) -> None:
    ours, base = median(m.server_turns), median(m.loop_turns)
    added = ours - base
    rows.append(
        Row(
            f"chat turn ({REPLY_CHARS} chars / {REPLY_CHUNKS} chunks): {VS_LOOP}",
            fmt_s(ours),
            fmt_s(base),
            ours / base,
            f"added ≤ {fmt_s(OVERHEAD_TARGET_S)} or ≤ {OVERHEAD_TARGET_RATIO:g}×",
            added <= OVERHEAD_TARGET_S or ours / base <= OVERHEAD_TARGET_RATIO,
        )
    )
    ours_first, base_first = median(m.server_first), median(m.loop_first_deltas)
    rows.append(
        Row(
            f"first delta after request: {VS_LOOP}",
            fmt_s(ours_first),
            fmt_s(base_first),
            ours_first / base_first,
        )  # report only: issue #17 retired the ≤ 2 ms added
    )
    ours_rate, base_rate = median(m.server_rates), median(m.loop_rates)
    rows.append(
        Row(
            f"deltas/s, {m.long_deltas:,}-chunk reply: at the LSP client vs in-process "
            "product loop",
            f"{ours_rate:,.0f} /s",
            f"{base_rate:,.0f} /s",
            ours_rate / base_rate,
        )
    )


def _memory_rows(rows: list[Row], m: Measured) -> None:
    for label, value, target in (
        ("server RSS idle after initialize", m.rss_idle, RSS_IDLE_TARGET),
        ("server RSS after the first chat", m.rss_first_chat, RSS_FIRST_CHAT_TARGET),
        (f"server RSS after {m.total_turns:,} turns", m.rss_after, None),
    ):
        rows.append(
            Row(
                f"{label} vs bare interpreter",
                fmt_bytes(value),
                fmt_bytes(m.bare_rss),
                value / m.bare_rss,
                "report only" if target is None else f"≤ {fmt_bytes(target)}",
                None if target is None else value <= target,
            )
        )
    tenth = len(m.fill_turns) // 10
    if len(m.fill_turns) >= GROWTH_MIN_TURNS:
        start_s, end_s = median(m.fill_turns[:tenth]), median(m.fill_turns[-tenth:])
        rows.append(
            Row(
                f"chat round trip, last {tenth} vs first {tenth} of turns "
                f"{m.total_turns - len(m.fill_turns) + 1:,}-{m.total_turns:,} (untimed filler)",
                fmt_s(end_s),
                fmt_s(start_s),
                end_s / start_s,
            )
        )


def _details(d: list[str], m: Measured) -> None:
    d.append(
        "cold = a new server process on a new store, its .pyc files already cached "
        f"(PYTHONPYCACHEPREFIX={PYCACHE}, filled by an untimed warm-up), as after "
        "`pip install`; this venv itself has "
        + ("" if venv_has_bytecode() else "no ")
        + ".pyc files for site-packages (uv installs none and PYTHONDONTWRITEBYTECODE is set), "
        "see the `no .pyc` row (baseline there: the cached figure)"
    )
    d.append(f"cold initialize (spawn → InitializeResult): {spread(m.init)}")
    d.append(f"cold initialize, no .pyc for site-packages: {spread(m.init_nocache)}")
    d.append(f"cold spawn → session started (sessionChanged): {spread(m.ready)}")
    d.append(f"`python -c pass` (same interpreter and env): {spread(m.bare_start)}")
    d.append(
        "in-process product loop = the server's turn without its LSP edge: begin_turn → "
        "ChatRunner.run_attempt → end('completed') (fsynced) on a session of its own scratch "
        "project, options parsed from the same initializationOptions, a sink counting deltas "
        "for the client's notifications; the history converted for the next turn after "
        "timing, as the server does once its result is sent; it shares this process (and its "
        "GIL) with the fake model's thread, while the server reads the stream on its own core"
    )
    d.append(
        f"first chat (server imports pydantic-ai, builds the agent): {fmt_s(m.first_chat)}; "
        "in-process ChatRunner + session start + first turn (builds the agent; pydantic-ai "
        f"already imported here): {fmt_s(m.loop_first)}"
    )
    paired = [s - b for s, b in zip(m.server_turns, m.loop_turns, strict=True)]
    d.append(f"chat turn, server over LSP (at the client): {spread(m.server_turns)}")
    d.append(f"chat turn, in-process product loop: {spread(m.loop_turns)}")
    added = median(m.server_turns) - median(m.loop_turns)
    d.append(
        f"added per turn by the LSP edge: {fmt_s(added)} (difference of medians), median of "
        f"paired differences {fmt_s(median(paired))}; paths interleaved, history carried on "
        f"both (last requests: {m.messages_last[0]} and {m.messages_last[1]} messages)"
    )
    third = max(1, len(paired) // 3)
    d.append(
        f"added per turn (median of paired differences) in the first third of the timed turns "
        f"{fmt_s(median(paired[:third]))}, last third {fmt_s(median(paired[-third:]))} "
        "(the history grows by 2 messages a turn)"
    )
    d.append(f"first delta, server over LSP: {spread(m.server_first)}")
    d.append(f"first delta, in-process product loop: {spread(m.loop_first_deltas)}")
    d.append(f"deltas/s at the LSP client: {_rate_spread(m.server_rates)}")
    d.append(f"deltas/s, in-process product loop: {_rate_spread(m.loop_rates)}")
    growth = (m.rss_after - m.rss_first_chat) / max(1, m.total_turns - 1)
    d.append(
        f"RSS: bare interpreter {fmt_bytes(m.bare_rss)}; idle {fmt_bytes(m.rss_idle)}; "
        f"after first chat {fmt_bytes(m.rss_first_chat)}; after {m.total_turns:,} turns "
        f"{fmt_bytes(m.rss_after)} ({fmt_bytes(growth)}/turn after the first); "
        f"untimed filler turns took {fmt_s(m.fill_seconds)} and made {m.extra_requests} model "
        "request(s) besides the turns' own (e.g. a summary when the server compacts history)"
    )
    tenth = len(m.fill_turns) // 10
    if tenth:
        d.append(
            f"filler turns {m.total_turns - len(m.fill_turns) + 1:,}-{m.total_turns:,}, chat "
            f"round trip (no gc.collect before each): first {tenth} "
            f"{spread(m.fill_turns[:tenth])}; last {tenth} {spread(m.fill_turns[-tenth:])}"
        )
    d.append("phases: " + ", ".join(f"{name} {fmt_s(sec)}" for name, sec in m.phases))
