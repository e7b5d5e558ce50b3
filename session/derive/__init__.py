"""Projections of the log that the model and the editors see.

Messages are handled in pydantic-ai's JSON form (`{"kind": "request"|"response", "parts":
[...]}`), so nothing here imports pydantic-ai except `model_messages`, lazily.

- `messages`: the JSON messages and the rules that keep a history a valid request
  (sanitizing, token estimates, trimming at turn starts);
- `history`: `HistoryBuilder`, the message history folded from events;
- `model_messages`: conversion to pydantic-ai objects, with a cache;
- `transcript`: the chat as the user saw it;
- `steps`: a session's turns, each with its model calls, as the log has them;
- `stats`: telemetry folded from the logs (turns, steps, tools, tokens, model time, retries).
"""
