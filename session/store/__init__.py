"""The store interface, and what both stores share.

The stores themselves are `session/local/` (files on this machine, the default) and
`session/pg/` (PostgreSQL).

- `backend`: `SessionStore` and `StoreSearch`, what any session store does;
- `projects`: `StoreProjects`, one project of a store or every one, read (`--all-projects`,
  the MCP server, ACP's `session/list` without `cwd`);
- `choose`: `open_store`, the store `initializationOptions.store` / `AGENT_ASSIST_STORE` names,
  and the store's projects, transfer side and seed import: the one module outside the two
  stores that names their classes;
- `session`: `Session`, an open session (its snapshot state, log and history), and
  `SessionLog`, the store's writing end it appends through;
- `restore`: the one restore of a session from its snapshot and the events after it (or
  from every event), and the one parse of a stored snapshot, both stores';
- `rows`: a listed session (`SessionInfo`, `ListedRow`) and the times of both;
- `editor`: the editor process an instance without an `instanceId` is named after;
- `seed_store`: the seed's own store, its sessions of this project found, listed, and
  imported through a store's importer.
"""
