"""The LSP edge of agent-assist: thin handlers over `engine/` and `session/`."""

# Kept equal to pyproject.toml's version by tests/unit/test_version.py. Not read through
# importlib.metadata: importing it costs ~90 ms of every server start.
__version__ = "0.1.0"
