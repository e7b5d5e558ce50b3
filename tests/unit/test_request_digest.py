"""The request digest: canonical, redacted like the log, taken of the body as it is sent."""

from __future__ import annotations

import asyncio
import json

import httpx2

from engine.model.quirks import ServerQuirks
from engine.model.request_digest import SentBodies, canonical, digest
from engine.model.transport import CompletionCheckTransport
from session.redaction import REDACTED, Redactor

KEY = "sk-proj-" + "Z3k8" * 10  # secret-looking: any redactor scrubs it
CONFIGURED = "hunter2-configured"  # a configured secret: only the session's redactor knows it


def body(text: str, **extra: object) -> bytes:
    return json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    ).encode()


def test_the_digest_is_of_canonical_json_whatever_the_spacing_and_key_order() -> None:
    a = b'{"model": "m", "stream": true, "messages": [{"content": "hi", "role": "user"}]}'
    b = b'{"messages":[{"role":"user","content":"hi"}],"stream":true,"model":"m"}'
    assert digest(canonical(a)) == digest(canonical(b))
    assert digest(canonical(a)) != digest(canonical(b.replace(b"hi", b"ho")))


def test_a_secret_sent_digests_as_the_redacted_text_the_log_holds() -> None:
    session = Redactor([CONFIGURED])
    sent = body(f"key {KEY} and {CONFIGURED}")
    logged = session.scrub({"text": f"key {KEY} and {CONFIGURED}"})["text"]
    assert KEY not in logged and CONFIGURED not in logged and REDACTED in logged
    # Rebuilt from the log, the body is scrubbed again by a redactor without the secrets.
    assert digest(canonical(sent, session)) == digest(canonical(body(logged)))
    assert KEY not in json.dumps(canonical(sent, session))


def test_the_body_kept_is_the_one_on_the_wire_after_the_quirks_changes() -> None:
    sent = SentBodies()
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    payload = json.dumps({"model": "m", "messages": [call]}).encode()
    seen: list[bytes] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content)
        return httpx2.Response(200, json={})

    transport = CompletionCheckTransport(
        httpx2.MockTransport(answer), ServerQuirks(blank_tool_text=True), on_send=sent.keep
    )

    async def post() -> None:
        async with httpx2.AsyncClient(transport=transport) as client:
            await client.post("http://model.test/v1/chat/completions", content=payload)

    asyncio.run(post())
    kept = sent.take()
    assert kept is not None and kept == seen[0]
    assert json.loads(kept)["messages"][0]["content"] == ""  # changed before it was sent
    assert sent.take() is None  # taken once
