"""Noticing a model server that cut the prompt without saying so.

Ollama answers a prompt over its context length (`num_ctx`, `OLLAMA_CONTEXT_LENGTH`; 2,048
or 4,096 tokens unless set) with a normal reply, having dropped the oldest part of the
prompt (recent versions keep only half the window). The only trace is the prompt's token
count in the usage it reports. `CutWatch` compares that count with our estimate of what
was sent (4 bytes a token, see `estimate_tokens`), per request:

- **far below**: the server counted less than half of the estimate, and at least
  `MIN_GAP` tokens less;
- **stopped growing**: since the previous request the estimate grew by `MIN_GROWTH` tokens
  or more, and the count by less than a quarter of that (a prompt that grew cannot have
  lost tokens; the old Ollama cut every prompt to exactly the window).

Text tokenizes at 3–5 bytes a token for prose and code, and at fewer bytes for ideographs
(more tokens than estimated): both rules keep a margin of two or more over that. Requests
whose usage the server did not send (llama.cpp's servers in a stream) are not judged.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_GAP = 1_024  # tokens the server must have counted fewer than estimated (far below)
MIN_GROWTH = 512  # estimated tokens a prompt must have grown by (stopped growing)


class PromptCutError(Exception):
    """The server counted far fewer prompt tokens than were sent: it cut the prompt."""

    def __init__(self, counted: int, estimate: int) -> None:
        super().__init__(
            f"the model server read only {counted:,} tokens of a prompt of about "
            f"{estimate:,}: it cut the rest without an error (as Ollama does with a prompt "
            "over its context length)"
        )
        self.counted = counted
        self.estimate = estimate


@dataclass
class CutWatch:
    """Judges each request's reported prompt tokens against the estimate (module docstring)."""

    last: tuple[int, int] | None = None  # (estimate, counted) of the previous request
    told: bool = False  # the user heard of a cut (once: the window stays lowered after it)

    def check(self, estimate: int, counted: int) -> None:
        """Raise `PromptCutError` if `counted` says the server cut the prompt."""
        last, self.last = self.last, (estimate, counted)
        if counted <= 0:  # no count: nothing to judge
            return
        if estimate - counted >= MIN_GAP and 2 * counted < estimate:
            raise PromptCutError(counted, estimate)
        if last is not None and last[1] > 0:
            grown = estimate - last[0]
            if grown >= MIN_GROWTH and 4 * (counted - last[1]) < grown:
                raise PromptCutError(counted, estimate)
