"""Secrets never reach disk; metadata mode keeps structure but drops content."""

from __future__ import annotations

import pytest

from session.redaction import REDACTED, Redactor, content_placeholder


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "xoxb-1234567890-abcdefghij",
        "AKIAABCDEFGHIJKLMNOP",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    ],
)
def test_secret_looking_strings_are_redacted(secret: str) -> None:
    scrubbed = Redactor().scrub_text(f"before {secret} after")
    assert secret not in scrubbed and REDACTED in scrubbed
    assert scrubbed.startswith("before ") and scrubbed.endswith(" after")


def test_bearer_and_assignments_keep_their_prefix() -> None:
    r = Redactor()
    assert (
        r.scrub_text("Authorization: Bearer abcdefghijklmnop.qrs") == f"Authorization: {REDACTED}"
    )
    assert r.scrub_text('api_key = "hunter2hunter2"') == f"api_key = {REDACTED}"
    assert r.scrub_text("password: s3cretpass") == f"password: {REDACTED}"


def test_configured_key_is_redacted_anywhere() -> None:
    r = Redactor(["plain-looking-key-42"])
    assert r.scrub({"a": ["x plain-looking-key-42 y"]}) == {"a": [f"x {REDACTED} y"]}


def test_ordinary_text_is_untouched() -> None:
    text = "The token budget and the key decisions: use REST; password policy TBD."
    assert Redactor().scrub_text(text) == text


def test_metadata_mode_drops_content_but_keeps_structure() -> None:
    r = Redactor(metadata_only=True)
    data = {
        "messages": [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "hi"}]}],
        "tool_call_id": "c1",
        "name": "read_file",
        "args": {"path": "secret/plan.md"},
    }
    out = r.scrub(data)
    part = out["messages"][0]["parts"][0]
    assert part["part_kind"] == "user-prompt" and out["messages"][0]["kind"] == "request"
    assert part["content"] == content_placeholder("hi")
    assert out["args"]["path"].startswith("[not persisted: sha256:")
    assert out["name"] == "read_file" and out["tool_call_id"] == "c1"
