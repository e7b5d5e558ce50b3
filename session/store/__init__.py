"""The files of one project directory: logs, snapshots, pointers and locks; the store interface.

- `backend`: `SessionStore`, `SessionLog` and `StoreSearch`, what any session store does
  (the local one here, PostgreSQL's in `session/pg/backend.py`);
- `choose`: `open_store`, the store `initializationOptions.store` / `AGENT_ASSIST_STORE` names;
- `layout`: `ProjectLayout`, where a project's files live, checked before use;
- `projects`: which directory under `projects/` holds a project, found by its identity;
- `manager`: `SessionManager`, the project's pointers and locks, and the ways a session is
  created, opened, listed and deleted;
- `pointers`: the pointers of editor instances named after their process, and the stale ones;
- `locks`: a session's writer lock, an `flock` on `sessions/<id>.lock`, gone when let go;
- `session`: `Session`, an open session (its snapshot state, log and history);
- `restore`: the one restore of a session from its snapshot and the events after it (or
  from every event), and the one parse of a stored snapshot, both stores';
- `opening`: a local session opened from its snapshot and the log after it, or rebuilt;
- `snapshots`: the snapshot files, read, checked against the log and written;
- `snapshot_file`: the session file `sessions/<id>.json` as the seed defines it, and its
  manifest cache;
- `checkpoint_files`: `CheckpointFiles`, checkpoint records and blobs as the project's files;
- `local_search`: `LocalSearch`, the search over the project's index, caught up first;
- `fork_source`: what a fork copies from a session's log, byte for byte;
- `listing`: the session listing and the time of a log's last event;
- `listing_index`: the session list as a projection, refreshed only where files changed;
- `listing_db`: its file `listing.sqlite`, opened, checked and written;
- `listing_files`: the files a listing row is computed from, and the rows' conversions;
- `every_project`: every project's sessions at once (`session/list` without `cwd`);
- `importing`: the local store as either side of a transfer (`session/transfer.py`);
- `seed_store`: the seed's own store, its sessions of this project found, listed and copied.
"""
