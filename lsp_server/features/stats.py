"""agentAssist/stats: telemetry summed from the project's logs (#42).

The logs are folded in a worker thread (`session.derive.stats`: what counts, and how),
streamed a batch at a time; nothing is sent anywhere and no session's lock is taken.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from session.derive.stats import Stats as Figures
from session.derive.stats import StatsFold, fold_store
from session.search.when import parse_when
from session.store.backend import SessionStore

from .. import protocol as proto
from ..protocol import lookback as lb
from ..server import RequestFailedError
from .base import Feature, request


def stats_window(params: lb.StatsParams) -> tuple[datetime | None, datetime | None]:
    """Return `since` and `until` as moments; a word not understood names its field."""
    found: list[datetime | None] = []
    for name in ("since", "until"):
        text = getattr(params, name)
        try:
            found.append(None if text is None else parse_when(text, end=name == "until"))
        except ValueError as exc:
            raise proto.ParamsError(f"{lb.STATS}: invalid field '{name}': {exc}") from None
    return found[0], found[1]


def project_stats(
    store: SessionStore, session_id: str | None, since: datetime | None, until: datetime | None
) -> Figures | None:
    """Fold the project's sessions (or the one asked: None if it is not in the project)."""
    known = {info.session_id for info in store.list_sessions()}
    if session_id is not None and session_id not in known and not store.exists(session_id):
        return None
    fold = StatsFold(since, until)
    fold_store(fold, store, sorted(known) if session_id is None else [session_id], known)
    return fold.result()


class Stats(Feature):
    """See the module."""

    name = "stats"

    @request(lb.STATS)
    async def stats(self, params: lb.StatsParams) -> lb.StatsResult:
        """Return the figures in total, by session, by day and by model."""
        since, until = stats_window(params)
        lifecycle = self.server.lifecycle
        found = await asyncio.to_thread(
            project_stats, lifecycle.store, params.session_id, since, until
        )
        if found is None:
            if params.session_id == lifecycle.session_id:  # nothing recorded yet
                found = StatsFold().result()
            else:
                raise RequestFailedError(f"no session {params.session_id} in this project")
        return lb.StatsResult.model_validate(found, from_attributes=True)
