"""`initializationOptions`: the contract's name for the options `engine/options.py` declares.

They are declared there once (defaults, bounds, environment fallbacks) and read leniently
by the server (`engine/options_reading.py`); the generator writes the schema from them.
"""

from __future__ import annotations

from engine.options import InitializationOptions, McpServerOptions, ModelOptions, ToolsOptions

__all__ = ["InitializationOptions", "McpServerOptions", "ModelOptions", "ToolsOptions"]
