"""The snapshot (`SessionState`, schema v4): its fields, its migration, the fold of events.

The snapshot is a projection of the log for a fast start; `apply_event_to_state` is the
fold, `state_from_events` rebuilds it from a whole log.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, field_validator

from .events import (
    CompactEvent,
    DecisionEvent,
    Event,
    Persistence,
    PhaseEvent,
    SaveEvent,
    SessionStartEvent,
    SummaryEvent,
    TurnStartEvent,
    utcnow,
)
from .paths import SESSION_ID_RE
from .snapshot_meta import SCHEMA_VERSION, TITLE_CHARS
from .workspace.manifest import Manifest
from .workspace.packed import PackedFiles
from .workspace.stat_cache import pack_manifest, unpack_stat_cache


def _read_manifest(value: object) -> Mapping[str, str]:
    """Take `file_manifest` as stored: packed (v4) or `{path: sha256}` (older, and events)."""
    if isinstance(value, PackedFiles):
        return value
    if isinstance(value, dict):
        if value.keys() == {"paths", "sha256"}:  # (two files of those names: the log rebuilds)
            return PackedFiles.decode(value["paths"], value["sha256"])
        if set(map(type, value)) | set(map(type, value.values())) <= {str}:  # checked in C
            return value
    raise ValueError("file_manifest must map each path to its sha256, or pack them")


def _write_manifest(value: Mapping[str, str]) -> dict[str, object]:
    packed = PackedFiles.of(value)
    return {"paths": packed.paths, "sha256": packed.digests}


# `{"paths": [...], "sha256": "<64 hex digits per path>"}` on disk: a JSON object of
# 100,000 entries cost ~32 ms to parse at every resume; the list and one string, ~12 ms.
FileManifest = Annotated[
    Mapping[str, str], PlainValidator(_read_manifest), PlainSerializer(_write_manifest)
]


class SessionState(BaseModel):
    """The JSON snapshot of one session: a projection of its log for fast start-up."""

    model_config = ConfigDict(extra="ignore")

    # -- seed schema v3 --
    schema_version: int = SCHEMA_VERSION
    session_id: str
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    agent_spec_path: str | None = None
    file_manifest: FileManifest = Field(default_factory=dict)  # packed since v4
    summary: str | None = None
    decisions: list[str] = Field(default_factory=list)
    recent_messages: list[dict[str, Any]] = Field(default_factory=list)
    compacted_history_summary: str | None = None
    checkpoint_count: int = 0
    phase: str | None = None
    # -- additive extensions --
    last_seq: int = -1
    log_offset: int = 0
    turns: int = 0
    title: str | None = None
    parent_session_id: str | None = None
    fork_boundary: int | None = None
    instance_id: str | None = None
    workspace_root: str | None = None
    persistence: Persistence = "full"
    file_stats: dict[str, tuple[int, int, int]] = Field(default_factory=dict)  # older snapshots
    stat_cache: str | None = None  # the stat cache, packed (workspace/stat_cache.py)
    dir_stats: dict[str, int] = Field(default_factory=dict)
    tracked_patterns: list[str] = Field(default_factory=list)
    manifest_recorded_ns: int = 0
    summary_covers_seq: int = -1  # the last event the running summary covers
    summary_turns: int = 0  # the turns it covers

    @field_validator("session_id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not SESSION_ID_RE.fullmatch(value):
            raise ValueError("session_id must be 12 lowercase hex characters")
        return value

    @field_validator("parent_session_id")
    @classmethod
    def _check_parent(cls, value: str | None) -> str | None:
        if value is not None and not SESSION_ID_RE.fullmatch(value):
            raise ValueError("parent_session_id must be 12 lowercase hex characters")
        return value


class FutureSchemaError(Exception):
    """A snapshot written by a newer version: open read-only, never overwrite."""


def migrate_snapshot(raw: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Upgrade a raw snapshot dict to schema v4; return it and the version it had."""
    version = raw.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"schema_version must be a positive integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise FutureSchemaError(
            f"snapshot has schema_version {version}; this agent-assist understands up to "
            f"{SCHEMA_VERSION}. Opened read-only; upgrade agent-assist to write it."
        )
    data = dict(raw)
    if version < 2:  # v1: ids, timestamps, spec path and manifest only
        data.setdefault("summary", None)
        data.setdefault("decisions", [])
        data.setdefault("checkpoint_count", 0)
    if version < 3:  # v2 had no compacted tail and no phase
        data.setdefault("recent_messages", [])
        data.setdefault("compacted_history_summary", None)
        data.setdefault("phase", None)
    # v3 → v4: `file_manifest` is packed; a v3 `{path: sha256}` is read as it is.
    data["schema_version"] = SCHEMA_VERSION
    return data, version


def merge_decisions(old: list[str], new: list[str]) -> list[str]:
    """Return `old` then the decisions of `new` not already in it (compared loosely)."""
    seen = {" ".join(d.lower().split()).rstrip(".") for d in old}
    merged = list(old)
    for decision in new:
        key = " ".join(decision.lower().split()).rstrip(".")
        if key and key not in seen:
            seen.add(key)
            merged.append(decision.strip())
    return merged


def apply_event_to_state(state: SessionState, event: Event) -> None:
    """Fold one event into the snapshot's metadata (the snapshot is a projection)."""
    state.last_seq = event.seq
    state.updated_at = event.ts
    if isinstance(event, TurnStartEvent):
        if event.turn is not None and event.turn > state.turns:
            state.turns = event.turn
        if state.title is None and event.data.input.strip():
            state.title = " ".join(event.data.input.split())[:TITLE_CHARS]
    elif isinstance(event, DecisionEvent):
        state.decisions = merge_decisions(state.decisions, [event.data.text])
    elif isinstance(event, PhaseEvent):
        state.phase = event.data.phase
    elif isinstance(event, CompactEvent):
        state.compacted_history_summary = event.data.summary
        if state.summary_covers_seq < event.data.covers_seq:  # no running summary covers more
            state.summary = event.data.summary
        state.decisions = merge_decisions(state.decisions, event.data.decisions)
    elif isinstance(event, SummaryEvent):
        state.summary = event.data.summary
        state.summary_covers_seq = event.data.covers_seq
        state.summary_turns = event.data.turns
        state.decisions = merge_decisions(state.decisions, event.data.decisions)
    elif isinstance(event, SaveEvent):
        state.checkpoint_count = max(state.checkpoint_count, event.data.checkpoint)
        state.file_manifest = dict(event.data.manifest)
    elif isinstance(event, SessionStartEvent):
        state.parent_session_id = event.data.parent_session_id
        state.fork_boundary = event.data.fork_boundary
        state.persistence = event.data.persistence
        if event.data.manifest and not state.file_manifest:
            state.file_manifest = dict(event.data.manifest)


def state_from_events(session_id: str, events: list[Event]) -> SessionState:
    """Rebuild a snapshot from the log alone (when the snapshot is missing or stale)."""
    state = SessionState(session_id=session_id)
    if events:
        state.created_at = events[0].ts
    for event in events:
        apply_event_to_state(state, event)
    return state


def recorded_manifest(state: SessionState) -> Manifest:
    """Return the manifest the snapshot recorded (the drift baseline), with its stat cache.

    A stat cache that does not fit the manifest (edited, or from another version) is not
    used: every file is then hashed, as on a first check.
    """
    patterns = tuple(state.tracked_patterns)
    files, dirs = state.file_manifest, state.dir_stats
    manifest = Manifest(dirs=dict(dirs), recorded_ns=state.manifest_recorded_ns, patterns=patterns)
    cache = None
    if state.stat_cache is not None:
        cache = unpack_stat_cache(state.stat_cache, files, dirs, manifest.recorded_ns, patterns)
    if cache is not None:
        manifest.listing, manifest.orphans = cache.listing, cache.orphans
        return manifest.layer_over(files, cache.stats)
    if state.stat_cache is None:  # a snapshot from before the packed cache
        return manifest.layer_over(files, state.file_stats)
    return manifest.layer_over(files, {})


def record_manifest(state: SessionState, manifest: Manifest) -> None:
    """Record `manifest` and its stat cache (packed) in the snapshot (the drift baseline)."""
    state.file_manifest, state.stat_cache = pack_manifest(manifest)
    state.file_stats = {}
    state.dir_stats = dict(manifest.dirs)
    state.tracked_patterns = list(manifest.patterns)
    state.manifest_recorded_ns = manifest.recorded_ns
