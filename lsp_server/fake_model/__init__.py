"""A scriptable OpenAI Chat Completions server on 127.0.0.1, for tests and the offline demo.

`replies.py` is the script format, `script.py` what is answered and recorded, `handler.py`
the HTTP and SSE side, `server.py` the thread it runs in; `python -m lsp_server.fake_model`
serves it from a process of its own.
"""

from .replies import Reply, load_script, parse_reply
from .script import RecordedRequest
from .server import FakeOpenAI

__all__ = ["FakeOpenAI", "RecordedRequest", "Reply", "load_script", "parse_reply"]
