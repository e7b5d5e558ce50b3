"""The repo's scripted OpenAI-compatible model, plus a JSON file of every request it received.

Usage: python test/fake_model.py SCRIPT.json REQUESTS.json  (run with the repo root on PYTHONPATH).
Prints the base URL on the first stdout line, like `python -m lsp_server.fake_model`.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from lsp_server.fake_model import FakeOpenAI, load_script


def main() -> int:
    """Serve until SIGTERM, rewriting the requests file whenever a request arrives."""
    script, record = sys.argv[1], Path(sys.argv[2])
    replies, label = load_script(script)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with FakeOpenAI(replies, label=label) as fake:
        print(fake.base_url, flush=True)  # noqa: T201
        written = -1
        while not done.wait(0.05):
            requests = fake.requests
            if len(requests) != written:
                tmp = record.with_suffix(".tmp")
                bodies = [
                    {**r.body, "authorization": r.headers.get("authorization")} for r in requests
                ]
                tmp.write_text(json.dumps(bodies), encoding="utf-8")
                tmp.replace(record)
                written = len(requests)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
