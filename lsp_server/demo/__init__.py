"""`agent-assist demo`: the whole flow, offline, through the real server.

`command.py` parses the arguments, `flow.py` runs and narrates the steps, `script.py` holds
the demo project and the demo model's replies, `narration.py` prints, `store_view.py` reads
what happened back from the store.
"""
