"""The files of one project directory: logs, snapshots, pointers and locks; the store interface.

- `backend`: `SessionStore` and `SessionLog`, what any session store does (the local one
  here, PostgreSQL's in `session/pg/backend.py`);
- `local`: `LocalSessionStore`, the name of the local one (`SessionManager`);
- `layout`: `ProjectLayout`, where a project's files live, checked before use;
- `manager`: `SessionManager`, the project's pointers and locks, and the ways a session is
  created, opened, listed and deleted;
- `session`: `Session`, an open session (its snapshot state, log and history);
- `opening`: a session opened from its snapshot and the log after it, or rebuilt;
- `snapshots`: the snapshot files, read, checked against the log and written;
- `listing`: the session listing and the time of a log's last event.
"""
