"""The local store: one project's sessions as files under the store root, on this machine.

Beside PostgreSQL's (`session/pg/`), both behind `session/store/backend.py`'s interface.

- `manager`: `SessionManager`, the local `SessionStore`: creates, opens, saves, lists and
  deletes a project's sessions, with its pointers and locks;
- `layout`: `ProjectLayout`, where a project's files live, checked before use;
- `project_listing`: `ProjectListing`, a project's pages, the sessions in use and the writer
  lock the listing notes;
- `projects`: which directory under `projects/` holds a project, found by its identity;
- `catalog`: every project of the store, the workspace each recorded, their pointer files;
- `scope`: `LocalProjects`, one project or every one, read (`StoreProjects`);
- `diagnosis`: `doctor`'s checks of the files: the root, each session, pointer and index;
- `pointers`: the pointers of editor instances named after their process, and the stale ones;
- `locks`: a session's writer lock, an `flock` on `sessions/<id>.lock`, gone when let go;
- `opening`: a session opened from its snapshot and the log after it, or rebuilt;
- `snapshots`: the snapshot files, read, checked against the log and written;
- `deleting`: a session's files deleted, with the pointers naming it;
- `snapshot_file`: the session file `sessions/<id>.json` as the seed defines it, and its
  manifest cache;
- `checkpoint_files`: `CheckpointFiles`, checkpoint records and blobs as the project's files;
- `local_search`: `LocalSearch`, the search over the project's index, caught up first;
- `fork_source`: what a fork copies from a session's log, byte for byte;
- `listing`: a session's listed fields from its snapshot or log, and a log's last event time;
- `listing_index`: the session list as a projection, refreshed only where files changed;
- `listing_db`: its file `listing.sqlite`, opened, checked and written;
- `listing_files`: the files a listing row is computed from;
- `importing`: the local store as either side of a transfer (`session/transfer.py`);
- `seed_import`: a seed's session copied in as our session file.
"""
