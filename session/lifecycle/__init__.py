"""One editor instance's session: its transitions, what is recorded into it, its turns.

- `values`: the settings the lifecycle is given and the results it returns;
- `transitions`: which session the instance holds (fresh, resume, decline, adopt, new,
  reset, save on exit) and a store that refuses writes;
- `previous`: which session an instance is offered to resume;
- `recording`: `SessionLifecycle`, those transitions plus what is recorded into the
  current session (turns, decisions, drift, checkpoints, compaction, summaries);
- `turns`: `TurnRecorder`, the events of one turn as they happen;
- `changes`: the `FileChange`s a session records (a tool's write, a restore's, a drift's);
- `offline`: a resume while a shared store is away (a cached session continued in a new one).

The package's face is `SessionLifecycle` and the values it takes and returns.
"""

from .recording import SessionLifecycle
from .turns import TurnRecorder
from .values import LifecycleConfig, PreviousSession, ResetResult, SaveResult

__all__ = [
    "LifecycleConfig",
    "PreviousSession",
    "ResetResult",
    "SaveResult",
    "SessionLifecycle",
    "TurnRecorder",
]
