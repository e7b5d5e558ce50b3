"""Token usage over a turn's model calls, as the server reported it or estimated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from session.derive.messages import estimate_tokens


@dataclass
class UsageTally:
    """Token usage over a turn's model calls; estimated where the server sent none."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    estimated: bool = False

    def add(
        self, usage: Any, prompt_estimate: Callable[[], int], response: dict[str, Any]
    ) -> dict[str, Any]:
        """Count one model call; return its usage as recorded in `step/end`.

        `prompt_estimate` is only called when the server sent no usage (it walks the history).
        """
        step: dict[str, Any] = {
            "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
            "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
        }
        if not step["input_tokens"] and not step["output_tokens"]:
            # llama.cpp's servers (and some proxies) send no usage in a stream.
            step = {
                "input_tokens": prompt_estimate(),
                "output_tokens": estimate_tokens(response),
                "estimated": True,
            }
            self.estimated = True
        self.input_tokens += step["input_tokens"]
        self.output_tokens += step["output_tokens"]
        self.requests += 1
        return step

    def result(self) -> dict[str, Any]:
        """Return the usage of a `ChatResult`."""
        out: dict[str, Any] = {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "requests": self.requests,
        }
        if self.estimated:
            out["estimated"] = True
        return out
