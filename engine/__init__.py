"""The engine: what a turn is, for every edge (LSP, ACP) alike.

`core.Engine` holds one session's configuration, lifecycle, model runner and turn lock;
`turns.TurnEngine` runs a turn (queue, recording, the work after it) and `attempts` its
attempts (retries, healing); `messages` words a failure and `errors` carries it to the user;
`compaction`, `summaries`, `model_server` and `indexing` are the history operations and
background work a turn relies on (each part sees the engine as `view.EngineView`, never
`core`); `config` parses the options (`option_names` names one as the user set it;
`mcp_config` and `mcp_shape` the MCP servers); `model/` is the model and its tools. An edge
implements `host.Host` (how to tell the user something, run background work, apply an
edit) and a `model.runner.TurnSink` (how a running turn is shown), and translates its
protocol. Nothing here imports an edge, pygls, lsprotocol or acp.
"""
