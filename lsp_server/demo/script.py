"""The demo's project and script: its files, what the user types, the demo model's replies.

The replies come in the order the server asks for them.
"""

from __future__ import annotations

from typing import Any

INSTANCE = "demo-terminal"
SPEC = """# Support agent

Answers billing questions politely and briefly.

## Tools
- lookup_invoice(number)
"""
SPEC_EDIT = """
## Escalation
Refunds over 100 EUR go to a human.
"""
REPLY_TEMPLATE = "Dear {name},\n\n{answer}\n\nBest regards,\nSupport\n"
GREETING_V1 = "Hello {name}, thanks for contacting support!\n"
GREETING_V2 = "Hello {name}, thanks for contacting support! Refunds over 100 EUR: a human helps.\n"

QUESTIONS = (
    "What does agent_spec.md describe?",
    "Add a one-line greeting template as templates/greeting.txt.",
    "I edited the spec. Please update the greeting so it mentions refunds.",
)


def demo_script() -> list[Any]:
    """Return the demo model's replies, in the order the server will ask for them."""
    stream = {"chunk": 10, "delay": 0.02}
    return [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "agent_spec.md"}}]},
        {
            "text": "It describes a **support agent** that answers billing questions politely "
            "and briefly, with one tool: `lookup_invoice(number)`.",
            **stream,
        },
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "templates/greeting.txt", "content": GREETING_V1},
                }
            ]
        },
        {"text": "Done: `templates/greeting.txt` now holds a one-line greeting.", **stream},
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "arguments": {"path": "templates/greeting.txt", "content": GREETING_V2},
                }
            ]
        },
        {"text": "Updated the greeting: it now says that a human handles big refunds.", **stream},
    ]


def demo_summaries() -> list[Any]:
    """Return the demo model's answers to the background session-summary requests."""
    summary = (
        "The user is designing a billing support agent (agent_spec.md: polite, brief, one "
        "tool lookup_invoice). Agent Assist read the spec and wrote templates/greeting.txt, "
        "a one-line greeting."
    )
    decisions = ["Keep replies polite and brief", "Greet customers from templates/greeting.txt"]
    reply = {
        "tool_calls": [
            {"name": "final_result", "arguments": {"summary": summary, "decisions": decisions}}
        ]
    }
    return [reply] * 4
