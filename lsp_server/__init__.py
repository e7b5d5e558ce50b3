"""The LSP edge of agent-assist: thin handlers over `session/`."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agent-assist")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0"
