"""`agent-assist sessions …` and `agent-assist doctor`: the store, read (and pruned) directly.

`command.py` parses the arguments; `sessions.py` (list, show, export), `deletion.py` (rm,
prune), `search.py` (search, reindex) and `doctor.py` run them; `targets.py` picks the
project and session, `dump.py` reads a session, `transcript.py` renders it, `output.py`
prints, `running.py` maps errors to exit codes. The store is the server's choice (`--store`,
else `AGENT_ASSIST_STORE`), the local files or PostgreSQL, opened by
`session.store.choose` and read through its interface: one project's `SessionStore`
(`targets.project_store`), or with `--all-projects` the `StoreProjects` of every project
(`targets.projects`). `doctor` has each store check itself (`session/local/diagnosis.py`,
`doctor_database.py`).
"""
