"""The model edge: the agent and its tools, one recorded attempt, the HTTP transport, faults.

`runner.py` runs attempts (`ChatRunner`), `tools.py` holds the tools and what they act on,
`build.py` builds the pydantic-ai agent (imported on the first chat only), `transport.py`
is the HTTP client that tells a finished stream from a cut one, `faults.py` classifies what
an attempt raised (retry, heal an overflow, or report).
"""
