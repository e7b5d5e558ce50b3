"""The event log `<id>.events.jsonl`, each session's source of truth.

`reader` parses and scans it (torn and bad lines reported, never repaired by reading);
`writer` appends to it (`EventLog`).
"""
