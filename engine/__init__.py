"""The engine: what a turn is, for every edge (LSP, ACP) alike.

`core.Engine` holds one session's configuration, lifecycle, model runner and turn lock;
`turns.TurnEngine` runs a turn (queue, attempts, retries, healing, recording, the work
after it); `compaction`, `summaries` and `model_server` are the history operations and
background work a turn relies on; `model/` is the model and its tools. An edge implements
`host.Host` (how to tell the user something, run background work, apply an edit) and a
`model.runner.TurnSink` (how a running turn is shown), and translates its protocol.
Nothing here imports an edge, pygls, lsprotocol or acp.
"""
